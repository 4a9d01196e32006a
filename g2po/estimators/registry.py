"""The estimator registry: one signature for every estimator, its declarations, checked
parameters.

Every estimator has the same signature, ``fn(ix: StepIndex, **params) -> dict[str, ndarray]``:
it receives the integer codes of the step table (:class:`g2po.index.StepIndex`) and returns
columns of shape (n_steps,), always including ``adv``. Callers never special-case one. Each
estimator module registers its function with everything declared beside it
(:class:`g2po.estimators.spec.EstimatorSpec`: parameter meanings, step columns, parts, display
name, original); every part of the product that lists, runs or explains estimators reads them
here. :mod:`g2po.estimators.compute` runs them.
"""

from __future__ import annotations

import inspect
import math
import numbers
import typing
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from g2po.errors import UnknownEstimatorError
from g2po.estimators.spec import EPISODE_SETS, EstimatorSpec, Part, StepColumn
from g2po.index import MAX_ABS_REWARD

__all__ = [
    "Estimator",
    "register_estimator",
    "get_estimator",
    "get_spec",
    "list_estimators",
    "estimator_params",
    "parameter_choices",
    "step_columns",
    "shared_params",
    "bind_params",
    "check_columns",
]

Estimator = Callable[..., dict[str, np.ndarray]]
_REGISTRY: dict[str, EstimatorSpec] = {}


def register_estimator(
    name: str,
    *,
    overwrite: bool = False,
    title: str = "",
    summary: str = "",
    params: Mapping[str, str] | None = None,
    columns: Iterable[StepColumn] = (),
    parts: Iterable[Part] = (),
    episode: str = "",
    weights: Callable | None = None,
    original: str = "",
) -> Callable[[Estimator], Estimator]:
    """Decorator registering ``fn(ix: StepIndex, **params) -> {column: (n_steps,) array}``
    under ``name``, with its declarations (the keyword arguments: the fields of
    :class:`~g2po.estimators.spec.EstimatorSpec`). A user's estimator may give the name alone.

    >>> @register_estimator("zero", overwrite=True, title="Zero", summary="0 everywhere")
    ... def zero(ix):
    ...     return {"adv": np.zeros(ix.n_steps)}
    >>> "zero" in list_estimators(), get_spec("zero").title
    (True, 'Zero')
    >>> del _REGISTRY["zero"]
    """
    if episode and episode not in EPISODE_SETS:
        raise ValueError(f"estimator {name!r}: episode must be one of {EPISODE_SETS}, "
                         f"got {episode!r}")

    def decorator(fn: Estimator) -> Estimator:
        if name in _REGISTRY and not overwrite and _REGISTRY[name].fn is not fn:
            raise ValueError(
                f"an estimator named {name!r} is already registered; pass overwrite=True to "
                "replace it"
            )
        spec = EstimatorSpec(name, fn, title, summary, dict(params or {}), tuple(columns),
                             tuple(parts), episode, weights, original)
        _check_column_types(spec)
        _REGISTRY[name] = spec
        return fn

    return decorator


def _check_column_types(spec: EstimatorSpec) -> None:
    """A step column declared by two estimators means one thing: the same dtype."""
    known = {c.name: c for other in _REGISTRY.values() if other.name != spec.name
             for c in other.columns}
    for column in spec.columns:
        other = known.get(column.name)
        if other is not None and other.dtype != column.dtype:
            raise ValueError(f"estimator {spec.name!r} declares step column {column.name!r} as "
                             f"{column.dtype}, another estimator as {other.dtype}")


def get_spec(name: str) -> EstimatorSpec:
    """Estimator ``name`` with its declarations; an error naming the registered ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownEstimatorError(
            f"unknown estimator {name!r}; registered: {', '.join(sorted(_REGISTRY))}"
        ) from None


def get_estimator(name: str) -> Estimator:
    """The function of estimator ``name``."""
    return get_spec(name).fn


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


def parameter_choices(name: str) -> dict[str, tuple]:
    """The allowed values of each of estimator ``name``'s parameters that takes one of a few:
    those annotated ``Literal[...]`` (``mode: NormMode``).

    >>> parameter_choices("g2po")["terminal"]
    ('binary', 'reward')
    """
    return _choices(get_estimator(name))


def step_columns() -> dict[str, StepColumn]:
    """Every step column a registered estimator reads beyond the required ones, by name: the
    columns the loaders accept beside the step table's own (``--map``, suggestions)."""
    return {c.name: c for spec in _REGISTRY.values() for c in spec.columns}


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
