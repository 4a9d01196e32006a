"""What the sidebar chose, handed to every view as one argument (views read no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import loaders
from app.data import LogRef
from app.options import AppOptions
from app.params import SpecParams
from g2po.outcomes import OutcomeRule

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
    params : the spec's parameters for the graph and G2PO; ``params.rule`` is the active
        run's rule (``rules[active.key]``), so :meth:`params_for` gives any run's.
    missing_run : the run the URL names when it is not open in this session (an upload of
        another session, say); nothing is shown in its place.
    pages : page name → ``st.Page``, for views that send the user to another page.
    """

    options: AppOptions
    logs: list[OpenLog] = field(default_factory=list)
    active: OpenLog | None = None
    train_step: int | None = None
    group_id: str | None = None
    rules: dict[str, OutcomeRule] = field(default_factory=dict)
    params: SpecParams = field(default_factory=SpecParams)
    missing_run: str | None = None
    pages: dict[str, Any] = field(default_factory=dict)

    @property
    def has_group(self) -> bool:
        return self.active is not None and self.train_step is not None and \
            self.group_id is not None

    def rule_of(self, opened: OpenLog) -> OutcomeRule:
        """The outcome rule of an open run (the sidebar sets one for every run)."""
        return self.rules.get(opened.key, self.params.rule)

    def params_for(self, opened: OpenLog) -> SpecParams:
        """The spec's parameters with ``opened``'s outcome rule (pages showing a run other
        than the active one)."""
        rule = self.rule_of(opened)
        return self.params if rule == self.params.rule else replace(self.params, rule=rule)
