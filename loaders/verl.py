"""verl's ``trainer.rollout_data_dir`` dumps: ``{global_step}.jsonl``, one sample a line.

The layout, as verl 0.9.1 writes it (``RayPPOTrainer._write_generations`` and the v1 trainer's
``_log_rollout_data``): every line is a JSON object with

- ``input``: the decoded prompt (special tokens skipped), history included;
- ``output``: the decoded response;
- ``gts``: the ground truth (``None`` when absent), ``score``: the summed token-level score;
- ``step``: the global step;
- reward extras, one key each (e.g. ``acc``, ``is_action_valid``), and ``request_id`` when the
  batch had one;
- ``uid`` = ``{uid}_{session_id}_{index}`` in the v1 trainer's agent-loop runs: the prompt's
  uid, the rollout (``rollout.n`` sampling) and the turn. Earlier outputs of a multi-turn loop
  get the final output's score copied onto them.

Mapping to the step table: group = the prompt uid; trajectory = uid plus session; ``t`` = index;
episode reward = the score of the trajectory's last turn; ``is_action_valid`` from the reward
extra of that name (True when absent: the report says so, and records it as assumed, so that
summaries show invalid-action rates as unknown); ``task`` = ``gts`` where it is a short string
(:func:`task_labels`). The state key is the current
observation (:func:`default_state`): the last user / tool / environment message of ``input``
(chat templates: Qwen / ChatML, Llama 3), and inside it, when it is an agent prompt in the
paper's format (g2po's own, verl-agent's), only the current observation — not the task, the
history or the admissible actions, which differ between rollouts in the same state. Pass
``state_regex`` to extract it yourself. ``observation`` is that current observation by the
default rule (the whole input where the rule finds none), next to ``response`` (the output);
the whole ``input`` is kept as ``prompt``. Without ``uid`` (older verl, or the legacy trainer),
each line is one whole trajectory of one step, and lines with the same ``input`` form a group.

This module reads one dump file; a dump directory is opened by :mod:`loaders.verl_dump`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from g2po.agent_format import current_observation
from g2po.errors import UserPatternError
from g2po.steps import real_numbers
from g2po.user_regex import UserPattern, compile_user_pattern
from loaders.checks import finish_steps
from loaders.errors import LoaderError, LogFormatError
from loaders.incomplete import mark_incomplete
from loaders.lines import read_jsonl
from loaders.report import LoadReport

__all__ = [
    "VERL_FIELDS",
    "load_verl_file",
    "verl_steps",
    "last_env_message",
    "default_state",
    "extract_last",
    "default_action",
    "is_verl_record",
    "verl_step_files",
    "uid_of_line",
]

#: Fields every line of a verl dump has.
VERL_FIELDS = ("input", "output", "score")
_STEP_FILE = re.compile(r"^(\d+)\.jsonl$")
_ROLES = "system|user|assistant|tool|ipython|environment|observation|function"
_ROLE_LINE = re.compile(
    rf"(?:<\|im_start\|>|<\|start_header_id\|>)({_ROLES})(?:<\|end_header_id\|>)?"
    rf"|^[ \t]*({_ROLES})[ \t]*$",
    re.MULTILINE,
)
_ENV_ROLES = {"user", "tool", "ipython", "environment", "observation", "function"}
#: The second branch of ``_ROLE_LINE`` with the line break before it: a pattern that starts
#: with a literal, which ``re`` finds with a fast scan.
_ROLE_LINE_SPLIT = re.compile(rf"\n[ \t]*({_ROLES})[ \t]*(?=\n|\Z)")
_END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "</s>")
_ACTION_TAG = re.compile(r"<action>(.*?)</action>", re.DOTALL)
_KEY_FORMAT = re.compile(r"^(.*)_(\d+)_(\d+)$", re.DOTALL)
#: The longest ``gts`` taken as a task label (a task's name, not a reference answer).
MAX_TASK_CHARS = 200
#: The report's note (and :meth:`LoadReport.assume` reason) for a dump without validity.
VALIDITY_ASSUMED = ("is_action_valid absent from the dump's reward extras: every action "
                    "assumed valid; invalid-action rates are unknown")


def is_verl_record(record: dict) -> bool:
    """Whether a JSON object has the fields of a verl rollout dump line."""
    return all(k in record for k in VERL_FIELDS) and isinstance(record.get("input"), str)


def verl_step_files(path: str | Path) -> dict[int, Path]:
    """``{global_step: file}`` of a dump directory's ``{global_step}.jsonl`` files."""
    files = {}
    for entry in Path(path).iterdir():
        match = _STEP_FILE.match(entry.name)
        if match and entry.is_file():
            files[int(match.group(1))] = entry
    return files


def last_env_message(text: str) -> str | None:
    """The content of the last user / tool / environment message of a decoded chat prompt.

    Recognises the role markers of chat templates: a role alone on a line (ChatML / Qwen
    decoded with ``skip_special_tokens``), ``<|im_start|>user``, and Llama 3 headers when the
    special tokens were kept. (Llama 3 decoded without them runs roles into the text: pass a
    ``state_regex`` there.) None when the text has no role markers.

    >>> last_env_message("system\\nBe brief.\\nuser\\nYou see a box.\\nassistant\\n")
    'You see a box.'
    """
    # "<|" alone is a slow search (every "<" of a tag is a candidate); "|" is rare and fast
    if "|" in text and "<|" in text:
        marks = [(m.group(1) or m.group(2), m.start(), m.end())
                 for m in _ROLE_LINE.finditer(text)]
        for i in range(len(marks) - 1, -1, -1):
            if marks[i][0] in _ENV_ROLES:
                end = marks[i + 1][1] if i + 1 < len(marks) else len(text)
                return _strip_end_tokens(text[marks[i][2]:end])
        return None
    # Without special tokens only whole role lines mark roles (the regex's second branch).
    # This runs on every line of a dump: one split at the role lines (whose search skips
    # from line break to line break) is ~1.5x faster than the marks above or a loop over
    # the lines. parts = [text before, role, content, role, content, ...].
    parts = _ROLE_LINE_SPLIT.split("\n" + text)
    for i in range(len(parts) - 2, 0, -2):
        if parts[i] in _ENV_ROLES:
            return _strip_end_tokens(parts[i + 1])
    return None


def default_state(text: str) -> str | None:
    """The default state key of a decoded prompt: the current observation of the last
    environment message (or of the whole text when it has no role markers, e.g. a plain or a
    Llama 3 template decoded without its special tokens); the whole last message when it is
    not in the agent-prompt format; None when neither rule applies.

    >>> default_state("user\\nYour current observation is: A hall.\\n"
    ...               "Your admissible actions of the current situation are: ['look'].\\n"
    ...               "assistant\\n")
    'A hall.'
    """
    message = last_env_message(text)
    observation = current_observation(text if message is None else message)
    return observation if observation is not None else message


def _strip_end_tokens(text: str) -> str:
    """Strip whitespace and end-of-turn tokens (a loop, not a regex: linear on any input)."""
    text = text.strip()
    while text.endswith(_END_TOKENS):
        token = next(tok for tok in _END_TOKENS if text.endswith(tok))
        text = text[: -len(token)].rstrip()
    return text


def extract_last(pattern: UserPattern, text: str) -> str | None:
    """The last match of a user ``pattern`` (run under its time limit): its group ``state`` if
    named, else group 1 if any, else the whole match; None without a match."""
    found = pattern.last(text)
    if found is None:
        return None
    if "state" in pattern.groupindex:
        return found.group("state")
    return found.group(1) if pattern.groups else found.group(0)


def default_action(output: str) -> str:
    """The text of the last ``<action>…</action>`` of a response, else the stripped response."""
    tags = _ACTION_TAG.findall(output)
    return tags[-1].strip() if tags else output.strip()


def _user_extract(pattern: UserPattern, text: str, source: str, line: int,
                  field: str) -> str | None:
    """:func:`extract_last`, with a runaway match reported at its file, line and field."""
    try:
        return extract_last(pattern, text)
    except UserPatternError as err:
        raise LogFormatError(f"{source}:{line}: field {field!r}: {err}") from None


def _compile(regex: str | re.Pattern | UserPattern | None, name: str) -> UserPattern | None:
    """A user's pattern, run with a time limit (:mod:`g2po.user_regex`); a pattern compiled
    with ``re`` keeps its source and flags."""
    if regex is None or isinstance(regex, UserPattern):
        return regex
    try:
        if isinstance(regex, re.Pattern):
            return UserPattern(regex.pattern, name, regex.flags & ~re.UNICODE | re.DOTALL)
        return compile_user_pattern(regex, name)
    except UserPatternError as err:
        raise LoaderError(str(err)) from None


def verl_steps(
    records: list[dict],
    lines: list[int],
    source: str,
    report: LoadReport,
    *,
    train_step: int | None = None,
    state_regex: str | re.Pattern | None = None,
    action_regex: str | re.Pattern | None = None,
) -> pd.DataFrame:
    """Map the parsed lines of one dump file onto step rows (indexed by line number).

    Raises :class:`LogFormatError` naming the line and field when a line lacks ``input``,
    ``output`` or ``score``, or a user regex matches no line at all.
    """
    _check_lines(records, lines, source)
    frame = pd.DataFrame.from_records(records, index=lines)
    inputs = frame["input"].tolist()
    outputs = frame["output"].tolist()
    score = _number_field(frame, "score", source)
    group, traj, t = _identity(frame, inputs, source, report)
    states, observations = _state_keys(frame.index, inputs, state_regex, source, report)
    steps = pd.DataFrame({
        "group_id": group,
        "traj_id": traj,
        "t": t,
        "state_key": states,
        "action": _actions(frame.index, outputs, action_regex, source, report),
        "observation": observations,
        "response": outputs,
        "prompt": inputs,
    }, index=frame.index)
    add_rewards(steps, score.to_numpy(dtype=np.float64), source, report)
    if "is_action_valid" in frame.columns:
        steps["is_action_valid"] = frame["is_action_valid"]
    else:
        steps["is_action_valid"] = True
        report.assume("is_action_valid", VALIDITY_ASSUMED)
    step_field = _number_field(frame, "step", source, whole=True) if "step" in frame.columns \
        else None
    if train_step is not None:
        steps["train_step"] = np.int64(train_step)
        if step_field is not None and (step_field != train_step).any():
            report.note(step_disagrees(source))
    elif step_field is not None and step_field.notna().all():
        steps["train_step"] = step_field.to_numpy(dtype=np.int64)

    # Reward extras and other fields ride along; names the step table uses are prefixed.
    for col in frame.columns:
        if col in ("input", "output", "score", "step", "is_action_valid"):
            continue
        steps["verl_uid" if col == "uid" else f"verl_{col}" if col in steps.columns
              else col] = frame[col]
    if "gts" in frame.columns and "task" not in steps.columns:
        labels = task_labels(frame["gts"].tolist())
        if any(label is not None for label in labels):
            steps["task"] = labels
    return steps


def _check_lines(records: list[dict], lines: list[int], source: str) -> None:
    """Every line has verl's fields, text where text is meant; else an error naming it."""
    for rec, line in zip(records, lines, strict=True):
        missing = [k for k in VERL_FIELDS if k not in rec]
        if missing:
            raise LogFormatError(
                f"{source}:{line}: missing field(s) {', '.join(map(repr, missing))}; a verl "
                "rollout dump line holds input, output, score, step (and uid in agent-loop "
                "runs), as trainer.rollout_data_dir writes it"
            )
        for key in ("input", "output"):
            if not isinstance(rec[key], str):
                raise LogFormatError(f"{source}:{line}: field {key!r} must be text, got "
                                     f"{type(rec[key]).__name__}")
        if "uid" in rec and (not isinstance(rec["uid"], str | int) or isinstance(rec["uid"], bool)):
            raise LogFormatError(f"{source}:{line}: field 'uid' must be text (or a whole "
                                 f"number), got {_json_kind(rec['uid'])}")


def _identity(frame: pd.DataFrame, inputs: list[str], source: str, report: LoadReport
              ) -> tuple[list[str], list[str], np.ndarray]:
    """Each line's group, trajectory and turn: from agent-loop uids, else (older dumps) each
    line a trajectory of one step, grouped by uid or by its input."""
    keys = [str(k) for k in frame["uid"].tolist()] if "uid" in frame.columns else None
    split = split_keys(keys, frame.index, source) if keys is not None else None
    if split is not None:
        group, traj, t = split
    else:
        if keys is not None:
            group = keys
            report.note("uid is not '{uid}_{session}_{index}': each line is one trajectory of "
                        "one step, grouped by uid")
        else:
            group = ["prompt-" + hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
                     for text in inputs]
            report.note("no uid field (older verl): each line is one trajectory of one step; "
                        "lines with the same input form a group")
        gser = pd.Series(group, index=frame.index)
        if "request_id" in frame.columns:
            traj = frame["request_id"].astype(str).tolist()
        else:
            traj = ("r" + gser.groupby(gser, sort=False).cumcount().astype(str)).tolist()
        t = np.zeros(len(frame), dtype=np.int64)
    return group, traj, t


def _state_keys(lines: pd.Index, inputs: list[str], state_regex, source: str,
                report: LoadReport) -> tuple[list[str], list[str]]:
    """Each line's state key (the default rule's current observation, or ``state_regex``'s
    match) and observation (the default rule's text: what the policy saw this turn)."""
    state_rx = _compile(state_regex, "state_regex")
    states: list[str] = []
    observations: list[str] = []  # the default rule's text: what the policy saw this turn
    missed: list[int] = []
    for line, text in zip(lines, inputs, strict=True):
        seen = default_state(text)
        key = _user_extract(state_rx, text, source, line, "input") if state_rx is not None \
            else seen
        seen = text.strip() if seen is None else seen
        if key is None:
            missed.append(line)
            key = seen
        states.append(key)
        observations.append(seen)
    if missed:
        if state_rx is not None and len(missed) == len(lines):
            raise LogFormatError(f"{source}: state_regex {state_rx.pattern!r} matches no line's "
                                 "input; fix the pattern")
        rule = (f"state_regex {state_rx.pattern!r} did not match" if state_rx is not None
                else "no chat role lines (user/tool/…) and no agent-prompt observation found "
                "in input")
        report.note(f"{source}: {rule} on {len(missed)} line(s) (first: line {missed[0]}); "
                    "state key there = " + ("the default rule or " if state_rx else "")
                    + "the whole input")
    return states, observations


def _actions(lines: pd.Index, outputs: list[str], action_regex, source: str,
             report: LoadReport) -> list[str]:
    """Each line's action: the last ``<action>`` of its output, or ``action_regex``'s match
    (the whole output where it matches nothing)."""
    action_rx = _compile(action_regex, "action_regex")
    if action_rx is None:
        actions = [default_action(o) for o in outputs]
    else:
        actions = [_user_extract(action_rx, o, source, line, "output")
                   for line, o in zip(lines, outputs, strict=True)]
        n_missed = sum(a is None for a in actions)
        if n_missed:
            report.note(f"{source}: action_regex matched no action on {n_missed} line(s); "
                        "action there = the whole output")
        actions = [o.strip() if a is None else a for a, o in zip(actions, outputs, strict=True)]
    return actions


def split_keys(keys: list[str], lines: Sequence | None = None, source: str = ""
               ) -> tuple[list[str], list[str], np.ndarray] | None:
    """Group, trajectory and turn of agent-loop row keys ``{uid}_{session}_{index}``: the
    prompt uid; uid plus session; the index, (n,) int64. None unless every key has that form;
    a :class:`LogFormatError` naming the line (``lines``: each key's line number in
    ``source``) when an index is too large to be a turn number.
    """
    parts = [k.rsplit("_", 2) for k in keys]  # the regex's answer where all parts are digits
    if all(len(p) == 3 and p[1].isdecimal() and p[2].isdecimal() for p in parts):
        group, traj = [p[0] for p in parts], [f"{p[0]}_{p[1]}" for p in parts]
        index = [p[2] for p in parts]
    else:
        parsed = [_KEY_FORMAT.match(k) for k in keys]
        if not all(parsed):
            return None
        group = [m.group(1) for m in parsed]
        traj = [f"{m.group(1)}_{m.group(2)}" for m in parsed]
        index = [m.group(3) for m in parsed]
    return group, traj, _turn_indices(index, range(len(keys)) if lines is None else lines,
                                      source)


def task_labels(values: list) -> list[str | None]:
    """The task label of each line from its ``gts``: the text when it is a string of at most
    :data:`MAX_TASK_CHARS` characters on one line (the bundled environments write the task's
    name there), else None (a number, a list, a long reference answer label nothing)."""
    return [v if isinstance(v, str) and 0 < len(v) <= MAX_TASK_CHARS and "\n" not in v
            else None for v in values]


def add_rewards(steps: pd.DataFrame, score: np.ndarray, source: str,
                report: LoadReport) -> None:
    """Set ``step_reward`` (each line's score, (n,) float64) and ``episode_reward`` (the score
    of the trajectory's last turn: verl copies it onto the earlier turns; when it did not,
    the per-turn scores stay in step_reward, and the report says so) on ``steps`` (which has
    ``traj_id`` and ``t``)."""
    steps["step_reward"] = score
    last_score = steps.sort_values("t").groupby("traj_id", sort=False)["step_reward"].last()
    steps["episode_reward"] = steps["traj_id"].map(last_score).to_numpy(dtype=np.float64)
    varies = steps["episode_reward"].to_numpy() != steps["step_reward"].to_numpy()
    varies &= ~np.isnan(steps["step_reward"].to_numpy())
    if varies.any():
        report.note(f"{source}: score differs between the turns of {int(varies.sum())} "
                    "line(s); episode_reward = the last turn's score, per-turn scores in "
                    "step_reward")


def step_disagrees(source: str) -> str:
    """The note for a file whose lines' ``step`` is not the global step of its name."""
    return (f"{source}: field 'step' disagrees with the file name on some lines; the file "
            "name's global step is used")


#: Digits of the largest turn index a uid may carry (int64 holds 18 digits whole).
_MAX_TURN_DIGITS = 18


def _turn_indices(indices: list[str], lines: Sequence, source: str) -> np.ndarray:
    """(n_lines,) int64: the turn indices (digits) ending ``{uid}_{session}_{index}`` uids; a
    :class:`LogFormatError` naming the line when one is too large to be a turn number."""
    long = max(map(len, indices), default=0) > _MAX_TURN_DIGITS
    for index, line in zip(indices, lines, strict=True) if long else ():
        if len(index.lstrip("0")) > _MAX_TURN_DIGITS:
            shown = index if len(index) <= 24 else f"{index[:20]}… ({len(index)} digits)"
            raise LogFormatError(f"{source}:{line}: field 'uid' ends in turn index {shown}, "
                                 "too large for a turn number; the uid must be "
                                 "'{uid}_{session}_{index}' with index 0, 1, …")
    return np.array([int(i) for i in indices], dtype=np.int64)


def _json_kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _number_field(frame: pd.DataFrame, field: str, source: str,
                  whole: bool = False) -> pd.Series:
    """A numeric field of every line (NaN where null); :class:`LogFormatError` naming the first
    line whose value is text, complex, too large, or (``whole``) not a whole number."""
    values, bad = real_numbers(frame[field])
    masks = list(bad.values())
    if whole:
        masks.append(np.isfinite(values) & ((values != np.round(values))
                                            | (np.abs(values) > 2.0**62)))
    for mask in masks:
        if mask.any():
            line = frame.index[mask][0]
            kind = "a whole number" if whole else "a number"
            raise LogFormatError(f"{source}:{line}: field {field!r} is not {kind}: "
                                 f"{_short(frame.at[line, field])}")
    return pd.Series(values, index=frame.index)


def _short(value, width: int = 60) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= width else text[:width] + "…"


def check_global_step(path: str | Path, train_step: int | None) -> None:
    """A :class:`LogFormatError` for a dump file named for a global step beyond int64."""
    if train_step is not None and train_step > np.iinfo(np.int64).max:
        raise LogFormatError(f"{path}: the global step in the file name ({len(str(train_step))} "
                             "digits) is too large for a training step")


def load_verl_file(path: str | Path, report: LoadReport | None = None, *,
                   train_step: int | None = None, strict: bool = False,
                   **options) -> pd.DataFrame:
    """One ``{global_step}.jsonl`` file as a validated step table (``options``:
    ``state_regex``, ``action_regex``). A malformed line is skipped and its trajectory marked
    incomplete (:mod:`loaders.incomplete`; the line's ``uid`` tells it where the line still
    holds one); ``strict`` makes it an error naming the line."""
    path = Path(path)
    report = report or LoadReport(str(path), "verl")
    if train_step is None:
        match = _STEP_FILE.match(path.name)
        train_step = int(match.group(1)) if match else None
    check_global_step(path, train_step)
    read = read_jsonl(path, report, strict=strict)
    if not read.rows:
        raise LogFormatError(f"{path}: no complete line to read")
    steps = verl_steps(read.rows, read.numbers, str(path), report, train_step=train_step,
                       **options)
    steps = mark_incomplete(steps, read.malformed, str(path), report, identify=uid_of_line)
    return finish_steps(steps, str(path), report, "line")


_UID_FIELD = re.compile(r'"uid"\s*:\s*("(?:[^"\\]|\\.)*")')


def uid_of_line(text: str) -> tuple[str, str] | None:
    """The group and trajectory of a malformed dump line, from an agent-loop ``uid``
    (``{uid}_{session}_{index}``) its text still holds intact; None without one.

    >>> uid_of_line('{"input": "user\\nA hall", "output": "go", "uid": "u7_1_3", "sco')
    ('u7', 'u7_1')
    """
    found = _UID_FIELD.findall(text)
    if not found:
        return None
    try:
        uid = json.loads(found[-1])
    except ValueError:
        return None
    try:
        split = split_keys([uid]) if isinstance(uid, str) else None
    except LogFormatError:  # a turn index too large: no trajectory of the file has it
        return None
    return None if split is None else (split[0][0], split[1][0])

