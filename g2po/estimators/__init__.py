"""The estimators: a registry (:mod:`g2po.estimators.registry`) with one signature for all, the
built-in estimators (one module each), and :func:`compute_advantages` to run any of them
(:mod:`g2po.estimators.compute`). Importing the package registers the built-ins."""

from g2po.estimators import g2po as _g2po  # noqa: F401
from g2po.estimators import gigpo as _gigpo  # noqa: F401
from g2po.estimators import graphgpo as _graphgpo  # noqa: F401
from g2po.estimators import graphhca as _graphhca  # noqa: F401
from g2po.estimators import hgpo as _hgpo  # noqa: F401
from g2po.estimators import outcome as _outcome  # noqa: F401
from g2po.estimators import value_iteration as _value_iteration  # noqa: F401
from g2po.estimators.compute import compute_advantages, estimate
from g2po.estimators.registry import (
    Estimator,
    estimator_params,
    get_estimator,
    list_estimators,
    register_estimator,
    shared_params,
)

__all__ = [
    "Estimator",
    "register_estimator",
    "get_estimator",
    "list_estimators",
    "estimator_params",
    "shared_params",
    "estimate",
    "compute_advantages",
]
