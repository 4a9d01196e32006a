import pytest

from g2po.analysis.state_graph import state_graph
from g2po.errors import UnknownStateKeyError
from g2po.outcomes import OutcomeRule
from g2po.params import STATE_KEY_CHOICES, G2POParams, state_key_forms
from g2po.state_keys import resolve_state_key, strategy_names
from tests.g2po.builders import THREE, trajectories


def test_defaults_match_the_reference_and_feed_state_graph():
    p = G2POParams()
    assert p.g2po_kwargs(OutcomeRule()) == {
        "gamma": 0.95, "w": 1.0, "mode": "mean_std_norm", "penalty": 0.1,
        "success_reward": 10.0, "terminal": "binary", "state_key": "exact",
        "success_threshold": None}


def test_the_rule_is_one_value_its_fields_are_derived_from():
    rule = OutcomeRule(success_reward=1.0, success_threshold=0.5, terminal="reward",
                       truncate_at=3)
    p = G2POParams(gamma=0.9)
    assert {k: p.g2po_kwargs(rule)[k] for k in ("success_reward", "success_threshold",
                                                "terminal")} == rule.estimator_kwargs()
    assert not any(hasattr(p, k) for k in ("success_reward", "success_threshold", "terminal"))
    # the graph takes all of it: the two failures of 3 steps end truncated
    graph = state_graph(trajectories(THREE), rule=rule, params=p)
    assert graph.nodes.loc[graph.nodes["kind"] == "truncated", "visits"].tolist() == [2]


@pytest.mark.parametrize("kwargs", [{"gamma": 0.0}, {"gamma": 1.5}, {"mode": "z"},
                                    {"w": float("nan")}, {"penalty": "0.1"}, {"gamma": True}])
def test_bad_values_are_refused(kwargs):
    with pytest.raises(ValueError):
        G2POParams(**kwargs)


def test_the_state_key_choices_are_the_strategies_and_each_form_resolves():
    assert list(STATE_KEY_CHOICES) == strategy_names() and "alfworld" in STATE_KEY_CHOICES
    forms = state_key_forms().split(" | ")
    assert len(forms) == len(strategy_names())
    for form in forms:  # each as written, with an example argument
        resolve_state_key(form.replace("PATTERN", "^a").replace("[:THRESHOLD]", ":0.9"))
        G2POParams(state_key=form.replace("PATTERN", "^a").replace("[:THRESHOLD]", ""))


def test_bad_state_key_is_refused_early():
    with pytest.raises(UnknownStateKeyError):
        G2POParams(state_key="nope")


def test_values_from_text_name_the_key_and_the_place():
    base = G2POParams(w=0.5)
    p = G2POParams.from_values({"gamma": "0.9", "mode": "mean_norm"}, base)
    assert (p.gamma, p.w, p.mode) == (0.9, 0.5, "mean_norm")
    assert G2POParams.from_values(p.as_dict()) == p  # a round trip through the names
    with pytest.raises(ValueError, match=r"^-p: gamma must be a number, got 'x'"):
        G2POParams.from_values({"gamma": "x"}, where="-p: ")
    with pytest.raises(ValueError, match="unknown G2PO parameter.*success_reward"):
        G2POParams.from_values({"success_reward": 1})
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\]"):
        G2POParams.from_values({"gamma": "2"})


def test_for_estimator_passes_only_accepted_parameters():
    p = G2POParams(gamma=0.9, w=0.5, mode="mean_norm", penalty=0.2)
    rule = OutcomeRule()
    assert p.for_estimator("grpo", rule) == {}
    assert p.for_estimator("rloo", rule) == {}
    gigpo = p.for_estimator("gigpo", rule)
    assert gigpo == {"gamma": 0.9, "penalty": 0.2}  # GiGPO keeps its own mode
    assert p.for_estimator("g2po", rule)["w"] == 0.5
    assert p.for_estimator("g2po", rule)["mode"] == "mean_norm"
    assert "w" not in p.for_estimator("g2po_nc", rule)
    # GraphGPO's γ is a per-distance-step discount (default 0.1): the sidebar's γ is not it
    assert p.for_estimator("graphgpo", rule) == {"penalty": 0.2, "success_reward": 10.0,
                                                 "success_threshold": None}
    # the success rule reaches every estimator that has one
    ruled = OutcomeRule(success_threshold=0.5)
    for name in ("g2po", "g2po_ec", "graphgpo", "graphhca", "value_iteration", "graph_gae"):
        assert p.for_estimator(name, ruled)["success_threshold"] == 0.5, name
    assert "success_threshold" not in p.for_estimator("grpo", ruled)
    assert p.for_estimator("value_iteration", rule)["gamma"] == 0.9
