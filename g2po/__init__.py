"""G2PO: Group-Graph Policy Optimization for LLM agents (arXiv 2606.22995).

The public surface: the step table (:mod:`g2po.steps`), state-key strategies
(:mod:`g2po.state_keys`), the state graph (:mod:`g2po.analysis.state_graph`) and the
estimator registry with its single entry point :func:`compute_advantages`.
"""

from g2po.analysis.state_graph import StateGraph, state_graph, to_networkx
from g2po.errors import G2POError, StepTableError, UnknownEstimatorError, UnknownStateKeyError
from g2po.estimators import (
    compute_advantages,
    estimate,
    estimator_params,
    get_estimator,
    list_estimators,
    register_estimator,
)
from g2po.index import StepIndex
from g2po.steps import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, check_steps, validate_steps

__version__ = "0.1.0"

__all__ = [
    "G2POError",
    "StepTableError",
    "UnknownEstimatorError",
    "UnknownStateKeyError",
    "compute_advantages",
    "estimate",
    "estimator_params",
    "get_estimator",
    "list_estimators",
    "register_estimator",
    "StateGraph",
    "state_graph",
    "to_networkx",
    "StepIndex",
    "REQUIRED_COLUMNS",
    "OPTIONAL_COLUMNS",
    "check_steps",
    "validate_steps",
]
