"""Multi-turn text environments: the interface, the bundled TextWorld games, and adapters for
ALFWorld, WebShop and AppWorld (whose packages are optional and imported only when used).

Usage::

    from g2po.envs import env_family
    family = env_family("textworld:coin_collector-level5")   # games generated and cached
    env = family.make(family.tasks(1, seed=3)[0])
    first = env.reset()                  # observation, admissible_actions, state_key, …
    result = env.step("<think>…</think><action>go west</action>")
"""

from g2po.envs.base import (
    INVALID_ACTION_FEEDBACK,
    EnvError,
    EnvFamily,
    MissingEnvironmentError,
    StepResult,
    TextEnv,
    UnknownEnvError,
    register_env,
)
from g2po.envs.catalog import env_family, list_envs, list_tasks, make_env

__all__ = [
    "INVALID_ACTION_FEEDBACK",
    "EnvError",
    "EnvFamily",
    "MissingEnvironmentError",
    "StepResult",
    "TextEnv",
    "UnknownEnvError",
    "env_family",
    "list_envs",
    "list_tasks",
    "make_env",
    "register_env",
]
