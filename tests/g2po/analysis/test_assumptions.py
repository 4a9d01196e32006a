from g2po.analysis.assumptions import assumptions, reached

NOTE = "is_action_valid absent: every action assumed valid"


def test_validity_reaches_the_penalised_advantages_only_with_a_penalty():
    (with_p,) = assumptions({"is_action_valid": NOTE}, penalty=0.1)
    assert with_p.note == NOTE and with_p.column == "is_action_valid"
    assert {"is_action_valid", "invalid", "adv", "adv_ep", "adv_nc"} <= with_p.columns
    assert "adv_ec" not in with_p.columns and "td_error" not in with_p.columns
    (no_p,) = assumptions({"is_action_valid": NOTE}, penalty=0.0)
    assert "adv" not in no_p.columns and "is_action_valid" in no_p.columns


def test_reached_picks_the_assumptions_behind_the_columns_shown():
    found = assumptions({"is_action_valid": NOTE, "odd_column": "filled"})
    assert [a.column for a in reached(found, ["adv"])] == ["is_action_valid"]
    assert [a.column for a in reached(found, ["odd_column", "t"])] == ["odd_column"]
    assert reached(found, ["td_error", "node_value"]) == []
    assert assumptions({}) == []
