"""The catalog of environment families: the bundled adapters, imported plainly by the module
above them, each registering the prefix it is listed under."""

from __future__ import annotations

import pytest

from g2po.envs import UnknownEnvError
from g2po.envs.catalog import BUILTIN_PREFIXES, env_family, list_envs


def test_every_bundled_adapter_registers_its_prefix_with_help():
    listed = list_envs()
    assert set(BUILTIN_PREFIXES) <= set(listed)
    assert all(listed[p].strip() for p in BUILTIN_PREFIXES)


def test_an_unknown_prefix_names_the_known_ones():
    with pytest.raises(UnknownEnvError, match=r"'chess:easy'.*one of .*textworld"):
        env_family("chess:easy")
