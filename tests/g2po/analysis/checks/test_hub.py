from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import hub_group

EXAMPLES = {"hub": (beside_healthy(hub_group(group="alf")), OutcomeRule(), ["alf"])}
