from __future__ import annotations

import pandas as pd

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import ALL_FAILED
from tests.g2po.builders import trajectories

EXAMPLES = {"no_signal": (beside_healthy(trajectories(ALL_FAILED, "failed")), OutcomeRule(),
                          ["failed"])}


def test_a_dump_without_validity_says_it_is_unknown_not_that_no_action_was_invalid(tmp_path):
    """Issue 37: on a verl dump without is_action_valid the reason said "no invalid action"
    where the invalid rate is unknown."""
    from g2po.analysis.triage import triage_log
    from loaders import open_log
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    for valid in (False, True):
        entries = agent_loop_entries(1, valid_extra=valid)
        failed = entries[0]["uid"].rsplit("_", 2)[0]
        for e in entries:
            if e["uid"].startswith(failed):
                e["score"] = 0.0
        write_verl_dump(tmp_path / f"dump{valid}", 1, entries)
        table = triage_log(open_log(tmp_path / f"dump{valid}"), cache=False)
        row = table.set_index("group_id").loc[failed]
        assert pd.isna(row["invalid_rate"]) != valid  # unknown, never an assumed 0
        if not valid:
            assert row["reason"] == ("no signal under G2PO: all 2 rollouts got reward 0, "
                                     "validity unknown (the log has none)")
