"""Exception types of the project, so callers can catch ours and nothing else."""

__all__ = [
    "G2POError",
    "StepTableError",
    "UnknownEstimatorError",
    "UnknownStateKeyError",
    "UserPatternError",
]


class G2POError(Exception):
    """Base class of every error the project raises on purpose."""


class StepTableError(G2POError, ValueError):
    """A step table breaks the schema; ``problems`` lists every finding, not just the first."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) with the step table{where}:\n{lines}")

    def __reduce__(self):  # pickled as it was built (errors cross process boundaries)
        return type(self), (self.problems, self.source)


class UnknownEstimatorError(G2POError, KeyError):
    """An estimator name that nobody registered."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


class UnknownStateKeyError(G2POError, KeyError):
    """A state-key strategy name that does not exist."""

    def __str__(self) -> str:
        return str(self.args[0])


class UserPatternError(G2POError, ValueError):
    """A user's regular expression that is invalid, or too slow on the text it ran on."""
