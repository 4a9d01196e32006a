"""G2PO: Group-Graph Policy Optimization for LLM agents (arXiv 2606.22995).

The public surface: the step table (:mod:`g2po.steps`), state-key strategies
(:mod:`g2po.state_keys`), the state graph (:mod:`g2po.analysis.state_graph`) and the
estimator registry with its single entry point :func:`compute_advantages`.

The names are imported on first use (PEP 562), so that importing a submodule, the ``g2po``
command among them, does not import pandas and numpy: ``g2po --help`` answers at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from g2po.lazy import lazy_names

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports them
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

#: Each public name and the module it comes from (the names of ``__all__``).
_SOURCES = {
    "G2POError": "g2po.errors",
    "StepTableError": "g2po.errors",
    "UnknownEstimatorError": "g2po.errors",
    "UnknownStateKeyError": "g2po.errors",
    "compute_advantages": "g2po.estimators",
    "estimate": "g2po.estimators",
    "estimator_params": "g2po.estimators",
    "get_estimator": "g2po.estimators",
    "list_estimators": "g2po.estimators",
    "register_estimator": "g2po.estimators",
    "StateGraph": "g2po.analysis.state_graph",
    "state_graph": "g2po.analysis.state_graph",
    "to_networkx": "g2po.analysis.state_graph",
    "StepIndex": "g2po.index",
    "REQUIRED_COLUMNS": "g2po.steps",
    "OPTIONAL_COLUMNS": "g2po.steps",
    "check_steps": "g2po.steps",
    "validate_steps": "g2po.steps",
}

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


__getattr__, __dir__ = lazy_names(__name__, _SOURCES, globals(), __all__)
