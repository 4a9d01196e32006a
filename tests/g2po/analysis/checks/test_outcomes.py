from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import ALL_SUCCEEDED
from tests.g2po.builders import trajectories

PATH = [("entrance", "go east", True), ("hall", "go north", True), ("kitchen", "go north", True)]

EXAMPLES = {
    "collapsed": (beside_healthy(trajectories({f"r{i}": (0, PATH) for i in range(8)}, "same")),
                  OutcomeRule(), ["same"]),
    "all_success": (beside_healthy(trajectories(ALL_SUCCEEDED, "won")), OutcomeRule(),
                    ["won"]),
}
