"""The agent's prompt and response format, shared by the collector and both trainers.

The paper (and verl-agent before it) has the model think inside ``<think>…</think>`` and answer
inside ``<action>…</action>``. :func:`build_prompt` writes the ALFWorld-style prompt: the task,
the last K (observation, action) steps, the current observation and the admissible actions.
:func:`parse_action` projects a response to an action and says whether it is valid: a tagged
action that matches an admissible one (ignoring case, spacing, quotes and a final full stop),
or, in a free-form environment without an admissible list, any non-empty tagged text.
:func:`current_observation` reads the current observation back out of a prompt (logs store
prompts; the state graph merges on observations), :func:`admissible_actions` its admissible
actions (G2PO's ALFWorld state key needs them, :mod:`g2po.state_keys`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

__all__ = [
    "DEFAULT_ROLE",
    "build_prompt",
    "parse_action",
    "parse_action_format",
    "VALIDITY_RULES",
    "extract_action",
    "normalize_action",
    "format_response",
    "current_observation",
    "admissible_actions",
    "read_action_list",
    "ADMISSIBLE_MARK",
]

DEFAULT_ROLE = "You are an expert agent playing a text-based game."

_ACTION_RE = re.compile(r"<action>(.*?)</action>", re.IGNORECASE | re.DOTALL)
_THINK_RE = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_SPACE_RE = re.compile(r"\s+")
# Raw text kept as the "action" of a response without a tag: enough to recognise it.
_RAW_ACTION_CHARS = 200
# The format rule sends a response without an action tag to the game as its last 30 characters
# (verl-agent's ALFWorld projection does; the game answers "Nothing happens.").
_FORMAT_TAIL_CHARS = 30
_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
#: How a step's validity is judged: ``admissible`` (the tagged action is one of the admissible
#: actions; others are no-ops), ``format`` (the authors' rule: the response has ``<think>`` and
#: ``<action>`` tags and no Chinese characters; every action, admissible or not, is played).
VALIDITY_RULES = ("admissible", "format")
# What follows the current observation in a prompt, on a later line: the admissible list, else
# the closing instructions (free-form environments). verl-agent's ALFWorld/WebShop prompts read
# the same. The rules as regexes (found with str methods below, several times faster: they run
# on every line of a dump; the tests hold the two equal):
_OBSERVATION_MARK = re.compile(r"[Yy]our current observation is: ?")
_OBSERVATION_END = re.compile(
    r"\s*\n\s*(?:Your admissible actions of the current situation are:|"
    r"Now it's your turn to take an action\.)")
#: What introduces the admissible actions in a prompt (ours and verl-agent's).
ADMISSIBLE_MARK = "Your admissible actions of the current situation are:"
_END_PHRASES = (ADMISSIBLE_MARK, "Now it's your turn to take an action.")
# One quoted action of a listed admissible set, after optional separators (our prompts join
# Python reprs with ", "; verl-agent's join '…' with "\n ").
_LISTED = re.compile(r"""[\s,]*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")


def extract_action(response: str) -> str | None:
    """The text inside the last ``<action>…</action>`` of ``response``, stripped; None if none.

    The last tag wins, so an action the model mentions while thinking does not count.
    """
    found = _ACTION_RE.findall(response or "")
    return found[-1].strip() if found else None


def normalize_action(text: str) -> str:
    """Lower case, single spaces, no surrounding quotes or final full stop: how actions match."""
    text = _SPACE_RE.sub(" ", str(text)).strip().lower()
    text = text.strip("\"'`").strip()
    return text[:-1].rstrip() if text.endswith(".") else text


def parse_action(
    response: str,
    admissible: Sequence[str] | None = None,
    *,
    require_think: bool = False,
) -> tuple[str, bool]:
    """Project a model response to ``(action, is_valid)``.

    Valid when the response has an ``<action>`` tag whose content matches one of
    ``admissible`` (then the admissible spelling is returned), or, when ``admissible`` is None
    (a free-form environment), when the tag holds any non-empty text. Invalid responses return
    the tag's content, or the raw response (stripped, at most 200 characters) when there is no
    tag. With ``require_think``, a response without a ``<think>…</think>`` block is invalid too
    (verl-agent's stricter rule).

    Examples
    --------
    >>> parse_action("<think>north is open</think><action>Go North</action>", ["go north"])
    ('go north', True)
    >>> parse_action("<action>fly away</action>", ["go north"])
    ('fly away', False)
    >>> parse_action("I would go north", ["go north"])
    ('I would go north', False)
    """
    tagged = extract_action(response)
    if tagged is None:
        raw = (response or "").strip()
        return raw[:_RAW_ACTION_CHARS], False
    valid = not require_think or bool(_THINK_RE.search(response))
    if admissible is None:
        return tagged, valid and tagged != ""
    wanted = normalize_action(tagged)
    for candidate in admissible:
        if normalize_action(candidate) == wanted:
            return candidate, valid
    return tagged, False


def parse_action_format(response: str) -> tuple[str, bool]:
    """Project a response as the authors' ALFWorld projection does: ``(action, is_valid)``.

    The action is the lower-cased text between the first ``<action>`` and the first
    ``</action>``; without both tags it is the response's last 30 characters, lower-cased. The
    response is valid when it has both action tags, both ``<think>`` and ``</think>``, and no
    Chinese characters. Admissibility plays no part: the caller sends the action to the game
    whatever it is, and an inadmissible one is answered "Nothing happens.".

    >>> parse_action_format("<think>hot</think><action>Heat Mug 1 with microwave 1</action>")
    ('heat mug 1 with microwave 1', True)
    >>> parse_action_format("<action>fly away</action>")
    ('fly away', False)
    >>> parse_action_format("I would go north")
    ('i would go north', False)
    """
    text = response or ""
    lowered = text.lower()
    start, end = lowered.find("<action>"), lowered.find("</action>")
    if start == -1 or end == -1:
        return lowered[-_FORMAT_TAIL_CHARS:], False
    action = lowered[start + len("<action>"):end].strip()
    valid = "<think>" in text and "</think>" in text and not _CJK_RE.search(text)
    return action, valid


def format_response(action: str, thought: str = "") -> str:
    """A response in the paper's format, as the bundled random and scripted policies write it."""
    return f"<think>{thought}</think>\n<action>{action}</action>"


def build_prompt(
    task: str,
    observation: str,
    admissible: Sequence[str] | None,
    history: Sequence[tuple[str, str]] = (),
    *,
    history_length: int = 2,
    role: str = DEFAULT_ROLE,
    action_hint: str | None = None,
) -> str:
    """The prompt for one step, in the paper's ALFWorld style.

    ``history`` holds every earlier ``(observation, action)`` pair of the episode, oldest
    first; the prompt shows the last ``history_length`` of them (0 shows none) and says how
    many steps came before. ``admissible`` None means a free-form environment: then
    ``action_hint`` says what an action is (e.g. "a block of Python code").
    """
    steps_done = len(history)
    lines = [role]
    if task:
        lines[0] += f" Your task is to: {task.strip()}"
    shown = list(history)[-history_length:] if history_length > 0 else []
    if steps_done and shown:
        first = steps_done - len(shown) + 1
        lines.append(
            f"Prior to this step, you have already taken {steps_done} step(s). Below are the "
            f"most recent {len(shown)} observation(s) and the corresponding action(s) you took:"
        )
        for i, (obs, act) in enumerate(shown, start=first):
            lines.append(f"[Observation {i}: {obs.strip()!r}, Action {i}: {act.strip()!r}]")
        lines.append(
            f"You are now at step {steps_done + 1} and your current observation is: "
            f"{observation.strip()}"
        )
    else:
        lines.append(f"Your current observation is: {observation.strip()}")
    if admissible is not None:
        listed = ", ".join(repr(a) for a in admissible)
        lines.append(f"{ADMISSIBLE_MARK} [{listed}].")
        answer = "choose an admissible action for the current step"
    else:
        answer = f"write your action ({action_hint or 'free text'}) for the current step"
    lines.append("")
    lines.append("Now it's your turn to take an action.")
    lines.append(
        "You should first reason step-by-step about the current situation. This reasoning "
        "process MUST be enclosed within <think> </think> tags."
    )
    lines.append(
        f"Once you've finished your reasoning, you should {answer} and present it within "
        "<action> </action> tags."
    )
    return "\n".join(lines)


_MARK_TAIL = "our current observation is:"


def _last_observation_mark(prompt: str) -> int | None:
    """Where the last ``[Yy]our current observation is: ?`` ends (None without one): the
    regex's last match, found from the end with ``rfind`` (prompts are long, this is called
    on every line of a dump)."""
    stop = len(prompt)
    while (at := prompt.rfind(_MARK_TAIL, 0, stop)) > 0:
        if prompt[at - 1] in "Yy":
            end = at + len(_MARK_TAIL)
            return end + 1 if prompt[end:end + 1] == " " else end
        stop = at + len(_MARK_TAIL) - 1
    return None


def current_observation(prompt: str) -> str | None:
    """The current observation of a :func:`build_prompt` prompt (or a verl-agent one), without
    the task, the history or the admissible actions; None when ``prompt`` is not in that
    format. The last "current observation is:" counts: the history before it may quote old
    prompts.

    >>> current_observation(build_prompt("find it", "A hall.\\nA door.", ["go east"],
    ...                                  [("A cellar.", "go up")]))
    'A hall.\\nA door.'
    >>> current_observation("What is 2 + 2?") is None
    True
    """
    end = _last_observation_mark(prompt or "")
    if end is None:
        return None
    rest = prompt[end:]
    return rest[:_observation_end(rest)].strip()


def _observation_end(rest: str) -> int:
    """Where the first end phrase preceded by whitespace with a line break starts in
    ``rest`` (``len(rest)`` without one): :data:`_OBSERVATION_END`'s first match, up to the
    whitespace before it, which the caller strips."""
    cut = len(rest)
    for phrase in _END_PHRASES:
        # only a match that starts before the cut found so far counts: search no further
        at = rest.find(phrase, 0, cut - 1 + len(phrase))
        while at >= 0:
            if _line_break_before(rest, at):
                cut = at
                break
            at = rest.find(phrase, at + 1, cut - 1 + len(phrase))
    return cut


def _line_break_before(text: str, at: int) -> bool:
    """Whether the whitespace run that ends at ``at`` holds a line break (walked back a
    character at a time: the run is short, and copying what precedes it is not)."""
    while at and text[at - 1].isspace():
        at -= 1
        if text[at] == "\n":
            return True
    return False


def admissible_actions(prompt: str) -> list[str] | None:
    """The admissible actions a :func:`build_prompt` prompt (or a verl-agent one) lists for
    its current step: the last list after :data:`ADMISSIBLE_MARK`, read by
    :func:`read_action_list`; None when the prompt lists none in that form.

    >>> admissible_actions(build_prompt("t", "A hall.", ["go east", "take the 'key'"]))
    ['go east', "take the 'key'"]
    >>> admissible_actions(ADMISSIBLE_MARK + " ['look'\\n 'go to desk 1'].")
    ['look', 'go to desk 1']
    >>> admissible_actions(build_prompt("t", "A hall.", None)) is None
    True
    """
    at = (prompt or "").rfind(ADMISSIBLE_MARK)
    return None if at < 0 else read_action_list(prompt, at + len(ADMISSIBLE_MARK))


def read_action_list(text: str, start: int = 0) -> list[str] | None:
    """The actions of a bracketed list of quoted strings at ``text[start:]`` (after
    whitespace): ``['a', "b's"]`` (Python reprs, as :func:`build_prompt` writes them; JSON's
    double-quoted strings read the same), or verl-agent's ``['a'\\n 'b']``. None when no
    such list starts there.

    >>> read_action_list(' ["open drawer 1", "look"]')
    ['open drawer 1', 'look']
    >>> read_action_list("go east") is None
    True
    """
    pos = len(text) - len(text[start:].lstrip())
    if not text.startswith("[", pos):
        return None
    pos += 1
    actions = []
    while (found := _LISTED.match(text, pos)) is not None:
        quoted = found.group(1)
        actions.append(ast.literal_eval(quoted) if "\\" in quoted else quoted[1:-1])
        pos = found.end()
    rest = text[pos:pos + 64].lstrip(" \t\n,")
    return actions if rest.startswith("]") else None
