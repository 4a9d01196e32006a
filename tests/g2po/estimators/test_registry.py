"""The registry: every estimator declares every part the product asks of it (walked here, so
a new estimator lacking one fails), an estimator is one file (found without a line elsewhere),
and the step columns it declares reach it, checked, or are a clear error."""

import doctest
import inspect
import math
import pkgutil
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from g2po import estimators
from g2po.analysis.compare import compare_estimators, contributions
from g2po.errors import StepTableError
from g2po.estimators import (
    StepColumn,
    check_estimator_params,
    compute_advantages,
    estimator_params,
    get_spec,
    list_estimators,
    register_estimator,
    shared_params,
    step_columns,
)
from g2po.estimators import registry as registry_module
from g2po.estimators.spec import EPISODE_SETS, Part
from g2po.outcomes import OutcomeRule
from tests.g2po.builders import THREE, TWO, trajectories, with_declared_columns
from tests.test_architecture import import_graph

EXPLAINS = ("episode", "rank", "peers", "history")


def test_the_registry_doctests_run():
    assert doctest.testmod(estimators).failed == 0


@pytest.mark.parametrize("name", list_estimators())
def test_shared_settings_reach_an_estimator_only_with_g2pos_meaning(name):
    """A shared setting replaces an estimator's own default only where that default is G2PO's;
    everything passed is a parameter the estimator takes."""
    values = {"gamma": 0.5, "penalty": 0.3, "success_reward": 1.0, "terminal": "reward"}
    own, reference = estimator_params(name), estimator_params("g2po")
    shared = shared_params(name, values)
    assert set(shared) <= set(own)
    for k, v in shared.items():
        assert v == values[k] and own[k] == reference[k]
    for k in set(values) & set(own) - set(shared):
        assert own[k] != reference[k]


def _outputs(name: str, steps: pd.DataFrame) -> set[str]:
    """The columns ``name`` returns with its defaults and with each switch flipped (HGPO's
    episode item exists only with ``base_group``)."""
    found = set(compute_advantages(steps, name).columns)
    for key, default in estimator_params(name).items():
        if isinstance(default, bool) and key != "step_rewards":
            found |= set(compute_advantages(steps, name, **{key: not default}).columns)
    return found - set(steps.columns)


@pytest.mark.parametrize("name", list_estimators())
def test_every_estimator_declares_every_part(name):
    """What the CLI, the comparison, the trainers and the loaders read of an estimator is
    declared with it: a built-in lacking any of it fails here."""
    spec = get_spec(name)
    params = estimator_params(name)
    assert spec.title and spec.summary, f"{name}: no title or summary"
    assert set(spec.params) == set(params), f"{name}: parameter meanings {set(spec.params)} " \
                                            f"vs its parameters {set(params)}"
    assert all(doc.strip() for doc in spec.params.values())
    steps = with_declared_columns(trajectories(THREE))
    out = _outputs(name, steps)
    for column in sorted(c for c in out if c.startswith("adv_")):
        assert spec.part_label(column), f"{name} returns {column} but declares no part for it"
    for part in spec.parts:
        assert part.label and part.words and part.explain in EXPLAINS, part
        assert "{k}" in part.column or part.column in out, f"{name} never returns {part.column}"
        assert not isinstance(part.weight, str) or part.weight in params, part
        if part.explain in ("rank", "peers"):
            assert part.of, part
        if part.explain == "peers" and part.peers != "node":
            assert part.peers in out and part.among, part
        if part.explain == "episode":
            assert part.over in EPISODE_SETS, part
    assert spec.episode in ("", *EPISODE_SETS)
    assert not (spec.episode and spec.parts), f"{name}: an episode value has no parts"
    for column in spec.columns:
        assert column.doc and column.dtype in ("bool", "float64", "int64", "str"), column
    # the declared weights put the parts back together into the advantage
    result = compare_estimators(steps, [name], rule=OutcomeRule())
    assert result.estimators == [name], result.errors
    if spec.parts:
        shares = contributions(result, name)
        assert shares is not None, f"{name}: its declared weights do not add up to adv"


def test_an_estimator_is_one_file():
    """Importing the package imports every module in it, and the package names none: a new
    module registers itself without a line anywhere else. The import graph, with the edges
    that discovery adds, still has no circle."""
    package = Path(estimators.__file__).parent
    modules = [f"g2po.estimators.{m.name}" for m in pkgutil.iter_modules([str(package)])]
    assert all(m in sys.modules for m in modules)
    source = inspect.getsource(estimators)
    own = {"compute", "registry", "spec"}
    for module in modules:
        leaf = module.rpartition(".")[2]
        if leaf not in own:
            assert f"estimators.{leaf}" not in source and f"import {leaf}" not in source
    graph = import_graph()
    graph.add_edges_from(("g2po.estimators", m) for m in modules)
    assert [c for c in nx.strongly_connected_components(graph) if len(c) > 1] == []


@pytest.fixture
def flagged():
    """An estimator that reads a required bool step column and an optional float one."""

    @register_estimator(
        "test_flagged", overwrite=True, title="Flagged", summary="the flag, as a number",
        params={"scale": "a factor"},
        columns=(StepColumn("test_flag", "bool", "True where the step raised the flag"),
                 StepColumn("test_bonus", "float64", "a bonus per step", required=False)),
        parts=(Part("adv_flag", "A^F", "flag term", "scale", explain="rank", of="flag"),))
    def test_flagged(ix, scale: float = 1.0):
        flag = ix.columns["test_flag"].astype(np.float64)
        bonus = ix.columns.get("test_bonus", np.zeros(ix.n_steps))
        return {"adv": scale * flag + 0 * bonus, "adv_flag": flag,
                "had_bonus": np.full(ix.n_steps, "test_bonus" in ix.columns)}

    yield "test_flagged"
    registry_module._REGISTRY.pop("test_flagged", None)


def test_a_declared_step_column_reaches_the_estimator_checked(flagged):
    steps = trajectories(TWO).assign(test_flag=["yes", "no", "1", "0", "true"])
    out = compute_advantages(steps, flagged, scale=2.0)
    assert out["adv"].tolist() == [2.0, 0.0, 2.0, 0.0, 2.0]
    assert not out["had_bonus"].any()
    with_bonus = compute_advantages(steps.assign(test_bonus=1.5), flagged)
    assert with_bonus["had_bonus"].all()
    assert step_columns()["test_flag"].dtype == "bool"
    # every registered estimator's columns, and the synthetic values of the tests and bench
    assert {"test_flag", "test_bonus"} <= set(with_declared_columns(steps).columns)


def test_a_missing_or_bad_declared_column_is_a_clear_error(flagged):
    steps = trajectories(TWO)
    with pytest.raises(StepTableError, match="estimator 'test_flagged' needs the step column "
                       r"'test_flag' \(bool: True where the step raised the flag\).*"
                       "--map test_flag=COLUMN"):
        compute_advantages(steps, flagged)
    with pytest.raises(StepTableError, match="'test_flag' is not boolean .* in 1 row"):
        compute_advantages(steps.assign(test_flag=[1, 0, 2, 0, 1]), flagged)
    with pytest.raises(StepTableError, match="'test_flag' on every row; it is empty in 1 row"):
        compute_advantages(steps.assign(test_flag=[True, None, True, False, True]), flagged)
    with pytest.raises(StepTableError, match="'test_bonus' is not numeric"):
        compute_advantages(steps.assign(test_flag=True, test_bonus="x"), flagged)
    # the other estimators never ask for it
    assert len(compute_advantages(steps, "g2po")) == len(steps)


def test_parameters_are_checked_before_any_data_exists(flagged):
    check_estimator_params(flagged, scale=3.0)  # the probe carries the declared columns
    check_estimator_params("hgpo", history_length=4)
    with pytest.raises(ValueError, match="parameter 'scale'"):
        check_estimator_params(flagged, scale=math.inf)
    with pytest.raises(TypeError, match="takes no parameter"):
        check_estimator_params("g2po", omega=1.0)
    with pytest.raises(ValueError, match="history_length"):
        check_estimator_params("hgpo", history_length=-1)


def test_two_estimators_cannot_give_one_column_two_types(flagged):
    with pytest.raises(ValueError, match="declares step column 'test_flag' as float64"):
        register_estimator("test_other", columns=(StepColumn("test_flag", "float64", "x"),))(
            lambda ix: {"adv": np.zeros(ix.n_steps)})
    assert "test_other" not in list_estimators()


def test_a_users_estimator_may_declare_nothing():
    @register_estimator("test_plain", overwrite=True)
    def test_plain(ix):
        return {"adv": np.zeros(ix.n_steps)}

    try:
        spec = get_spec("test_plain")
        assert spec.fn is test_plain and not spec.title and not spec.parts
        assert compute_advantages(trajectories(TWO), "test_plain")["adv"].eq(0).all()
    finally:
        registry_module._REGISTRY.pop("test_plain", None)
