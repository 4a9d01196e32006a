"""The bad-input corpus (tests/loaders/bad_inputs.py) through `g2po validate`,
`g2po advantages` and `loaders.load_steps`, each run in its own process under a time and
memory limit: no traceback, no hang, no internal error, every message naming what is wrong,
nothing silently changed, nothing read without saying what was left out."""

from __future__ import annotations

import os

from tests.loaders.bad_inputs import COMMANDS, Case, counts, run_case, run_corpus
from tests.loaders.builders import agent_loop_entries, write_verl_dump


def test_every_bad_input_gets_a_clear_error_and_valid_ones_read_back_unchanged(tmp_path):
    outcomes = run_corpus(tmp_path)
    wrong = [f"{o.kind} {o.command} {o.case}: {o.detail}" for o in outcomes
             if o.kind not in ("clear", "accepted", "said")]
    assert not wrong, "\n".join(wrong)
    tally = counts(outcomes)
    assert tally["inputs"] >= 90 and tally["traceback"] == tally["hang"] == 0
    assert {o.command for o in outcomes} == set(COMMANDS)  # the CLI and the library
    # read though not quite a run: only where the output said so (what it read, left out);
    # and one malformed line in a text log: read without it, naming it (refused with
    # --strict, the case of the same name with ", --strict")
    malformed = {"JSONL line that is a array", "JSONL line that is a number",
                 "JSONL line that is a string", "JSONL line that is a malformed",
                 "one row wider than the header", "metrics.jsonl deep",
                 "metrics.jsonl not an object"}
    assert {o.case for o in outcomes if o.kind == "said"} <= {
        "rollouts/ of a plain table, no run.json", "rollouts/ holding a misnamed step file",
        *malformed}
    strict = {o.case.removesuffix(", --strict") for o in outcomes
              if o.case.endswith(", --strict") and o.kind == "clear"}
    assert strict == malformed
    # "accepted" only for the cases built valid (tricky text, a stale checkpoint folder)
    accepted = {o.case for o in outcomes if o.kind == "accepted"}
    assert accepted == {"tricky text in our own CSV", "tricky text in JSON lines",
                        "tricky text in Parquet", "run with a stale checkpoint folder",
                        "lone surrogate in text (replaced, noted)",
                        "NUL characters in CSV text (text, kept)"}


def test_the_real_entry_point_in_a_fresh_interpreter(tmp_path):
    """A few cases through `python -m g2po` itself (the corpus forks a preloaded server)."""
    os.mkfifo(tmp_path / "pipe.jsonl")
    entries = agent_loop_entries(1)
    for e in entries:
        e["input"] = "a" * 40 + "!"
    write_verl_dump(tmp_path / "dump", 1, entries)
    entries = agent_loop_entries(1)
    entries[1]["uid"] = entries[1]["uid"].rsplit("_", 1)[0] + "_1" + "0" * 30
    write_verl_dump(tmp_path / "big_uid", 1, entries)
    cases = [Case("FIFO", str(tmp_path / "pipe.jsonl")),
             Case("catastrophic --state-regex", str(tmp_path / "dump"),
                  args=["--state-regex", "(a|aa)+$"], names=["state_regex"]),
             Case("verl uid whose turn index is 1e30", str(tmp_path / "big_uid"),
                  all_names=["1.jsonl:2", "'uid'"])]
    for case in cases:
        for command in case.commands:
            outcome = run_case(case, command, tmp_path, exec_=True)
            assert outcome.kind == "clear", outcome
