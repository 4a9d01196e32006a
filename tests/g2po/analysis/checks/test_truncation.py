from __future__ import annotations

from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import cut_by_done

EXAMPLES = {"truncation": (beside_healthy(cut_by_done("cut")), OutcomeRule(), ["cut"])}
