"""The estimator registry: one signature for every estimator, checked parameters.

Every estimator has the same signature, ``fn(ix: StepIndex, **params) -> dict[str, ndarray]``:
it receives the integer codes of the step table (:class:`g2po.index.StepIndex`) and returns
columns of shape (n_steps,), always including ``adv``. Callers never special-case one. The
built-in estimators import this module to register themselves; :mod:`g2po.estimators.compute`
runs them.
"""

from __future__ import annotations

import inspect
import math
import numbers
import typing
from collections.abc import Callable

import numpy as np

from g2po.errors import UnknownEstimatorError
from g2po.index import MAX_ABS_REWARD

__all__ = [
    "Estimator",
    "register_estimator",
    "get_estimator",
    "list_estimators",
    "estimator_params",
    "shared_params",
    "bind_params",
    "check_columns",
]

Estimator = Callable[..., dict[str, np.ndarray]]
_REGISTRY: dict[str, Estimator] = {}


def register_estimator(name: str, *, overwrite: bool = False) -> Callable[[Estimator], Estimator]:
    """Decorator registering ``fn(ix: StepIndex, **params) -> {column: (n_steps,) array}``.

    >>> @register_estimator("zero", overwrite=True)
    ... def zero(ix):
    ...     return {"adv": np.zeros(ix.n_steps)}
    >>> "zero" in list_estimators()
    True
    """

    def decorator(fn: Estimator) -> Estimator:
        if name in _REGISTRY and not overwrite and _REGISTRY[name] is not fn:
            raise ValueError(
                f"an estimator named {name!r} is already registered; pass overwrite=True to "
                "replace it"
            )
        _REGISTRY[name] = fn
        return fn

    return decorator


def get_estimator(name: str) -> Estimator:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownEstimatorError(
            f"unknown estimator {name!r}; registered: {', '.join(sorted(_REGISTRY))}"
        ) from None


def list_estimators() -> list[str]:
    return sorted(_REGISTRY)


def estimator_params(name: str) -> dict[str, object]:
    """The parameters an estimator accepts, with their defaults."""
    sig = inspect.signature(get_estimator(name))
    return {
        p.name: p.default
        for p in list(sig.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def shared_params(name: str, values: dict[str, object]) -> dict[str, object]:
    """Of ``values`` (settings shared by every estimator on a page or in a run: γ, the
    penalty, the success reward …), those that estimator ``name`` takes *with G2PO's meaning*:
    a parameter of the same name whose default is G2PO's. GraphGPO's ``gamma`` (0.1, a
    discount per graph-distance step) is another quantity and keeps its own default.

    >>> shared_params("graphgpo", {"gamma": 0.9, "penalty": 0.2})
    {'penalty': 0.2}
    """
    reference = estimator_params("g2po")
    own = estimator_params(name)
    return {k: v for k, v in values.items()
            if k in own and k in reference and own[k] == reference[k]}


def _choices(fn: Estimator) -> dict[str, tuple]:
    """The allowed values of each ``Literal[...]``-annotated parameter of ``fn``."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a user's annotations that do not resolve: no choices to check
        return {}
    return {k: typing.get_args(h) for k, h in hints.items()
            if typing.get_origin(h) is typing.Literal}


def _check_value(name: str, key: str, value: object, default: object,
                 choices: tuple | None) -> object:
    """``value`` checked against the parameter's default type; returns it in that type."""
    where = f"estimator {name!r}: parameter {key!r}"
    is_number = isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_))
    if isinstance(default, bool):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{where} must be true or false, got {value!r}")
        return bool(value)
    if isinstance(default, numbers.Real) or (default is None and is_number):
        if not is_number or not isinstance(value, numbers.Real):
            raise ValueError(f"{where} must be a real number, got {value!r}")
        if not math.isfinite(float(value)):
            raise ValueError(f"{where} must be finite, got {value!r}")
        if isinstance(default, numbers.Integral):
            if float(value) != int(value):
                raise ValueError(f"{where} must be a whole number, got {value!r}")
            return int(value)
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ValueError(f"{where} must be a string, got {value!r}")
        if choices and value not in choices:
            raise ValueError(f"{where} must be one of {', '.join(map(repr, choices))}, "
                             f"got {value!r}")
    return value


def bind_params(name: str, fn: Estimator, params: dict) -> dict:
    """The parameters checked (names, types, finiteness, choices) and converted to the types of
    their defaults, for every registered estimator alike."""
    accepted = estimator_params(name)
    unknown = [k for k in params if k not in accepted]
    if unknown and not any(
        p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()
    ):
        raise TypeError(
            f"estimator {name!r} takes no parameter(s) {', '.join(map(repr, unknown))}; "
            f"it takes: {', '.join(accepted) or 'none'}"
        )
    choices = _choices(fn)
    bound = {}
    for key, value in params.items():
        default = accepted.get(key, inspect.Parameter.empty)
        if default is inspect.Parameter.empty:
            default = None
        bound[key] = _check_value(name, key, value, default, choices.get(key))
    return bound


def check_columns(name: str, columns: dict, n_steps: int) -> None:
    if "adv" not in columns:
        raise ValueError(f"estimator {name!r} returned no 'adv' column")
    for col, values in columns.items():
        if np.shape(values) != (n_steps,):
            raise ValueError(
                f"estimator {name!r} returned column {col!r} of shape {np.shape(values)}, "
                f"expected ({n_steps},)"
            )
        values = np.asarray(values)
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            raise ValueError(
                f"estimator {name!r} produced non-finite values in column {col!r}: rewards or "
                "parameters too large for float64 (rewards are supported up to "
                f"{MAX_ABS_REWARD:g} in magnitude)"
            )
