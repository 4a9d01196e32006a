"""What the sidebar chose, handed to every view as one argument (views read no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import loaders
from app.data import LogRef
from app.options import AppOptions
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams

__all__ = ["AppContext", "OpenLog"]


@dataclass
class OpenLog:
    """One opened log: where it came from and the loader's browsing object."""

    ref: LogRef
    log: loaders.Log

    @property
    def key(self) -> str:
        return self.ref.key

    @property
    def name(self) -> str:
        return self.ref.name


@dataclass
class AppContext:
    """The sidebar's choices.

    logs : every log chosen for display (the overview compares them all).
    active : the log the group views look at (one of ``logs``), or None.
    train_step, group_id : the group the group views show, or None.
    rules : run key → the run's one outcome rule (success reward, threshold, terminal,
        truncation), for every open run: every page and summary reads a run's success here.
    params : G2PO's parameters (γ, w, normalisation, penalty, state key) for every run; a
        run's outcome rule is apart, in ``rules`` (:attr:`rule` for the active run).
    missing_run : the run the URL names when it is not open in this session (an upload of
        another session, say); nothing is shown in its place.
    pages : page name → ``st.Page``, for views that send the user to another page.
    report_slot : the sidebar's place for the logs' load reports, drawn after the page ran
        (the page's reads add to them: a line skipped in a step it read is named at once).
    """

    options: AppOptions
    logs: list[OpenLog] = field(default_factory=list)
    active: OpenLog | None = None
    train_step: int | None = None
    group_id: str | None = None
    rules: dict[str, OutcomeRule] = field(default_factory=dict)
    params: G2POParams = field(default_factory=G2POParams)
    missing_run: str | None = None
    pages: dict[str, Any] = field(default_factory=dict)
    report_slot: Any = None

    @property
    def has_group(self) -> bool:
        return self.active is not None and self.train_step is not None and \
            self.group_id is not None

    def rule_of(self, opened: OpenLog) -> OutcomeRule:
        """The outcome rule of an open run (the sidebar sets one for every run; before it has,
        the log's own, :meth:`loaders.Log.rule`)."""
        rule = self.rules.get(opened.key)
        return rule if rule is not None else opened.log.rule()

    @property
    def rule(self) -> OutcomeRule:
        """The active run's outcome rule (the group views')."""
        if self.active is None:
            raise ValueError("no run is active: the outcome rule is a run's")
        return self.rule_of(self.active)
