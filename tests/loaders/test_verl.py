"""verl rollout_data_dir dumps, written in verl 0.9.1's exact field layout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2po.errors import StepTableError
from loaders import (
    LoaderError,
    LoadWarning,
    LogFormatError,
    detect_format,
    load_steps,
    open_log,
    report_of,
)
from loaders.verl import default_action, last_env_message
from tests.loaders.builders import (
    SYSTEM,
    agent_loop_entries,
    legacy_entries,
    qwen_decoded,
    write_verl_dump,
)


@pytest.fixture
def dump(tmp_path):
    d = tmp_path / "rollout_data"
    write_verl_dump(d, 1, agent_loop_entries(1))
    write_verl_dump(d, 2, agent_loop_entries(2))
    return d


def test_layout_matches_verl(dump):
    first = json.loads((dump / "1.jsonl").read_text().splitlines()[0])
    assert list(first) == ["input", "output", "gts", "score", "step", "uid"]


def test_agent_loop_dump_maps_uid_session_index(dump):
    assert detect_format(dump) == "verl"
    log = open_log(dump)
    assert log.format == "verl"
    assert log.train_steps() == [1, 2]
    steps = log.load_step(1)
    entries = agent_loop_entries(1)
    assert len(steps) == len(entries)
    uid0 = entries[0]["uid"].rsplit("_", 2)[0]
    assert log.groups(1) == sorted({e["uid"].rsplit("_", 2)[0] for e in entries})
    traj = steps[steps["traj_id"] == f"{uid0}_1"].sort_values("t")
    assert traj["group_id"].unique().tolist() == [uid0]
    assert traj["t"].tolist() == list(range(len(traj)))
    # State key: the current observation, not the history.
    assert traj["state_key"].iloc[0] == "Your task is to: put a clean mug 0 on the shelf.\n" \
                                        "You are in room 0."
    assert traj["state_key"].iloc[1] == "You are in room 1."
    assert traj["action"].iloc[0] == "go to room 1"
    # Observation: the text the state key came from, next to the response; the whole
    # prompt (system message, history) kept as its own column.
    assert traj["observation"].tolist() == traj["state_key"].tolist()
    assert not traj["observation"].str.contains(SYSTEM, regex=False).any()
    assert traj["prompt"].iloc[1].startswith("system\n" + SYSTEM)
    assert traj["prompt"].iloc[1].endswith("assistant\n")
    assert traj["response"].iloc[0].endswith("<action>go to room 1</action>")
    assert (steps["train_step"] == 1).all()
    assert set(steps["episode_reward"]) == {0.0, 10.0}
    assert steps["is_action_valid"].all()
    assert any("is_action_valid absent" in n for n in report_of(steps).notes)
    assert set(report_of(steps).assumed) == {"is_action_valid"}


def test_states_merge_across_rollouts(dump):
    """Rollouts of one task reach the same room: their state keys are equal, so they merge."""
    steps = load_steps(dump, train_step=1)
    group = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    counts = group["state_key"].value_counts()
    assert counts.iloc[0] >= 2


def test_is_action_valid_from_reward_extras(tmp_path):
    write_verl_dump(tmp_path / "d", 3, agent_loop_entries(3, valid_extra=True))
    steps = load_steps(tmp_path / "d")
    assert (~steps["is_action_valid"]).sum() == (steps["action"] == "look").sum() > 0
    assert not any("is_action_valid" in n for n in report_of(steps).notes)


def test_legacy_dump_without_uid_groups_by_input(tmp_path):
    write_verl_dump(tmp_path / "d", 4, legacy_entries(4, prompts=2, n=3))
    steps = load_steps(tmp_path / "d")
    assert steps["group_id"].nunique() == 2
    assert steps.groupby("group_id")["traj_id"].nunique().tolist() == [3, 3]
    assert (steps["t"] == 0).all()
    assert set(steps["traj_id"]) == {f"req-4-{p}-{k}" for p in range(2) for k in range(3)}
    assert steps["state_key"].iloc[0] in ("What is 0 + 0?", "What is 1 + 1?")
    assert "acc" in steps.columns and "gts" in steps.columns
    assert any("no uid" in n for n in report_of(steps).notes)


def test_episode_reward_is_last_turn_score_when_turns_differ(tmp_path):
    entries = agent_loop_entries(1, prompts=1, sessions=1, turns=3)
    for e in entries[:-1]:
        e["score"] = 0.5  # a per-turn score, not copied from the final one
    write_verl_dump(tmp_path / "d", 1, entries)
    steps = load_steps(tmp_path / "d")
    assert (steps["episode_reward"] == entries[-1]["score"]).all()
    assert steps["step_reward"].tolist()[:-1] == [0.5] * (len(entries) - 1)
    assert any("differs between the turns" in n for n in report_of(steps).notes)


def test_state_regex_replaces_the_default_rule(tmp_path):
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    steps = load_steps(tmp_path / "d", state_regex=r"You are in (?P<state>room \d+)")
    assert set(steps["state_key"]) <= {f"room {i}" for i in range(6)}
    # the observation stays the default rule's current observation, the key's source text
    assert steps["observation"].str.startswith(("You are in room", "Your task is to",
                                                "Nothing happens")).all()


def test_state_regex_matching_nothing_is_an_error(tmp_path):
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    with pytest.raises(LogFormatError, match="matches no line"):
        load_steps(tmp_path / "d", state_regex=r"NOT THERE (\d+)")


def test_action_regex(tmp_path):
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    steps = load_steps(tmp_path / "d", action_regex=r"Turn (\d+)")
    assert set(steps["action"]) <= {"0", "1", "2", "3"}


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    path = write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    full = path.read_text()
    last_start = full.rstrip("\n").rfind("\n") + 1
    path.write_text(full[: last_start + 40])  # the dump is still being written
    with pytest.warns(LoadWarning, match="truncated last line"):
        steps = load_steps(tmp_path / "d")
    assert len(steps) == len(agent_loop_entries(1)) - 1
    report = report_of(steps)
    assert report.n_skipped == 1
    n_lines = full.count("\n")
    assert report.skips["truncated last line (a file still being written)"].where == \
        [f"{path}:{n_lines}"]


def test_a_malformed_line_costs_that_line_and_marks_the_trajectory_that_lost_it(tmp_path):
    entries = agent_loop_entries(1)  # prompt 0: session 0 with 3 turns, session 1 with 4
    path = write_verl_dump(tmp_path / "d", 1, entries)
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = lines[4][:30] + "\n"  # session 1's turn 1: its uid cut off
    path.write_text("".join(lines))
    with pytest.warns(LoadWarning, match=r"1\.jsonl:5"):
        steps = load_steps(tmp_path / "d")
    assert len(steps) == len(entries) - 1
    lost = steps[steps["incomplete"]]
    assert lost["traj_id"].nunique() == 1 and lost["traj_id"].iloc[0].endswith("_1")
    assert lost["t"].tolist() == [0, 2, 3]  # the uid's turn index: a gap, not renumbered
    assert not steps.loc[~steps["incomplete"], "traj_id"].isin(lost["traj_id"]).any()
    (note,) = [n for n in report_of(steps).notes if "malformed" in n]
    assert "line 5: trajectory" in note and "between two of its turns" in note
    with pytest.raises(LogFormatError, match=r"1\.jsonl:5: malformed JSON line"):
        load_steps(tmp_path / "d", strict=True)


def test_a_malformed_line_that_still_holds_its_uid_marks_that_trajectory(tmp_path):
    entries = agent_loop_entries(1)
    path = write_verl_dump(tmp_path / "d", 1, entries)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"output": "', '"output": ', 1)  # last turn of session 0
    path.write_text("".join(lines))
    with pytest.warns(LoadWarning, match=r"1\.jsonl:3"):
        steps = load_steps(tmp_path / "d")
    marked = steps.loc[steps["incomplete"], "traj_id"].unique().tolist()
    assert marked == [entries[2]["uid"].rsplit("_", 1)[0]]
    assert "its id is in the line" in " ".join(report_of(steps).notes)


def test_a_legacy_dump_loses_a_whole_trajectory_and_marks_none(tmp_path):
    path = write_verl_dump(tmp_path / "d", 1, legacy_entries(1))
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = "{oops\n"
    path.write_text("".join(lines))
    with pytest.warns(LoadWarning):
        steps = load_steps(tmp_path / "d")
    assert len(steps) == len(lines) - 1 and "incomplete" not in steps.columns
    assert "a whole trajectory (each line of this file is one)" in " ".join(
        report_of(steps).notes)


def test_missing_field_names_field_and_format(tmp_path):
    entries = agent_loop_entries(1)
    del entries[4]["score"]
    write_verl_dump(tmp_path / "d", 1, entries)
    with pytest.raises(LogFormatError, match=r"1\.jsonl:5: missing field\(s\) 'score'.*verl"):
        load_steps(tmp_path / "d", format="verl")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_or_inf_score_names_the_line(tmp_path, bad):
    entries = agent_loop_entries(1, prompts=1, sessions=1)
    for e in entries:
        e["score"] = bad  # json writes NaN / Infinity, as verl would
    write_verl_dump(tmp_path / "d", 1, entries)
    with pytest.raises(StepTableError, match="episode_reward") as err:
        load_steps(tmp_path / "d")
    assert "rows named by line number" in str(err.value)
    assert "1 row(s)" in str(err.value) or f"{len(entries)} row(s)" in str(err.value)


def test_empty_step_file_is_left_out_and_reported(tmp_path):
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    (tmp_path / "d" / "2.jsonl").write_text("")
    log = open_log(tmp_path / "d")
    assert log.train_steps() == [1]
    assert any("empty dump file" in n for n in log.report.notes)


def test_single_file_opens_as_one_step(tmp_path):
    path = write_verl_dump(tmp_path / "d", 7, agent_loop_entries(7))
    assert detect_format(path) == "verl"
    log = open_log(path)
    assert log.train_steps() == [7]
    assert len(log.groups(7)) == 2


def test_exact_duplicate_lines_are_skipped_and_counted(tmp_path):
    entries = agent_loop_entries(1)
    write_verl_dump(tmp_path / "d", 1, entries + entries[:2])  # a dump appended twice
    with pytest.warns(LoadWarning, match="exact duplicate"):
        steps = load_steps(tmp_path / "d")
    assert len(steps) == len(entries)
    assert report_of(steps).n_skipped == 2


def test_unicode_and_non_utf8(tmp_path):
    entries = agent_loop_entries(1, prompts=1, sessions=1)
    entries[0]["input"] = qwen_decoded([("system", SYSTEM), ("user", "Küche 🍳 厨房 מטבח")])
    path = write_verl_dump(tmp_path / "d", 1, entries)
    raw = path.read_bytes().replace(b"Nothing happens", b"Nothing\xff happens", 1)
    raw = raw.replace(b"room 1.", b"room \xfe1.", 1)
    path.write_bytes(raw)
    steps = load_steps(tmp_path / "d")
    assert steps["state_key"].iloc[0] == "Küche 🍳 厨房 מטבח"
    assert steps["state_key"].str.contains("\ufffd").any()
    assert any("invalid UTF-8" in n and "line 2" in n for n in report_of(steps).notes)


def test_last_env_message_rules():
    llama = ("<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nYou see a box.<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert last_env_message(llama) == "You see a box."
    chatml = "<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\nB<|im_end|>\n" \
             "<|im_start|>tool\n{\"result\": 3}<|im_end|>\n<|im_start|>assistant\n"
    assert last_env_message(chatml) == '{"result": 3}'
    assert last_env_message("no roles here") is None
    assert default_action("<action>a</action> then <action> b </action>") == "b"
    assert default_action("  plain  ") == "plain"


def test_no_role_lines_falls_back_to_whole_input(tmp_path):
    entries = [{"input": f"obs {i % 2}", "output": "x", "gts": None, "score": 0.0, "step": 1,
                "uid": f"u_{i}_0"} for i in range(4)]
    write_verl_dump(tmp_path / "d", 1, entries)
    steps = load_steps(tmp_path / "d")
    assert sorted(set(steps["state_key"])) == ["obs 0", "obs 1"]
    assert any("no chat role lines" in n for n in report_of(steps).notes)
    assert np.array_equal(steps["t"].to_numpy(), np.zeros(4))


def test_one_megabyte_observation(tmp_path):
    entries = agent_loop_entries(1, prompts=1, sessions=2)
    big = "You see: " + "a dusty shelf, " * 70_000  # ~1 MB
    for e in entries:
        e["input"] = qwen_decoded([("system", SYSTEM), ("user", big)])
    write_verl_dump(tmp_path / "d", 1, entries)
    steps = load_steps(tmp_path / "d")
    assert steps["state_key"].str.len().min() == len(big.strip()) > 1 << 20
    assert steps["state_key"].nunique() == 1


def _agent_prompt(observation: str, step: int) -> str:
    from g2po.agent_format import build_prompt

    history = [(f"Room {i}.", "go east") for i in range(step)]
    return build_prompt("find the coin", observation, ["go east", "look"], history)


@pytest.mark.parametrize("template", ["plain", "qwen", "qwen_decoded", "llama3",
                                      "llama3_decoded"])
def test_default_state_is_the_current_observation_in_common_templates(template):
    """The task, the history and the admissible actions differ between rollouts in one state;
    the default rule keeps only the current observation, in our own prompt and inside the last
    user message of Qwen's (ChatML) and Llama 3's templates, special tokens kept or skipped."""
    from loaders.verl import default_state

    observation = "-= Hall =-\nA door leads east; it's 'open'."
    user = _agent_prompt(observation, step=3)
    system = "You are a helpful assistant."
    rendered = {
        "plain": user,
        "qwen": f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                "<|im_start|>assistant\n",
        "qwen_decoded": f"system\n{system}\nuser\n{user}\nassistant\n",
        "llama3": f"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{system}"
                  f"<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "llama3_decoded": f"system\n\n{system}user\n\n{user}assistant\n\n",
    }[template]
    assert default_state(rendered) == observation
    # Same state, another history: same key.
    assert default_state(rendered.replace(user, _agent_prompt(observation, step=1))) == \
        observation


def test_default_state_outside_the_agent_format_is_the_last_message():
    from loaders.verl import default_state

    chatml = "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    assert default_state(chatml) == "What is 2 + 2?"
    assert default_state("no roles, no format") is None


def test_user_patterns_that_backtrack_or_do_not_compile_are_named(tmp_path):
    entries = agent_loop_entries(1)
    for e in entries:
        e["input"] = "a" * 40 + "!"  # `(a|aa)+$` needs ~2**40 steps here with Python's re
    write_verl_dump(tmp_path / "d", 1, entries)
    with pytest.raises(LogFormatError, match=r"1.jsonl:1: field 'input': state_regex "
                                             r"'\(a\|aa\)\+\$' took longer than"):
        load_steps(tmp_path / "d", state_regex=r"(a|aa)+$")
    with pytest.raises(LoaderError, match=r"action_regex: invalid regular expression '\('"):
        load_steps(tmp_path / "d", action_regex="(")


@pytest.mark.parametrize(("edit", "says"), [
    ({"uid": None}, "field 'uid' must be text (or a whole number), got null"),
    ({"uid": {"a": 1}}, "field 'uid' must be text (or a whole number), got dict"),
    ({"score": 10**400}, "field 'score' is not a number"),
    ({"score": "high"}, "field 'score' is not a number: 'high'"),
    ({"step": 10**400}, "field 'step' is not a whole number"),
    ({"step": 1.5}, "field 'step' is not a whole number: 1.5"),
])
def test_bad_field_values_name_line_and_field(tmp_path, edit, says):
    entries = agent_loop_entries(1)
    entries[2].update(edit)
    write_verl_dump(tmp_path / "d", 1, entries)
    with pytest.raises(LogFormatError, match=r"1.jsonl:3: ") as err:
        load_steps(tmp_path / "d")
    assert says in str(err.value)


_PIECES = ["user", "assistant", "system", "tool", "users", " ", "\t", "\n", "\r", "x",
           "<|im_start|>", "<|end_header_id|>", "observation", "你", "<", "|"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_the_last_message_is_found_where_the_role_regex_puts_it(pieces):
    from loaders.verl import _ENV_ROLES, _ROLE_LINE, _strip_end_tokens

    text = "".join(pieces)
    marks = [(m.group(1) or m.group(2), m.start(), m.end()) for m in _ROLE_LINE.finditer(text)]
    env = [i for i, mark in enumerate(marks) if mark[0] in _ENV_ROLES]
    expected = None
    if env:
        end = marks[env[-1] + 1][1] if env[-1] + 1 < len(marks) else len(text)
        expected = _strip_end_tokens(text[marks[env[-1]][2]:end])
    assert last_env_message(text) == expected


def test_each_step_has_its_dump_file_as_source(dump):
    log = open_log(dump, state_regex=r"(\w+)")
    step = log.train_steps()[0]
    assert log.step_source(step) == dump / f"{step}.jsonl"
    assert log.read_options["state_regex"] == r"(\w+)"
    assert list(log.step_columns(step, ["t", "group_id"]).columns) == ["t", "group_id"]


def test_a_turn_index_or_global_step_too_large_is_named_not_an_overflow(tmp_path):
    entries = agent_loop_entries(1)
    entries[2]["uid"] = entries[2]["uid"].rsplit("_", 1)[0] + "_1" + "0" * 30
    write_verl_dump(tmp_path / "d", 1, entries)
    with pytest.raises(LogFormatError, match=r"1\.jsonl:3: field 'uid' ends in turn index "
                                             r"10{19}… \(31 digits\), too large"):
        load_steps(tmp_path / "d")
    write_verl_dump(tmp_path / "e", 10**30, agent_loop_entries(1))
    with pytest.raises(LogFormatError, match=r"10{30}\.jsonl: the global step in the file "
                                             r"name \(31 digits\) is too large"):
        load_steps(tmp_path / "e")


def test_every_read_of_a_dump_skips_a_malformed_line_and_strict_refuses_even_from_cache(
        tmp_path):
    """What the Run overview, the Groups table and the explorer read of a dump (summaries, a
    group's rows, a few columns of every step, merge rates) skip one bad line; a strict open
    refuses it, also where the summaries come from the cache."""
    for step in (1, 2):
        write_verl_dump(tmp_path / "d", step, agent_loop_entries(step, prompts=3))
    path = tmp_path / "d" / "2.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = lines[5][:40] + "\n"
    path.write_text("".join(lines))
    log = open_log(tmp_path / "d")
    with pytest.warns(LoadWarning, match=r"2\.jsonl:6"):
        summary = log.summary()
        assert summary["n_steps"].tolist() == [len(lines), len(lines) - 1]
        group = log.groups(2)[0]
        assert log.load_group(2, group)["incomplete"].any()
        columns = dict(log.columns_of_steps([1, 2], ["group_id", "t"]))
    assert "incomplete" not in columns[1] and columns[2]["incomplete"].sum() == 3
    assert len(log.merge_rates()) == 2
    assert any("2.jsonl:6" in w for s in log.report.skips.values() for w in s.where)
    again = open_log(tmp_path / "d")  # summaries from the cache: the skip is still said
    assert again.summary()["n_steps"].tolist() == summary["n_steps"].tolist()
    assert any("2.jsonl: 1 malformed line(s) skipped" in n for n in again.report.notes)
    strict = open_log(tmp_path / "d", strict=True)
    with pytest.raises(LogFormatError, match=r"2\.jsonl:6: malformed JSON line"):
        strict.summary()
    with pytest.raises(LogFormatError, match=r"2\.jsonl:6: malformed JSON line"):
        strict.load_step(2)
