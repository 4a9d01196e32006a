"""Regular expressions typed by users (``--state-key regex:…``, ``--state-regex``, the app's
sidebar), run with a time limit so a pattern with catastrophic backtracking is an error, not a
hang.

Python's ``re`` has no time limit: ``(a|aa)+$`` doubles its time with each character of the
text. The `regex <https://pypi.org/project/regex/>`_ package is a drop-in engine with a
``timeout=`` on every match (checked coarsely: a limit of 0.25 s stops a runaway match well
within a second); its syntax is ``re``'s plus extensions.
"""

from __future__ import annotations

import regex

from g2po.errors import UserPatternError

__all__ = ["MATCH_TIMEOUT_S", "UserPattern", "compile_user_pattern"]

#: Time one match of a user pattern may take before it is stopped (seconds).
MATCH_TIMEOUT_S = 0.25


class UserPattern:
    """A compiled user pattern whose every match runs under :data:`MATCH_TIMEOUT_S`.

    ``what`` names the pattern in messages (``"state-key regex"``, ``"--state-regex"``).
    Matching raises :class:`UserPatternError` naming the pattern and the text's length when
    the time runs out.
    """

    def __init__(self, pattern: str, what: str, flags: int = regex.DOTALL):
        self.what = what
        self.pattern = pattern
        try:
            self._rx = regex.compile(pattern, flags)
        except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as err:
            raise UserPatternError(f"{what}: invalid regular expression {pattern!r}: {err}") \
                from None

    @property
    def groups(self) -> int:
        return self._rx.groups

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._rx.groupindex)

    def search(self, text: str):
        """The first match in ``text`` (or None), within the time limit."""
        try:
            return self._rx.search(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            raise self._too_slow(text) from None

    def last(self, text: str):
        """The last of the non-overlapping matches in ``text`` (or None), within the limit."""
        found = None
        try:
            for found in self._rx.finditer(text, timeout=MATCH_TIMEOUT_S):  # noqa: B007
                pass
        except TimeoutError:
            raise self._too_slow(text) from None
        return found

    def _too_slow(self, text: str) -> UserPatternError:
        return UserPatternError(
            f"{self.what} {self.pattern!r} took longer than {MATCH_TIMEOUT_S:g} s on one text "
            f"of {len(text):,} characters and was stopped; the pattern backtracks "
            "catastrophically (nested repetition such as (a+)+ or (a|aa)+): rewrite it without "
            "nested or overlapping repeats"
        )

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"


def compile_user_pattern(pattern: str, what: str) -> UserPattern:
    """Compile a user's pattern; :class:`UserPatternError` naming ``what`` if it is invalid."""
    if not isinstance(pattern, str):
        raise UserPatternError(f"{what}: a regular expression is text, got "
                               f"{type(pattern).__name__}")
    return UserPattern(pattern, what)
