"""The group explorer's tabs: the advantage a trainer recorded beside the recomputed one, with
the audit's word per step; the trajectory's tokens coloured by credit in the Step text tab."""

import numpy as np

from tests.app.builders import app_test, shown, texts, token_spans, write_recorded_table
from tests.app.explorer.pages import steps_table


def test_the_recorded_advantage_is_shown_beside_the_recomputed_one(tmp_path):
    at = app_test("group", ["--log", str(write_recorded_table(tmp_path / "rec.jsonl"))])
    assert not at.exception
    table = steps_table(at)
    columns = list(table.columns)
    at_a = columns.index("A")
    assert columns[at_a + 1: at_a + 3] == ["recorded (trainer)", "audit"]
    zeroed = table[table["audit"] == "zeroed"]
    assert len(zeroed) == 1 and zeroed["recorded (trainer)"].iloc[0] == 0.0
    assert abs(zeroed["A"].iloc[0]) > 0.1
    unrecorded = table["recorded (trainer)"].isna()
    assert unrecorded.sum() == 3 and (table.loc[unrecorded, "audit"] == "").all()
    same = table[~unrecorded & (table["audit"] == "matches")]
    assert len(same) == len(table) - 4
    np.testing.assert_allclose(same["recorded (trainer)"], same["A"], atol=1e-6)
    text = shown(texts(at))
    assert "**Recorded advantage** (the trainer's, audited against g2po's recomputation): 1 " \
           "step(s) recorded as 0 where g2po gives credit (1 of 10 recorded steps differ" in text
    assert "recorded (trainer): the advantage the log's trainer recorded" in text
    # on demand, which estimator explains the recorded values (a few hundred estimator runs)
    assert "closest:" not in text
    at.button(key="g_recorded_fit").click().run()
    assert not at.exception
    assert "no registered estimator explains it (closest: g2po(" in shown(texts(at))
    assert not [b for b in at.button if b.key == "g_recorded_fit"]
    # the Step text tab: the trajectory's tokens, coloured by G2PO's or the recorded credit
    at.session_state["g_tab"] = "Step text"
    at.run()
    assert not at.exception
    assert at.radio(key="g_tokens:mug-task:0:by").options[0] == "advantage"
    assert at.selectbox(key="g_tokens:mug-task:0:credit").options == ["g2po",
                                                                      "recorded (trainer)"]
    body = next(h.proto.body for h in at.get("html") if "<span" in h.proto.body)
    assert token_spans(body) and "A = " in body  # one header per step, with its A
    at.selectbox(key="g_tokens:mug-task:0:credit").select_index(1).run()
    assert not at.exception
    assert "under recorded (trainer)" in next(h.proto.body for h in at.get("html")
                                              if "<span" in h.proto.body)


def test_a_log_without_a_recorded_advantage_shows_none_of_it(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    assert "recorded (trainer)" not in steps_table(at).columns
    assert "Recorded advantage" not in texts(at)
    at.session_state["g_tab"] = "Step text"
    at.run()
    (credit,) = [b for b in at.selectbox if (b.key or "").startswith("g_tokens:")]
    assert credit.options == ["g2po"] and credit.disabled
