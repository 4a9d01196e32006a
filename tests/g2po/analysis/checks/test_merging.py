from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.builders import trajectories

#: Three rollouts of five steps, no two steps with one key: 15 nodes for 15 steps.
CHAINS = {f"r{i}": (10 * (i == 0), [(f"s{i}-{t}", "go", True) for t in range(5)])
          for i in range(3)}

EXAMPLES = {"no_merging": (beside_healthy(trajectories(CHAINS, "chains")), OutcomeRule(),
                           ["chains"])}
