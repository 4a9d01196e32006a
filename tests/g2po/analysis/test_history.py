import numpy as np
import pandas as pd
import pytest

from g2po.analysis.history import (
    NO_NAMESPACE,
    metric_namespaces,
    metric_series,
    namespace_of,
    smooth,
    state_history,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.app.builders import group_steps


def test_namespaces_keep_scalars_only():
    frame = pd.DataFrame({"train_step": [1, 2], "actor/pg_loss": [0.1, 0.2],
                          "actor/kl": [None, 0.3], "val-core/tw/acc": [0.5, None],
                          "timing_s/gen": [1, 2], "flag": [True, False], "lr": [1e-6, 1e-6],
                          "note": ["a", "b"], "hist": [[1, 2], [3]], "nan/only": [np.nan] * 2,
                          "_timestamp": [1.7e9, 1.7e9 + 5]})  # the logger's own: no metric
    groups = metric_namespaces(frame)
    assert list(groups) == ["actor", "timing_s", "val-core", NO_NAMESPACE]
    assert groups["actor"] == ["actor/kl", "actor/pg_loss"]
    assert groups[NO_NAMESPACE] == ["flag", "lr"]
    assert namespace_of("adv/ec/std") == "adv" and namespace_of("/x") == NO_NAMESPACE


def test_smoothing_is_tensorboards_debiased_ema_and_skips_gaps():
    values = np.array([1.0, np.nan, 3.0, 5.0])
    out = smooth(values, 0.5)
    # by hand: acc 0.5 → /0.5 = 1; acc 0.25+1.5=1.75 → /0.75; acc 0.875+2.5=3.375 → /0.875
    np.testing.assert_allclose(out[[0, 2, 3]], [1.0, 1.75 / 0.75, 3.375 / 0.875])
    assert np.isnan(out[1])
    np.testing.assert_array_equal(smooth(values, 0.0), values)
    np.testing.assert_allclose(smooth(np.full(5, 2.0), 0.9), 2.0)  # no pull toward 0
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        smooth(values, 1.0)


def test_metric_series_is_long_and_skips_missing():
    a = pd.DataFrame({"train_step": [2, 1], "m": [4.0, 2.0]})
    b = pd.DataFrame({"train_step": [1, 2, 3], "m": [1.0, None, 3.0], "other": [1, 1, 1]})
    series = metric_series({"a": a, "b": b}, ["m", "other"], smoothing=0.5)
    m = series[series["metric"] == "m"]
    assert m[m["run"] == "a"]["train_step"].tolist() == [1, 2]
    assert m[m["run"] == "b"]["train_step"].tolist() == [1, 3]
    assert set(series[series["metric"] == "other"]["run"]) == {"b"}
    np.testing.assert_allclose(m[m["run"] == "a"]["smoothed"], smooth(np.array([2.0, 4.0]),
                                                                        0.5))
    assert metric_series({"a": a}, ["missing"]).empty


def test_the_band_spans_the_raw_values_the_smoothing_reaches():
    frame = pd.DataFrame({"train_step": [1, 2, 3, 4, 5], "m": [1.0, 5.0, 2.0, 4.0, 3.0]})
    series = metric_series({"a": frame}, ["m"], smoothing=0.75)  # reach: 4 points
    assert series["high"].tolist() == [1.0, 5.0, 5.0, 5.0, 5.0]
    assert series["low"].tolist() == [1.0, 1.0, 1.0, 1.0, 2.0]
    raw = metric_series({"a": frame}, ["m"])  # no smoothing: the band is the value itself
    assert (raw["low"] == raw["value"]).all() and (raw["high"] == raw["value"]).all()


def _steps_per_train_step(n: int = 3) -> pd.DataFrame:
    parts = []
    for step in range(1, n + 1):
        steps = group_steps(seed=step, rows=400)
        parts.append(steps[steps["group_id"] == "task-1"].assign(train_step=step))
    return pd.concat(parts, ignore_index=True)


def test_state_history_equals_each_steps_own_graph():
    steps = _steps_per_train_step()
    key = steps["state_key"].iloc[0]
    history = state_history(steps, key, rule=OutcomeRule(), params=G2POParams(gamma=0.9, w=0.5))
    assert history["train_step"].tolist() == [1, 2, 3]
    for row in history.itertuples():
        group = steps[steps["train_step"] == row.train_step]
        graph = state_graph(group, rule=OutcomeRule(), params=G2POParams(gamma=0.9, w=0.5))
        node = graph.nodes[graph.nodes["canonical_key"] == key]
        at = graph.steps[graph.steps["node"] == node.index[0]]
        assert row.visits == int(node["visits"].iloc[0]) == len(at)
        assert row.value == pytest.approx(node["value"].iloc[0])
        assert row.value_var == pytest.approx(node["value_var"].iloc[0])
        assert row.adv_mean == pytest.approx(at["adv"].mean())
        assert row.adv_nc_mean == pytest.approx(at["adv_nc"].mean())
        assert row.traj_share == pytest.approx(at["traj_id"].nunique() /
                                               group["traj_id"].nunique())


def test_a_state_not_reached_at_a_step_has_zero_visits_and_no_numbers():
    steps = _steps_per_train_step(2)
    key = steps["state_key"].iloc[0]
    second = (steps["train_step"] == 2).to_numpy()
    steps.loc[second & (steps["state_key"] == key).to_numpy(), "state_key"] = "elsewhere"
    history = state_history(steps, key, rule=OutcomeRule())
    reached = history.set_index("train_step")
    assert reached.loc[1, "visits"] > 0 and reached.loc[2, "visits"] == 0
    assert np.isnan(reached.loc[2, "value"]) and np.isnan(reached.loc[2, "adv_mean"])
    assert state_history(steps.iloc[:0], key, rule=OutcomeRule()).empty


@pytest.mark.parametrize("strategy", ["exact", "normalized", "regex:^task \\\\d+ room \\\\d+",
                                      "similarity:0.95"])
def test_coded_history_equals_the_text_one(strategy):
    from g2po.state_keys import resolve_state_key

    steps = _steps_per_train_step()
    steps["state_key"] = np.where(np.arange(len(steps)) % 2, steps["state_key"].str.upper(),
                                  steps["state_key"])
    key = str(resolve_state_key(strategy)(steps["state_key"].iloc[:1],
                                          np.zeros(1, np.int64)).iloc[0]) \
        if not strategy.startswith("similarity") else steps["state_key"].iloc[0]
    codes, uniques = pd.factorize(steps["state_key"])
    coded = steps.assign(state_key=codes.astype(str))
    expected = state_history(steps, key, rule=OutcomeRule(), params=G2POParams(state_key=strategy))
    got = state_history(
        coded, key, list(uniques), rule=OutcomeRule(), params=G2POParams(state_key=strategy)
    )
    pd.testing.assert_frame_equal(got, expected)
    assert (expected["visits"] > 0).any()


def test_the_state_table_holds_every_state_of_every_step():
    from g2po.analysis.history import history_of, state_table

    steps = _steps_per_train_step()
    table = state_table(steps, rule=OutcomeRule(), params=G2POParams(gamma=0.9))
    for step in (1, 3):
        graph = state_graph(
            steps[steps["train_step"] == step], rule=OutcomeRule(), params=G2POParams(gamma=0.9)
        )
        states = graph.nodes[graph.nodes["kind"] == "state"]
        part = table[table["train_step"] == step].set_index("key")
        assert len(part) == len(states)
        expected = states.set_index("canonical_key")
        assert part["visits"].to_dict() == expected["visits"].to_dict()
        np.testing.assert_allclose(part.loc[expected.index, "value"], expected["value"])
    key = table["key"].iloc[0]
    pd.testing.assert_frame_equal(
        history_of(table, key),
        state_history(steps, key, rule=OutcomeRule(), params=G2POParams(gamma=0.9)),
    )


@pytest.mark.parametrize("strategy", ["exact", "normalized", "regex:^task \\\\d+ room \\\\d+"])
def test_the_coded_state_table_is_the_text_one_keys_included(strategy):
    """Coded keys run the value-wise strategy on the distinct keys alone
    (g2po.state_keys.distinct_key_codes); every row, the canonical key text included, is the
    one of the text table."""
    from g2po.analysis.history import state_table

    steps = _steps_per_train_step()
    steps["state_key"] = np.where(np.arange(len(steps)) % 3, steps["state_key"].str.upper(),
                                  steps["state_key"])
    codes, uniques = pd.factorize(steps["state_key"])
    params = G2POParams(state_key=strategy)
    expected = state_table(steps, rule=OutcomeRule(), params=params)
    got = state_table(steps.assign(state_key=codes.astype(str)), list(uniques),
                      rule=OutcomeRule(), params=params)
    pd.testing.assert_frame_equal(got, expected)
    if strategy == "normalized":  # upper and lower case merged: the keys are the canonical
        assert expected["key"].nunique() < steps["state_key"].nunique()
        assert expected["key"].str.islower().all()
