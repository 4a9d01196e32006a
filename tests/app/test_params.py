import pytest

from app.params import SpecParams
from g2po.analysis.state_graph import state_graph
from g2po.errors import UnknownStateKeyError
from g2po.outcomes import OutcomeRule
from tests.g2po.builders import THREE, trajectories


def test_defaults_match_the_reference_and_feed_state_graph():
    p = SpecParams()
    assert p.g2po_kwargs() == {"gamma": 0.95, "w": 1.0, "mode": "mean_std_norm",
                               "penalty": 0.1, "success_reward": 10.0, "terminal": "binary",
                               "state_key": "exact", "success_threshold": None}
    assert p.graph_kwargs() == {**p.g2po_kwargs(), "truncate_at": None}


def test_the_rule_is_one_value_its_fields_are_derived_from():
    rule = OutcomeRule(success_reward=1.0, success_threshold=0.5, terminal="reward",
                       truncate_at=3)
    p = SpecParams(gamma=0.9, rule=rule)
    assert p.rule is rule
    assert {k: p.g2po_kwargs()[k] for k in ("success_reward", "success_threshold",
                                            "terminal")} == rule.estimator_kwargs()
    assert p.graph_kwargs()["truncate_at"] == 3
    assert not any(hasattr(p, k) for k in ("success_reward", "success_threshold", "terminal"))
    # the graph takes all of it: the two failures of 3 steps end truncated
    graph = state_graph(trajectories(THREE), rule=p.rule, params=p.g2po())
    assert graph.nodes.loc[graph.nodes["kind"] == "truncated", "visits"].tolist() == [2]


@pytest.mark.parametrize("kwargs", [{"gamma": 0.0}, {"gamma": 1.5}, {"mode": "z"},
                                    {"rule": {"terminal": "x"}}])
def test_bad_values_are_refused(kwargs):
    with pytest.raises(ValueError):
        SpecParams(**kwargs)


def test_bad_state_key_is_refused_early():
    with pytest.raises(UnknownStateKeyError):
        SpecParams(state_key="nope")


def test_for_estimator_passes_only_accepted_parameters():
    p = SpecParams(gamma=0.9, w=0.5, mode="mean_norm", penalty=0.2)
    assert p.for_estimator("grpo") == {}
    assert p.for_estimator("rloo") == {}
    gigpo = p.for_estimator("gigpo")
    assert gigpo == {"gamma": 0.9, "penalty": 0.2}  # GiGPO keeps its own mode
    assert p.for_estimator("g2po")["w"] == 0.5 and p.for_estimator("g2po")["mode"] == "mean_norm"
    assert "w" not in p.for_estimator("g2po_nc")
    # GraphGPO's γ is a per-distance-step discount (default 0.1): the sidebar's γ is not it
    assert p.for_estimator("graphgpo") == {"penalty": 0.2, "success_reward": 10.0,
                                           "success_threshold": None}
    # the success rule reaches every estimator that has one
    ruled = SpecParams(rule=OutcomeRule(success_threshold=0.5))
    for name in ("g2po", "g2po_ec", "graphgpo", "graphhca", "value_iteration", "graph_gae"):
        assert ruled.for_estimator(name)["success_threshold"] == 0.5, name
    assert "success_threshold" not in ruled.for_estimator("grpo")
    assert p.for_estimator("value_iteration")["gamma"] == 0.9
