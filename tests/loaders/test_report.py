"""The load report: counts every skipped row, keeps a few places, warns once per reason."""

from __future__ import annotations

import pytest

from loaders import LoadReport, LoadWarning


def test_skip_counts_all_and_keeps_five_places():
    report = LoadReport("f.jsonl", "jsonl")
    for i in range(8):
        report.skip("duplicate", f"f.jsonl:{i}")
    report.skip("truncated", "f.jsonl:9")
    assert report.n_skipped == 9
    assert report.skips["duplicate"].where == [f"f.jsonl:{i}" for i in range(5)]
    assert str(report.skips["duplicate"]).endswith("f.jsonl:4 and 3 more)")
    with pytest.warns(LoadWarning) as caught:
        report.warn()
    assert len(caught) == 2


def test_merge_and_notes_once():
    a, b = LoadReport(), LoadReport()
    a.note("x")
    a.note("x")
    b.note("x")
    b.note("y")
    b.skip("r", "w", count=3)
    a.merge(b)
    assert a.notes == ["x", "y"] and a.n_skipped == 3
    assert a.lines()[0].startswith("3 row(s) skipped: r")


def test_assumed_columns_travel_with_the_report():
    a = LoadReport("d", "verl")
    a.assume("is_action_valid", "no validity: assumed valid")
    assert a.assumed == {"is_action_valid": "no validity: assumed valid"}
    assert a.notes == ["no validity: assumed valid"]  # said once, also as a note
    back = LoadReport.from_dict(a.to_dict())
    assert back.assumed == a.assumed
    merged = LoadReport()
    merged.merge(back)
    assert merged.assumed == a.assumed
    assert LoadReport.from_dict({"notes": []}).assumed == {}  # reports written before


def test_an_assumed_column_is_a_note_kept_by_column_through_merges_and_attrs():
    a, b = LoadReport("a"), LoadReport("b")
    b.assume("is_action_valid", "is_action_valid absent: every action assumed valid")
    b.assume("is_action_valid", "said twice")
    assert b.assumed == {"is_action_valid": "is_action_valid absent: every action assumed "
                                            "valid"}
    assert b.notes == ["is_action_valid absent: every action assumed valid", "said twice"]
    a.merge(b)
    assert a.assumed == b.assumed
    assert LoadReport.from_dict(a.to_dict()).assumed == a.assumed
