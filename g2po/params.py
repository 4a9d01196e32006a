"""G2PO's parameters as one frozen value that the library, the CLI, the app and the trainers
pass whole: what a user chooses (γ, w, normalisation, penalty, state key), apart from the run's
outcome rule (:class:`g2po.outcomes.OutcomeRule`), which belongs to the log.

The names and their parsing from text live here once: the sidebar and the URL, ``g2po triage
-p KEY=VALUE``, the triage cache key and the trainers' configuration all go through
:meth:`G2POParams.from_values` and :meth:`G2POParams.as_dict`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from g2po.estimators.registry import estimator_params, shared_params
from g2po.outcomes import OutcomeRule
from g2po.segments import NORM_MODES
from g2po.state_keys import StateKeyFn, resolve_state_key, strategy_names

__all__ = ["G2POParams", "DEFAULT_PARAMS", "STATE_KEY_CHOICES", "state_key_forms"]

#: The state-key strategies offered as choices (:func:`g2po.state_keys.strategy_names`, the one
#: list): ``regex`` and ``similarity`` take an argument (``regex:PATTERN``).
STATE_KEY_CHOICES = tuple(strategy_names())
#: How the strategies that take an argument are written with it.
_WITH_ARGUMENT = {"regex": "regex:PATTERN", "similarity": "similarity[:THRESHOLD]"}
#: Parameters every estimator that takes them gets with G2PO's meaning (besides the rule's).
_SHARED = ("gamma", "penalty")


@dataclass(frozen=True)
class G2POParams:
    """G2PO's parameters (``docs/estimators.md``); the defaults reproduce the authors' code.

    gamma : discount γ in (0, 1].
    w : weight of the step terms, A = A^EP + w·(A^NC + A^EC); finite.
    mode : ``mean_std_norm`` | ``mean_norm``.
    penalty : invalid-action penalty p; finite.
    state_key : a strategy's name as :func:`state_key_forms` writes them (the names of
        :func:`g2po.state_keys.strategy_names`), or a callable strategy
        (:mod:`g2po.state_keys`).

    >>> G2POParams.from_values({"gamma": "0.9", "mode": "mean_norm"})
    G2POParams(gamma=0.9, w=1.0, mode='mean_norm', penalty=0.1, state_key='exact')
    """

    gamma: float = 0.95
    w: float = 1.0
    mode: str = "mean_std_norm"
    penalty: float = 0.1
    state_key: str | StateKeyFn = "exact"

    def __post_init__(self) -> None:
        for name in ("gamma", "w", "penalty"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                    not math.isfinite(float(value)):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma:g}")
        if self.mode not in NORM_MODES:
            raise ValueError(f"mode must be one of {', '.join(NORM_MODES)}, got {self.mode!r}")
        resolve_state_key(self.state_key)  # raises UnknownStateKeyError / ValueError early

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameters' names, in order: what ``-p``, the URL and configs may set."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_values(cls, values: Mapping[str, Any], base: G2POParams | None = None,
                    *, where: str = "") -> G2POParams:
        """``base`` (default: the defaults) with ``values`` set; numbers may come as text (a URL,
        ``-p gamma=0.9``). Raises ``ValueError`` naming the key (prefixed by ``where``) for an
        unknown name or a bad value."""
        base = base or cls()
        names = cls.names()
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"{where}unknown G2PO parameter(s) {', '.join(unknown)}; "
                             f"they are: {', '.join(names)}")
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if key in ("gamma", "w", "penalty") and isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    raise ValueError(f"{where}{key} must be a number, got {value!r}") from None
            changes[key] = value
        try:
            return replace(base, **changes)
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None

    def as_dict(self) -> dict[str, Any]:
        """The parameters by name (a cache key, a URL, an export's record)."""
        return asdict(self)

    def g2po_kwargs(self, rule: OutcomeRule) -> dict[str, Any]:
        """Keyword arguments of :func:`g2po.estimators.estimate` for the ``g2po`` estimator
        (and the analyses built on it): these parameters and the rule's success reward,
        threshold and terminal."""
        return {**self.as_dict(), **rule.estimator_kwargs()}

    def for_estimator(self, name: str, rule: OutcomeRule) -> dict[str, Any]:
        """What estimator ``name`` takes of these parameters and the rule: those it takes
        with G2PO's meaning (:func:`g2po.estimators.shared_params`), plus ``w`` and ``mode``
        for G2PO and its parts (other estimators keep their own normalisation defaults). The
        state key is not an estimator parameter: pass it to ``estimate`` apart."""
        shared = {**{k: getattr(self, k) for k in _SHARED}, **rule.estimator_kwargs()}
        chosen = shared_params(name, shared)
        if name.startswith("g2po"):
            accepted = estimator_params(name)
            chosen.update({k: getattr(self, k) for k in ("w", "mode") if k in accepted})
        return chosen


def state_key_forms() -> str:
    """Every state-key strategy as a user writes it, for help texts and messages.

    >>> state_key_forms()
    'exact | normalized | alfworld | regex:PATTERN | similarity[:THRESHOLD]'
    """
    return " | ".join(_WITH_ARGUMENT.get(name, name) for name in strategy_names())


#: The paper's parameters (the authors' code), the default wherever parameters are optional.
DEFAULT_PARAMS = G2POParams()
