"""The spec's parameters as one value the views pass around and caches key on."""

from __future__ import annotations

from dataclasses import dataclass, field

from g2po.estimators import estimator_params, shared_params
from g2po.outcomes import TERMINAL_RULES, OutcomeRule
from g2po.params import G2POParams
from g2po.segments import NORM_MODES
from g2po.state_keys import resolve_state_key

__all__ = ["SpecParams", "TERMINAL_RULES", "STATE_KEY_CHOICES", "NORM_MODES"]

#: Built-in strategies offered as choices; ``regex:`` and ``similarity:`` take an argument.
STATE_KEY_CHOICES = ("exact", "normalized", "regex", "similarity")
#: Parameters every estimator that accepts them takes from the sidebar (and the outcome rule's).
SHARED_PARAMS = ("gamma", "penalty")


@dataclass(frozen=True)
class SpecParams:
    """G2PO's parameters (``docs/estimators.md``); defaults reproduce the reference.

    gamma : discount γ in (0, 1].
    w : weight of the step terms, A = A^EP + w·(A^NC + A^EC).
    mode : ``mean_std_norm`` | ``mean_norm``.
    penalty : invalid-action penalty p.
    state_key : ``exact`` | ``normalized`` | ``regex:PATTERN`` | ``similarity:THRESHOLD``.
    rule : the run's outcome rule (success reward, threshold, terminal, truncation): the
        very value the sidebar keeps for the run (:attr:`app.context.AppContext.rules`), not
        a copy of its fields.
    """

    gamma: float = 0.95
    w: float = 1.0
    mode: str = "mean_std_norm"
    penalty: float = 0.1
    state_key: str = "exact"
    rule: OutcomeRule = field(default_factory=OutcomeRule)

    def __post_init__(self) -> None:
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if self.mode not in NORM_MODES:
            raise ValueError(f"mode must be one of {', '.join(NORM_MODES)}, got {self.mode!r}")
        if not isinstance(self.rule, OutcomeRule):
            raise ValueError(f"rule must be an OutcomeRule, got {type(self.rule).__name__}")
        resolve_state_key(self.state_key)  # raises UnknownStateKeyError / ValueError early

    def g2po(self) -> G2POParams:
        """The G2PO parameters alone (the library's object)."""
        return G2POParams(gamma=self.gamma, w=self.w, mode=self.mode, penalty=self.penalty,
                          state_key=self.state_key)

    def g2po_kwargs(self) -> dict[str, object]:
        """Keyword arguments of the ``g2po`` estimator (and the analyses that call it): the
        spec's parameters and the rule's success reward, threshold and terminal."""
        return {"gamma": self.gamma, "w": self.w, "mode": self.mode, "penalty": self.penalty,
                "state_key": self.state_key, **self.rule.estimator_kwargs()}

    def graph_kwargs(self) -> dict[str, object]:
        """Keyword arguments of :func:`g2po.analysis.state_graph.state_graph`:
        :meth:`g2po_kwargs` and the rule's ``truncate_at`` (which only the drawing takes)."""
        return {**self.g2po_kwargs(), "truncate_at": self.rule.truncate_at}

    def for_estimator(self, name: str) -> dict[str, object]:
        """The subset an estimator accepts: the shared ones and the rule's it takes with
        G2PO's meaning (:func:`g2po.estimators.shared_params`), plus ``w`` and ``mode`` for
        G2PO and its parts (other estimators keep their own normalisation defaults)."""
        accepted = estimator_params(name)
        shared = {**{k: getattr(self, k) for k in SHARED_PARAMS}, **self.rule.estimator_kwargs()}
        chosen = shared_params(name, shared)
        if name.startswith("g2po"):
            chosen.update({k: getattr(self, k) for k in ("w", "mode") if k in accepted})
        return chosen
