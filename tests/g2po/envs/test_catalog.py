"""The catalog of environment families: the bundled adapters, imported plainly by the module
above them, each registering the prefix it is listed under."""

from __future__ import annotations

import pytest

from g2po.envs import UnknownEnvError
from g2po.envs.base import TextEnv
from g2po.envs.catalog import BUILTIN_PREFIXES, env_family, list_envs
from g2po.estimators import step_columns


def test_every_bundled_adapter_registers_its_prefix_with_help():
    listed = list_envs()
    assert set(BUILTIN_PREFIXES) <= set(listed)
    assert all(listed[p].strip() for p in BUILTIN_PREFIXES)


def test_an_unknown_prefix_names_the_known_ones():
    with pytest.raises(UnknownEnvError, match=r"'chess:easy'.*one of .*textworld"):
        env_family("chess:easy")


def _bundled(cls: type[TextEnv]) -> list[type[TextEnv]]:
    found = [c for c in cls.__subclasses__() if c.__module__.startswith("g2po.envs.")]
    return found + [d for c in found for d in _bundled(c)]


def test_what_a_bundled_environment_reports_is_a_declared_step_column():
    """Each step fact a bundled environment reports is a column an estimator declares, and
    its no-op value has the declared dtype: a renamed column cannot leave an env reporting
    a name nothing reads."""
    envs = _bundled(TextEnv)
    assert {c.env_name for c in envs} >= {"textworld", "alfworld", "webshop", "appworld"}
    declared = step_columns()
    python = {"bool": bool, "float64": float, "int64": int, "str": str}
    reported = {name: (cls, value) for cls in envs for name, value in cls.step_reports.items()}
    assert "milestone_achieved" in reported  # TextWorld's
    for name, (cls, value) in reported.items():
        assert name in declared, f"{cls.__name__} reports {name!r}, which no estimator declares"
        assert type(value) is python[declared[name].dtype], (cls.__name__, name)
