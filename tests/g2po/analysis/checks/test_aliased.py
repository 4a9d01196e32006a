from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import aliased_group

EXAMPLES = {"aliased": (beside_healthy(aliased_group("dark")), OutcomeRule(), ["dark"])}
