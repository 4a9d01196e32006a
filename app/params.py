"""The spec's parameters as one value the views pass around and caches key on."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from g2po.estimators import estimator_params, shared_params
from g2po.outcomes import TERMINAL_RULES, check_success_threshold
from g2po.segments import NORM_MODES
from g2po.state_keys import resolve_state_key

__all__ = ["SpecParams", "TERMINAL_RULES", "STATE_KEY_CHOICES", "NORM_MODES"]

#: Built-in strategies offered as choices; ``regex:`` and ``similarity:`` take an argument.
STATE_KEY_CHOICES = ("exact", "normalized", "regex", "similarity")
#: Parameters every estimator that accepts them takes from the sidebar.
SHARED_PARAMS = ("gamma", "penalty", "success_reward", "terminal", "success_threshold")


@dataclass(frozen=True)
class SpecParams:
    """G2PO's parameters (``docs/estimators.md``); defaults reproduce the reference.

    gamma : discount γ in (0, 1].
    w : weight of the step terms, A = A^EP + w·(A^NC + A^EC).
    mode : ``mean_std_norm`` | ``mean_norm``.
    penalty : invalid-action penalty p.
    success_reward : the reward that counts as success (the success terminal's value).
    terminal : ``binary`` (reference) | ``reward`` (terminal value = R_i, for scores).
    state_key : ``exact`` | ``normalized`` | ``regex:PATTERN`` | ``similarity:THRESHOLD``.
    success_threshold : None (success is reward = success reward) or T (reward ≥ T).
    """

    gamma: float = 0.95
    w: float = 1.0
    mode: str = "mean_std_norm"
    penalty: float = 0.1
    success_reward: float = 10.0
    terminal: str = "binary"
    state_key: str = "exact"
    success_threshold: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if self.mode not in NORM_MODES:
            raise ValueError(f"mode must be one of {', '.join(NORM_MODES)}, got {self.mode!r}")
        if self.terminal not in TERMINAL_RULES:
            raise ValueError(f"terminal must be one of {', '.join(TERMINAL_RULES)}, "
                             f"got {self.terminal!r}")
        check_success_threshold(self.success_threshold)
        resolve_state_key(self.state_key)  # raises UnknownStateKeyError / ValueError early

    def g2po_kwargs(self) -> dict[str, object]:
        """Keyword arguments of :func:`g2po.graph.state_graph` and the ``g2po`` estimator."""
        return asdict(self)

    def for_estimator(self, name: str) -> dict[str, object]:
        """The subset an estimator accepts: the shared ones it takes with G2PO's meaning
        (:func:`g2po.estimators.shared_params`), plus ``w`` and ``mode`` for G2PO
        and its parts (other estimators keep their own normalisation defaults)."""
        accepted = estimator_params(name)
        chosen = shared_params(name, {k: getattr(self, k) for k in SHARED_PARAMS})
        if name.startswith("g2po"):
            chosen.update({k: getattr(self, k) for k in ("w", "mode") if k in accepted})
        return chosen
