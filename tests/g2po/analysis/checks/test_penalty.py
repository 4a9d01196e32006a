from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import PENALTY_ONLY
from tests.g2po.builders import trajectories

EXAMPLES = {"penalty_amplification": (beside_healthy(trajectories(PENALTY_ONLY, "pen")),
                                      OutcomeRule(), ["pen"])}
