"""The estimators: a registry (:mod:`g2po.estimators.registry`) with one signature and one
declaration (:mod:`g2po.estimators.spec`) for all, the built-in estimators (one module each),
and :func:`compute_advantages` to run any of them (:mod:`g2po.estimators.compute`).

Importing the package imports every module in it, so an estimator is one file: a module that
registers itself is found without a line anywhere else.
"""

import importlib
import pkgutil

from g2po.estimators.compute import check_estimator_params, compute_advantages, estimate
from g2po.estimators.registry import (
    Estimator,
    estimator_params,
    get_estimator,
    get_spec,
    list_estimators,
    parameter_choices,
    register_estimator,
    shared_params,
    step_columns,
)
from g2po.estimators.spec import EstimatorSpec, Part, StepColumn

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "Part",
    "StepColumn",
    "register_estimator",
    "get_estimator",
    "get_spec",
    "list_estimators",
    "estimator_params",
    "parameter_choices",
    "step_columns",
    "shared_params",
    "estimate",
    "compute_advantages",
    "check_estimator_params",
]
