"""The one browsing interface every log format offers: training steps, groups, one group's rows.

The app and the CLI list a log's training steps and groups first and load rows only for what is
shown. :class:`Log` defines that interface with defaults built on ``load_step``; formats that can
do better (the run directory reads one row group) override them. :class:`TableLog` serves logs
that are one table in memory (generic tables, trusted pickles).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from g2po.errors import G2POError
from g2po.index import index_steps, merge_rate
from g2po.outcomes import (
    TERMINAL_RULES,
    OutcomeRule,
    RewardScale,
    TruncationHint,
    detect_reward_scale,
    rule_from_won,
)
from g2po.params import G2POParams
from g2po.state_keys import StateKeyFn, resolve_state_key
from g2po.steps import coerce_steps
from loaders.curves import read_curves
from loaders.errors import LoaderError
from loaders.files import file_key
from loaders.incomplete import with_marks
from loaders.report import LoadReport, attach_report, report_of, step_ranges
from loaders.summary import (
    SUMMARY_COLUMNS,
    group_summary,
    step_summary,
    trajectory_table,
    truncation_hint,
)

__all__ = ["Log", "TableLog", "manifest_rule", "manifest_params", "state_nodes",
           "MERGE_RATE_COLUMNS"]

#: The columns of :meth:`Log.merge_rates`.
MERGE_RATE_COLUMNS = ["train_step", "merge_rate"]


def state_nodes(steps: pd.DataFrame, state_key: str | StateKeyFn = "exact") -> int:
    """The state nodes of one training step's rows (``steps``, with ``group_id``, ``traj_id``,
    ``t``, ``state_key``, ``episode_reward``, ``is_action_valid``) under the state-key
    strategy ``state_key`` (:func:`g2po.state_keys.resolve_state_key`), counted per group as
    :func:`g2po.index.index_steps` counts them: with the rows' number, the step's
    :func:`g2po.index.merge_rate` (:meth:`Log.merge_rates`, and a verl dump's summary pass)."""
    return index_steps(coerce_steps(steps), resolve_state_key(state_key)).n_nodes


def _rule_holders(manifest: dict) -> list[dict]:
    """Where a manifest of an earlier version keeps rule fields: at the top, under ``config``
    (a local run), under ``estimator_params`` (a verl run: the estimator's arguments)."""
    holders = [manifest, manifest.get("config"), manifest.get("estimator_params")] \
        if isinstance(manifest, dict) else []
    return [h for h in holders if isinstance(h, dict)]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _first(holders: list[dict], key: str, accept) -> object:
    return next((h[key] for h in holders if accept(h.get(key))), None)


def manifest_rule(manifest: dict) -> OutcomeRule | None:
    """The outcome rule a run states in its manifest, whole: the ``outcome`` mapping the
    trainers record (success reward, threshold, terminal, truncate_at), else, for runs of
    earlier versions, the fields found at the top, under ``config`` or under
    ``estimator_params`` (``success_reward`` at least); None when it states none or an invalid
    one.

    >>> manifest_rule({"outcome": {"success_reward": 1.0, "terminal": "reward"}}).terminal
    'reward'
    >>> manifest_rule({"estimator_params": {"success_reward": 1.0, "terminal": "reward"}})
    OutcomeRule(success_reward=1.0, success_threshold=None, terminal='reward', truncate_at=None)
    """
    if not isinstance(manifest, dict):
        return None
    recorded = manifest.get("outcome")
    if isinstance(recorded, dict):
        try:
            return OutcomeRule.from_values(recorded)
        except (ValueError, TypeError):
            return None
    holders = _rule_holders(manifest)
    reward = _first(holders, "success_reward", _number)
    if reward is None:
        return None
    values = {"success_reward": float(reward),
              "success_threshold": _first(holders, "success_threshold", _number),
              "terminal": _first(holders, "terminal", lambda v: v in TERMINAL_RULES) or "binary",
              "truncate_at": _first(holders, "truncate_at", _number)}
    try:
        return OutcomeRule.from_values(values)
    except (ValueError, TypeError):
        return None


def manifest_params(manifest: dict) -> G2POParams | None:
    """G2PO's parameters a run was trained with, whole: the ``params`` mapping the trainers
    record, else, for runs of earlier versions, what their manifest kept (a local run's
    ``config``: ``gamma``, ``invalid_penalty``, ``state_key`` and ``estimator_params``; a verl
    run's ``estimator_params`` and ``state_key``; ``w`` and ``mode`` only from a G2PO
    estimator's arguments, where they mean G2PO's); None when it states none or invalid ones.

    >>> manifest_params({"params": {"gamma": 0.9, "w": 0.8}})
    G2POParams(gamma=0.9, w=0.8, mode='mean_std_norm', penalty=0.1, state_key='exact')
    >>> manifest_params({"estimator": "g2po", "config": {"gamma": 0.9, "invalid_penalty": 0.0,
    ...                  "estimator_params": {"w": 0.8}}}).penalty
    0.0
    """
    if not isinstance(manifest, dict):
        return None
    recorded = manifest.get("params")
    values: dict[str, object] = {}
    if isinstance(recorded, dict):
        values = dict(recorded)
    else:
        config = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
        own = [h for h in (config.get("estimator_params"), manifest.get("estimator_params"))
               if isinstance(h, dict)]
        g2po = str(manifest.get("estimator") or config.get("estimator") or "") \
            .startswith("g2po")
        found = {"gamma": _first([config, *own], "gamma", _number),
                 "penalty": _first([*own, {"penalty": config.get("invalid_penalty")}],
                                   "penalty", _number),
                 "state_key": _first([manifest, config], "state_key",
                                     lambda v: isinstance(v, str) and bool(v))}
        if g2po:
            found.update(w=_first(own, "w", _number),
                         mode=_first(own, "mode", lambda v: isinstance(v, str)))
        values = {k: v for k, v in found.items() if v is not None}
    if not values:
        return None
    try:
        return G2POParams.from_values(values)
    except (ValueError, TypeError, G2POError):
        return None


class Log:
    """A log opened for browsing. Subclasses implement ``train_steps`` and ``load_step``.

    Attributes
    ----------
    path : the file or directory opened.
    format : ``run`` | ``verl`` | ``csv`` | ``jsonl`` | ``parquet`` | ``pickle``.
    manifest : what the log says about its run (the run directory's ``run.json``; a short
        description for other formats).
    report : skipped rows and assumptions, filled as parts are read.
    has_train_steps : False for a table without a ``train_step`` column; it then shows as one
        pseudo training step ``0`` and its frames carry no ``train_step`` column.
    """

    format: str = ""
    #: Its groups are listed from an index apart from the rows (a run's step-file footers):
    #: ``g2po validate --quick`` checks that index, which browsing reads.
    groups_indexed: bool = False

    def __init__(self, path: Path, manifest: dict | None = None,
                 report: LoadReport | None = None):
        self.path = Path(path)
        self.manifest = manifest or {}
        self._base_report = report or LoadReport(str(path), self.format)
        self._part_reports: dict[str, LoadReport] = {}
        self.has_train_steps = True
        #: Outcome-rule fields the user set when opening the log (``--success-reward`` …);
        #: they override the log's own rule in :meth:`rule`.
        self.outcome_overrides: dict[str, object] = {}
        self._rule: OutcomeRule | None = None
        self._rule_origin = ""
        #: A malformed line is an error rather than a line skipped (``open_log(strict=…)``,
        #: ``--strict``), in whatever part of the log is read (rows, metrics, curves).
        self.strict = False
        #: Training curves kept apart from the log (verl's file logger or TensorBoard,
        #: :mod:`loaders.curves`), read by :meth:`metrics`; set by ``open_log(metrics=…)``
        #: or found beside a verl dump.
        self.metrics_source: Path | None = None
        self._curves: tuple[tuple, pd.DataFrame] | None = None

    @property
    def report(self) -> LoadReport:
        """Everything skipped or assumed so far: the log's own notes and those of every part
        (step file) read; re-reading a part replaces its entry rather than counting twice."""
        merged = LoadReport(self._base_report.source, self._base_report.format)
        merged.merge(self._base_report)
        for part in self._part_reports.values():
            merged.merge(part)
        return merged

    def _record(self, part: str, report: LoadReport) -> None:
        self._part_reports[part] = report

    def rule(self) -> OutcomeRule:
        """The log's outcome rule, the default of every page and command: the manifest's
        (``run.json``), else the one its ``won`` flags state at the first training step
        (:func:`g2po.outcomes.rule_from_won`), else the reference's (success reward 10);
        then the fields the user set when opening it (:attr:`outcome_overrides`)."""
        cached = self._rule
        if cached is None:
            cached, origin = manifest_rule(self.manifest), "the log's manifest"
            if cached is None:
                steps = self.readable_train_steps()
                cached, origin = (rule_from_won(self.trajectories(steps[0])) if steps
                                  else None), "the log's won flags"
                if cached is None:
                    cached, origin = OutcomeRule(), "the default (the log states none)"
            self._rule, self._rule_origin = cached, origin
        return cached.with_changes(**self.outcome_overrides) if self.outcome_overrides \
            else cached

    def readable_train_steps(self) -> list[int]:
        """The training steps whose rows a read can reach (a run refuses a step claimed twice
        or by no regular file): the outcome rule is read from the first of them, so a
        selection of other steps still opens."""
        return self.train_steps()

    def rule_origin(self) -> str:
        """Where :meth:`rule` comes from, in words (for ``g2po validate`` and the app)."""
        self.rule()
        given = ", ".join(f"{k}={v}" for k, v in self.outcome_overrides.items())
        return f"{self._rule_origin}, then {given}" if given else self._rule_origin

    # -- to implement ----------------------------------------------------------------------
    def train_steps(self) -> list[int]:
        """The training steps the log holds, ascending."""
        raise NotImplementedError

    def load_step(self, train_step: int) -> pd.DataFrame:
        """Every step row of one training step, validated."""
        raise NotImplementedError

    # -- defaults --------------------------------------------------------------------------
    def trajectories(self, train_step: int) -> pd.DataFrame:
        """One row per trajectory of a training step, independent of any outcome rule
        (:func:`loaders.summary.trajectory_table`; values the loader assumed, as its report
        says, are unknown there); formats that can read less override it."""
        steps = self.load_step(train_step)
        return trajectory_table(steps, report_of(steps).assumed)

    def summary(self, rule: OutcomeRule | None = None) -> pd.DataFrame:
        """One row per training step, columns :data:`loaders.summary.SUMMARY_COLUMNS`, under
        ``rule`` (default: :meth:`rule`)."""
        rule = rule or self.rule()
        rows = [{"train_step": s, **step_summary(self.trajectories(s), rule)}
                for s in self.train_steps()]
        return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)

    def merge_rates(self, state_key: str = "exact") -> pd.DataFrame:
        """The state-merge rate of each training step (:func:`g2po.index.merge_rate` of its
        state nodes, counted per group, and its step rows) under the state-key strategy
        ``state_key`` (:func:`g2po.state_keys.resolve_state_key`); columns
        :data:`MERGE_RATE_COLUMNS`. Reads every training step's rows once; formats that can
        count the nodes without them override it."""
        strategy = resolve_state_key(state_key)
        rows = []
        for step in self.train_steps():
            steps = self.load_step(step)
            rows.append({"train_step": step,
                         "merge_rate": merge_rate(state_nodes(steps, strategy), len(steps))})
        return pd.DataFrame(rows, columns=MERGE_RATE_COLUMNS)

    def truncation_hint(self, rule: OutcomeRule | None = None) -> TruncationHint | None:
        """Failures of the whole log that look cut at a step limit it does not state, under
        ``rule`` (default: :meth:`rule`): :func:`loaders.summary.truncation_hint`."""
        tables = [self.trajectories(s) for s in self.train_steps()]
        tables = [t for t in tables if not t.empty]
        if not tables:
            return None
        return truncation_hint(pd.concat(tables, ignore_index=True), rule or self.rule())

    def params(self) -> G2POParams:
        """G2PO's parameters the log's run was trained with (:func:`manifest_params`: its
        ``run.json``), else the defaults: what every command and the sidebar start from, so a
        run is read under its own γ, w, penalty and state key unless the user says otherwise."""
        return manifest_params(self.manifest) or G2POParams()

    def reward_scale(self, rule: OutcomeRule | None = None,
                     train_steps: Sequence[int] | None = None) -> RewardScale | None:
        """Rewards on another scale than ``rule``'s (default: :meth:`rule`) at ``train_steps``
        (default: all): a 0/1 reward read under the success reward 10, where every trajectory
        would read as a failure (:func:`g2po.outcomes.detect_reward_scale`); None otherwise.
        The one rule the app's offers, ``g2po validate`` and ``g2po triage`` share."""
        steps = self.train_steps() if train_steps is None else train_steps
        tables = [t for t in (self.trajectories(s) for s in steps) if not t.empty]
        if not tables:
            return None
        return detect_reward_scale(pd.concat(tables, ignore_index=True), rule or self.rule())

    def step_columns(self, train_step: int, columns: Sequence[str]) -> pd.DataFrame:
        """The rows of one training step with only those of ``columns`` the log has, for
        analyses of a whole run that need a few columns (:mod:`g2po.analysis.triage`).
        ``state_key`` and ``action`` may come back as pandas Categoricals (run directories
        read them as Parquet dictionaries, never one string per row). The ``incomplete`` mark
        comes along where the rows have it (:func:`loaders.incomplete.with_marks`)."""
        steps = self.load_step(train_step)
        return steps[with_marks(columns, steps.columns)]

    def columns_of_steps(self, train_steps: Sequence[int], columns: Sequence[str]
                         ) -> Iterator[tuple[int, pd.DataFrame]]:
        """(training step, :meth:`step_columns`) of each of ``train_steps``, in order: how an
        analysis of a whole run reads it (:func:`g2po.analysis.triage.triage_log`); formats
        that can read several steps at once override it."""
        for step in train_steps:
            yield step, self.step_columns(step, columns)

    def step_source(self, train_step: int) -> Path | None:
        """The file that holds one training step's rows and nothing else (a run's step file,
        a verl dump's ``{step}.jsonl``), so a cache can tell when it changed; None for a log
        read whole into memory (one table)."""
        return None

    @property
    def read_options(self) -> dict:
        """The options the log was opened with that change its rows (verl's regexes), for
        cache keys."""
        return {}

    def groups(self, train_step: int) -> list[str]:
        """The group ids of one training step, sorted."""
        return sorted(self.load_step(train_step)["group_id"].unique().tolist())

    def group_summary(self, train_step: int, rule: OutcomeRule | None = None) -> pd.DataFrame:
        """One row per group of a training step, :data:`loaders.summary.GROUP_SUMMARY_COLUMNS`,
        under ``rule`` (default: :meth:`rule`)."""
        return group_summary(self.trajectories(train_step), rule or self.rule())

    def load_group(self, train_step: int, group_id: str) -> pd.DataFrame:
        """The step rows of one group of one training step."""
        steps = self.load_step(train_step)
        rows = steps[steps["group_id"].to_numpy() == str(group_id)]
        if rows.empty:
            self._no_group(train_step, group_id, self.groups(train_step))
        rows = rows.reset_index(drop=True)
        attach_report(rows, self.report)
        return rows

    def load(self, train_step: int | None = None, group_id: str | None = None) -> pd.DataFrame:
        """The rows of a selection: everything, one training step, one group (of every step
        that has it, or of one step)."""
        if train_step is not None and not self.has_train_steps:
            raise LoaderError(f"{self.path}: has no 'train_step' column to select from")
        steps = [train_step] if train_step is not None else self.train_steps()
        if train_step is not None:
            self._check_step(train_step)
        parts = []
        for s in steps:
            if group_id is None:
                parts.append(self.load_step(s))
            elif str(group_id) in self.groups(s):
                parts.append(self.load_group(s, group_id))
        if not parts:
            if group_id is not None:
                self._no_group(train_step, group_id,
                               sorted({g for s in steps for g in self.groups(s)}))
            notes = "; ".join(self.report.notes)
            raise LoaderError(f"{self.path}: the log holds no step rows"
                              + (f" ({notes})" if notes else ""))
        frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        attach_report(frame, self.report)
        return frame

    def metrics(self) -> pd.DataFrame:
        """Scalar metrics per training step: ``train_step`` and a column per metric, from
        :attr:`metrics_source` (read again when its files change); run directories record
        their own. Empty (only ``train_step``) when the log has none."""
        if self.metrics_source is None:
            return pd.DataFrame({"train_step": pd.Series(dtype=np.int64)})
        source = self.metrics_source
        files = sorted(source.rglob("*tfevents*")) if source.is_dir() else [source]
        key = tuple((str(f), *file_key(f, "metrics file")) for f in files if f.is_file())
        if self._curves is None or self._curves[0] != key:
            frame = read_curves(source, strict=self.strict)
            self._record(str(source), report_of(frame))
            self._curves = (key, frame)
        return self._curves[1].copy(deep=False)

    def refresh(self) -> None:
        """Pick up what was written since opening (live runs); a no-op for finished files."""

    def problems(self) -> list[str]:
        """Problems of the log as a whole that no single training step shows (``g2po
        validate`` lists them); none by default."""
        return []

    def validation_notes(self) -> list[str]:
        """What ``g2po validate`` says about the log beyond its rows and report (a run's
        checkpoints left half-written); none by default."""
        return []

    def step_problems(self, train_step: int, steps: pd.DataFrame) -> list[str]:
        """Problems of one training step beyond its rows (``steps``, already validated), such
        as an index that does not describe them; none by default."""
        return []

    # -- helpers ---------------------------------------------------------------------------
    def _check_step(self, train_step: int) -> None:
        steps = self.train_steps()
        if train_step not in steps:
            shown = step_ranges(steps)
            raise LoaderError(f"{self.path}: no training step {train_step}; "
                              f"the log holds {shown or 'none'}")

    def _no_group(self, train_step, group_id, groups: list[str]):
        where = f"training step {train_step}" if train_step is not None else "the log"
        shown = ", ".join(repr(g) for g in groups[:10]) + (" …" if len(groups) > 10 else "")
        raise LoaderError(f"{self.path}: {where} has no group {str(group_id)!r}; "
                          f"its {len(groups)} group(s): {shown}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.format} {self.path}>"


class TableLog(Log):
    """A log held as one validated table in memory (generic tables, trusted pickles)."""

    def __init__(self, path: Path, steps: pd.DataFrame, format: str, report: LoadReport,
                 manifest: dict | None = None):
        self.format = format
        super().__init__(path, manifest or {"format": format, "source": str(path)}, report)
        self.steps = steps
        self.has_train_steps = "train_step" in steps.columns
        if self.has_train_steps:
            codes = steps["train_step"].to_numpy(dtype=np.int64)
            self._rows = {int(s): np.flatnonzero(codes == s) for s in np.unique(codes)}
        else:
            self._rows = {0: np.arange(len(steps))}
            report.note("no train_step column: the table shows as one training step, 0")
        attach_report(steps, report)

    def train_steps(self) -> list[int]:
        return sorted(self._rows)

    def load_step(self, train_step: int) -> pd.DataFrame:
        self._check_step(train_step)
        rows = self.steps.iloc[self._rows[train_step]].reset_index(drop=True)
        attach_report(rows, self.report)
        return rows

    def load(self, train_step: int | None = None, group_id: str | None = None) -> pd.DataFrame:
        if train_step is None and group_id is None:
            return self.steps
        return super().load(train_step, group_id)

