import doctest

import pytest

from g2po import estimators
from g2po.estimators import estimator_params, list_estimators, shared_params


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
