"""The environment families a spec can name: the bundled adapters and any registered since.

:func:`env_family` reads ``"prefix:details"`` and builds the family registered under the prefix
(:func:`g2po.envs.base.register_env`). The bundled adapters (TextWorld, ALFWorld, WebShop,
AppWorld) register themselves when imported; this module imports them, plainly, the first time a
spec is looked up: it sits above them, so the import graph sees every edge (adapters import
:mod:`g2po.envs.base`, never this module), and importing the package stays cheap (each adapter
imports its own packages only when a game is made).
"""

from __future__ import annotations

from typing import Any

from g2po.envs.base import EnvFamily, TextEnv, UnknownEnvError, registered

__all__ = ["env_family", "list_envs", "list_tasks", "make_env", "BUILTIN_PREFIXES"]

#: The prefixes of the bundled adapters (a test checks each is registered by its module).
BUILTIN_PREFIXES = ("textworld", "alfworld", "webshop", "appworld")


def _load_builtins() -> None:
    """Import the bundled adapters, which register their families (idempotent)."""
    import g2po.envs.alfworld_env  # noqa: F401
    import g2po.envs.appworld_env  # noqa: F401
    import g2po.envs.textworld_env  # noqa: F401
    import g2po.envs.webshop_env  # noqa: F401


def list_envs() -> dict[str, str]:
    """Registered prefixes and their one-line help."""
    _load_builtins()
    return {k: v[1] for k, v in sorted(registered().items())}


def env_family(spec: str, **kwargs: Any) -> EnvFamily:
    """The family a spec names, e.g. ``env_family("textworld:treasure_hunter-level10")``."""
    _load_builtins()
    families = registered()
    prefix, _, details = spec.partition(":")
    if prefix not in families:
        known = ", ".join(sorted(families))
        raise UnknownEnvError(
            f"unknown environment {spec!r}: the part before ':' must be one of {known}"
        )
    return families[prefix][0](details, **kwargs)


def list_tasks(spec: str, n: int, seed: int = 0, **kwargs: Any) -> list[str]:
    """``n`` task ids of the family ``spec`` names (deterministic in ``seed``)."""
    return env_family(spec, **kwargs).tasks(n, seed)


def make_env(spec: str, task: str | None = None, *, seed: int = 0, **kwargs: Any) -> TextEnv:
    """An environment for ``task`` (default: the family's first task for ``seed``)."""
    family = env_family(spec, **kwargs)
    if task is None:
        task = family.tasks(1, seed)[0]
    return family.make(task)
