"""What an estimator declares beside its function: the vocabulary of
:func:`g2po.estimators.registry.register_estimator`.

Everything the rest of the product asks of an estimator is declared with it, in its own module:
its parameters' meanings (their defaults and choices are the function's signature), the step
columns it reads beyond the required ones (:class:`StepColumn`), the parts of its advantage and
how the comparison explains each (:class:`Part`), its display name and the public original it
equals. The CLI, the comparison, the trainers and the loaders read these declarations from the
registry; no other file lists estimators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["StepColumn", "Part", "EstimatorSpec", "ColumnDtype", "EPISODE_SETS"]

ColumnDtype = Literal["bool", "float64", "int64", "str"]
#: The sets an episode-level value is normalised over (docs/estimators.md): one R per rollout,
#: R − p·invalid per step row (a rollout weighs by its length), or the other rollouts' mean R.
EPISODE_SETS = ("rollouts", "step rows", "others")


@dataclass(frozen=True)
class StepColumn:
    """A step-table column an estimator reads beyond the required ones.

    ``name`` is the column; ``dtype`` one of ``bool``, ``float64``, ``int64``, ``str`` (checked
    and converted like the step table's own columns); ``doc`` what it holds, in a user's words
    (shown where it is missing). A ``required`` column missing from a table is an error naming
    it; an optional one reaches the estimator only where the table has it.
    """

    name: str
    dtype: ColumnDtype
    doc: str
    required: bool = True


@dataclass(frozen=True)
class Part:
    """One part of an estimator's advantage (an ``adv_…`` column it returns), as the comparison
    shows and explains it.

    column : the output column, e.g. ``adv_nc``; ``{k}`` in it stands for a number, one part
        per value (HGPO's ``adv_k{k}``).
    label : its short name, ``A^NC`` (``A^k{k}``).
    words : what it is called in sentences, ``node term``.
    weight : its weight in the advantage: a number, or the name of the parameter holding it.
    explain : how the comparison says why the part is what it is at a step —
        ``episode``: the step's rollout outcome, normalised over ``over`` (one of
        :data:`EPISODE_SETS`);
        ``rank``: where the step's ``of`` (``TD error``) ranks among the group's steps;
        ``peers``: the step's ``of`` (``its next state is worth``) against the other steps of
        its set: its state node (``peers="node"``), or the steps sharing the value of the output
        column ``peers``, described as ``among`` (``with as many milestones behind them``);
        ``history``: the step's return against the steps sharing its last k states.
    """

    column: str
    label: str
    words: str
    weight: float | str = 1.0
    explain: Literal["episode", "rank", "peers", "history"] = "rank"
    of: str = ""
    peers: str = "node"
    among: str = ""
    over: str = ""

    def match(self, column: str) -> str | None:
        """The label of output ``column`` when it is this part (``A^k3`` for ``adv_k3``), else
        None.

        >>> Part("adv_k{k}", "A^k{k}", "history term").match("adv_k3")
        'A^k3'
        """
        found = re.fullmatch(_pattern(self.column), column)
        if found is None:
            return None
        return self.label.replace("{k}", found.group(1)) if found.groups() else self.label

    def shows(self, label: str) -> bool:
        """Whether ``label`` (``A^k3``) is this part's."""
        return re.fullmatch(_pattern(self.label), label) is not None


def _pattern(text: str) -> str:
    """``text`` as a regular expression in which ``{k}`` matches a number."""
    return re.escape(text).replace(r"\{k\}", r"(\d+)")


@dataclass(frozen=True)
class EstimatorSpec:
    """An estimator and everything declared with it (see the module docstring).

    name : the registered name (``g2po``); fn : ``fn(ix: StepIndex, **params) -> {column:
    (n_steps,) array}`` with ``adv`` among the columns; title : its display name; summary :
    one line saying what ``adv`` is; params : each parameter's meaning, by name (defaults and
    ``Literal`` choices come from the signature); columns : the step columns it reads beyond
    the required ones; parts : the parts of its advantage (its ``adv_…`` columns); episode : for
    an estimator whose advantage is one outcome value per rollout, the set it normalises over
    (one of :data:`EPISODE_SETS`), else ""; weights : for parts whose weights change from step
    to step (HGPO's), ``weights(parts, settings) -> frame`` of each part's weight per step
    (rows and columns as ``parts``, labelled), else None (each part's ``weight``); original :
    the public implementation it equals ("" where it has none, which ``summary`` then says).
    A user's estimator registered by name alone has every field but ``name`` and ``fn`` empty.
    """

    name: str
    fn: Callable[..., Mapping]
    title: str = ""
    summary: str = ""
    params: Mapping[str, str] = field(default_factory=dict)
    columns: tuple[StepColumn, ...] = ()
    parts: tuple[Part, ...] = ()
    episode: str = ""
    weights: Callable | None = None
    original: str = ""

    def part_label(self, column: str) -> str | None:
        """The label of output ``column`` when it is one of the declared parts, else None."""
        return next((label for p in self.parts if (label := p.match(column))), None)

    def part(self, label: str) -> Part | None:
        """The declared part shown under ``label`` (``A^k3`` finds ``A^k{k}``), or None."""
        return next((p for p in self.parts if p.shows(label)), None)
