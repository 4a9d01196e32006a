from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import ALL_FAILED
from tests.g2po.builders import trajectories

EXAMPLES = {"no_signal": (beside_healthy(trajectories(ALL_FAILED, "failed")), OutcomeRule(),
                          ["failed"])}
