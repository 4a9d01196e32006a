"""A tiny deterministic text environment for tests: walk a corridor to the exit.

Real code (a complete :class:`~g2po.envs.base.TextEnv`), not a mock: it lets the tests drive
the interface and the collector in milliseconds, and break on purpose where a test needs an
environment that raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from g2po.envs.base import StepResult, TextEnv

LENGTH = 3


class Corridor(TextEnv):
    env_name = "corridor"

    def __init__(self, task_id: str, *, fail_at: int | None = None,
                 fail_reset: bool = False) -> None:
        super().__init__(task_id)
        self.pos = 0
        self.calls: list[str] = []
        self.fail_at = fail_at
        self.fail_reset = fail_reset

    def _obs(self) -> StepResult:
        won = self.pos >= LENGTH
        actions = ["go forward", "go back", "wait"] if not won else []
        return StepResult(observation=f"You are in room {self.pos} of the corridor.",
                          admissible_actions=actions, reward=1.0 if won else 0.0,
                          done=won, won=won)

    def _reset(self) -> StepResult:
        if self.fail_reset:
            raise RuntimeError("the game would not start")
        self.task = "reach the end of the corridor"
        self.pos = 0
        self.calls = []
        return self._obs()

    def _step(self, action: str) -> StepResult:
        self.calls.append(action)
        if self.fail_at is not None and len(self.calls) > self.fail_at:
            raise RuntimeError("the game crashed")
        if action == "go forward":
            self.pos += 1
        elif action == "go back":
            self.pos = max(0, self.pos - 1)
        result = self._obs()
        if action == "wait":
            result.observation = "Time passes."  # transient feedback, same state
            result.info["position"] = self.pos
        return result

    def state_key(self, result: StepResult) -> str:
        if "unchanged_key" in result.info:
            return result.info["unchanged_key"]
        if result.observation == "Time passes.":
            return f"You are in room {result.info['position']} of the corridor."
        return result.observation


class MilestoneCorridor(Corridor):
    """The corridor whose every step forward achieves a milestone: the environment reports
    MiGPO's ``milestone_achieved`` as a step fact (``step_reports``)."""

    step_reports = {"milestone_achieved": False}

    def _step(self, action: str) -> StepResult:
        before = self.pos
        result = super()._step(action)
        result.info["milestone_achieved"] = self.pos > before
        return result


@dataclass
class CorridorFamily:
    """Tasks ``c0``, ``c1``, …; ``broken`` maps a task id to the step its games fail at
    (``"reset"`` for a failing reset) — for the rollout index given in ``broken_rollouts``;
    ``game`` the environment class (:class:`MilestoneCorridor` reports milestones)."""

    spec: str = "corridor:test"
    broken: dict[str, int | str] = field(default_factory=dict)
    broken_rollouts: set[int] = field(default_factory=lambda: {0})
    made: dict[str, int] = field(default_factory=dict)
    game: type[Corridor] = Corridor

    def tasks(self, n: int, seed: int = 0) -> list[str]:
        return [f"c{seed + i}" for i in range(n)]

    def make(self, task_id: str) -> Corridor:
        index = self.made.get(task_id, 0)
        self.made[task_id] = index + 1
        how = self.broken.get(task_id) if index in self.broken_rollouts else None
        if how == "reset":
            return self.game(task_id, fail_reset=True)
        return self.game(task_id, fail_at=how if isinstance(how, int) else None)
