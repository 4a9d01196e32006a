"""The bad-input corpus (tests/loaders/bad_inputs.py) through `g2po validate` and
`g2po advantages`, each run in its own process under a time and memory limit: no traceback,
no hang, no internal error, every message naming what is wrong, nothing silently changed."""

from __future__ import annotations

from tests.loaders.bad_inputs import counts, run_case, run_corpus


def test_every_bad_input_gets_a_clear_error_and_valid_ones_read_back_unchanged(tmp_path):
    outcomes = run_corpus(tmp_path)
    wrong = [f"{o.kind} {o.command} {o.case}: {o.detail}" for o in outcomes
             if o.kind not in ("clear", "accepted")]
    assert not wrong, "\n".join(wrong)
    tally = counts(outcomes)
    assert tally["inputs"] >= 80 and tally["traceback"] == tally["hang"] == 0
    # "accepted" only for the cases built valid (tricky text, a stale checkpoint folder)
    accepted = {o.case for o in outcomes if o.kind == "accepted"}
    assert accepted == {"tricky text in our own CSV", "tricky text in JSON lines",
                        "tricky text in Parquet", "run with a stale checkpoint folder",
                        "lone surrogate in text (replaced, noted)"}


def test_the_real_entry_point_in_a_fresh_interpreter(tmp_path):
    """A few cases through `python -m g2po` itself (the corpus forks a preloaded server)."""
    from tests.loaders.bad_inputs import build_corpus

    cases = {c.name: c for c in build_corpus(tmp_path / "corpus")}
    for name in ("FIFO", "catastrophic --state-regex", "step-000003 holding rows of step 42"):
        for command in cases[name].commands:
            outcome = run_case(cases[name], command, tmp_path, exec_=True)
            assert outcome.kind == "clear", (name, command, outcome)
