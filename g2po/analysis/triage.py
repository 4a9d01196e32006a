"""The groups table: one row per group of a run, with what is wrong with it, to find the groups
that need a look among hundreds. This module is its public face; the parts live in
:mod:`g2po.analysis.group_table` (one batch of groups), :mod:`g2po.analysis.triage_cache` (a
whole log, cached on disk), :mod:`g2po.analysis.findings` (severity, reasons, the run's
findings) and :mod:`g2po.analysis.triage_show` (order, filters, brief view, shares). What is
checked is the check registry's (:mod:`g2po.analysis.checks`).

Columns (:data:`TRIAGE_COLUMNS`):

- ``train_step``, ``group_id``; ``task``: the log's ``task`` column (verl's ``gts`` where the
  loader maps it there), else the group id;
- ``rollouts``, ``steps``; ``success_rate`` (by the rule); ``reward_mean``, ``reward_std``
  (over the rollouts, population std);
- ``zero_adv_share``: the share of steps whose G2PO advantage is ~0
  (:data:`g2po.analysis.signals.ZERO_ADV`); ``adv_abs_mean``, ``adv_ec_abs_mean``: mean |A| and
  mean |A^EC|;
- ``state_nodes``, ``merge_rate`` (1 − nodes / steps), ``max_value_var`` (the largest node
  value variance);
- ``invalid_rate`` (invalid steps / steps, as the run summaries count it; NaN where the log
  holds no validity), ``truncated_share`` (trajectories cut at the step limit, by the rule);
- ``shortest`` / ``longest``: the group's shortest and longest rollout (steps);
  ``shortest_win``: its shortest winning rollout (NaN: none won); ``undone_at_longest``: its
  failed rollouts of the longest length whose ``done`` the log does not give (summed over a
  run, :func:`truncation_hint` tells a step limit the log does not state, as ``g2po
  validate`` does);
- ``no_signal`` / ``no_signal_grpo``: every G2PO / GRPO advantage of the group is ~0;
- ``alarm_<kind>``: each registered check's count (0: it does not fire), kinds in the
  registry's order; ``n_alarms``: how many defect kinds have a severity on the group, not
  counting those said for the run; ``run_wide``: the kinds said once for the run
  (:func:`run_findings`) that fire here, comma-separated;
- ``sign_disagree_share``: the share of steps G2PO and GRPO give opposite signs (information,
  which step-level credit is expected to produce: no alarm); ``adv_min`` / ``adv_max``:
  G2PO's smallest and largest advantage;
- each check's evidence columns (``aliased_evidence``: the group's most-taken split, "'key' +
  action → next (5×) | other (3×)"; ``hub_evidence``; ``start_evidence``: the starts of a
  group whose rollouts do not share one; …: the check's ``columns``);
- ``severity`` (0 … 1) and ``reason``: for the estimator the user trains with, the worst
  check's severity (a function of its evidence, weighed by how common it is in the run) and
  its words (:func:`assess`).
"""

from __future__ import annotations

from g2po.analysis.checks import ESTIMATORS
from g2po.analysis.findings import RUN_WIDE_MIN, RUN_WIDE_SHARE, Finding, assess, run_findings
from g2po.analysis.group_table import ALARM_COLUMNS, READ_COLUMNS, TRIAGE_COLUMNS, triage_groups
from g2po.analysis.triage_cache import TRIAGE_VERSION, cache_dir, triage_log
from g2po.analysis.triage_show import (
    ALARM_FILTERS,
    brief_view,
    default_sort,
    filter_groups,
    sort_groups,
    step_shares,
    truncation_hint,
)

__all__ = ["TRIAGE_COLUMNS", "ALARM_COLUMNS", "READ_COLUMNS", "triage_groups", "triage_log",
           "filter_groups", "sort_groups", "step_shares", "cache_dir", "default_sort", "assess",
           "run_findings", "Finding", "ESTIMATORS", "truncation_hint", "brief_view",
           "ALARM_FILTERS", "RUN_WIDE_SHARE", "RUN_WIDE_MIN", "TRIAGE_VERSION"]
