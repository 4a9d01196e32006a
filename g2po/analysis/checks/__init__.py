"""The checks the triage runs on every group: one registered object each.

The groups table and ``g2po triage`` (:mod:`g2po.analysis.triage`), the run's findings and
the severity (:mod:`g2po.analysis.findings`), the Run overview's shares and the group
explorer's alarms (:mod:`g2po.analysis.alarms`) all read the registry
(:mod:`g2po.analysis.checks.registry`); none keeps its own list of kinds.

Adding a check is one file and its test
---------------------------------------
1. Write ``g2po/analysis/checks/<name>.py`` (any module of this package other than
   ``registry``, not starting with ``_``, is imported here, so it registers itself). In it,
   call :func:`register_check` with a :class:`Check`:

   - ``measure(batch)``: vectorised over every group of ``batch``
     (:class:`~g2po.analysis.checks.registry.Batch`: the shared signals
     :class:`g2po.analysis.signals.GroupSignals`, the step rows, a text lookup, the rule and
     parameters); returns ``{"count": (n_groups,), <evidence column>: (n_groups,), …}``. The
     count becomes the table's ``alarm_<kind>`` column, each evidence column one of
     ``columns`` (declare it there with its header). A new optional step column it reads goes
     in ``reads``.
   - ``severity(table, estimator)``: (n_rows,) in [0, 1], a function of the evidence columns
     (the whole run's table: compare with the run where that is the evidence); 0 where it
     does not fire, and always 0 for ``defect=False`` (progress, information).
   - ``reason(table, rows, estimator)``: a phrase per firing row, with its evidence.
   - ``run_text`` and ``fix`` ``(table, fires, estimator)``: words for the run, said once
     when the check is widespread (:func:`g2po.analysis.findings.run_findings`).
   - ``alarm(view)``: the group explorer's :class:`Alarm` on one group's graph, or None.

   Keep the module under 600 lines; shared arithmetic belongs in
   :mod:`g2po.analysis.signals`, shared wording in :mod:`g2po.analysis.words`.
2. Write ``tests/g2po/analysis/checks/test_<name>.py`` with ``EXAMPLES = {kind: (steps,
   rule, [group ids where it fires])}`` (a step table beside a healthy group,
   ``tests/g2po/analysis/checks/examples.py``) and tests of its own: a group where it fires
   for a reason a reader can check, one where it does not.
   ``tests/g2po/analysis/checks/test_registry.py`` walks the registry, runs every part of
   every check on its example and fails on a check lacking a part or an example. Nothing else
   needs an edit: the groups table gains its columns (the cache key its version), ``g2po
   triage --alarm <kind>`` and the Groups page's filter accept it, the Run overview charts
   its share, the run's findings say it, the explorer lists its alarm.

Changing what a check measures: bump its ``version`` so cached groups tables are recomputed.
"""

from __future__ import annotations

import importlib
import pkgutil

from g2po.analysis.checks.registry import (
    ESTIMATORS,
    Alarm,
    Batch,
    Check,
    GroupView,
    check_kinds,
    get_check,
    list_checks,
    register_check,
)

__all__ = ["Alarm", "Batch", "Check", "GroupView", "register_check", "get_check",
           "list_checks", "check_kinds", "ESTIMATORS", "fingerprint"]

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module != "registry" and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")


def fingerprint() -> str:
    """The registered checks and their versions, for cache keys: a new or changed check
    makes cached groups tables stale."""
    return ",".join(f"{c.kind}:{c.version}" for c in list_checks())
