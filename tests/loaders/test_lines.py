"""JSON lines with the failure modes of files still being written."""

from __future__ import annotations

import pytest

from loaders import LoadReport, LogFormatError
from loaders.lines import MALFORMED, TRUNCATED, JsonLines, decode_text, read_jsonl


def test_rows_and_line_numbers_skip_blank_lines(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n  \n{"a": 2}\n')
    read = read_jsonl(path, LoadReport())
    assert read.rows == [{"a": 1}, {"a": 2}] and read.numbers == [1, 4] and not read.malformed


def test_last_line_without_newline_that_parses_is_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    report = LoadReport()
    assert read_jsonl(path, report).rows == [{"a": 1}, {"a": 2}] and not report.skips


def test_unfinished_last_line_is_counted(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"a": ')
    report = LoadReport()
    assert read_jsonl(path, report).rows == [{"a": 1}]
    assert report.skips[TRUNCATED].count == 1 and report.skips[TRUNCATED].where == [f"{path}:2"]


@pytest.mark.parametrize(("bad", "says"), [
    ('{"a": ', "malformed JSON line"), ("[1, 2]", "expected one JSON object per line"),
    ('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply"),
])
def test_a_malformed_line_is_skipped_counted_and_handed_back_or_refused_when_strict(
        tmp_path, bad, says):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n' + bad + '\n{"a": 3}\n')
    report = LoadReport()
    read = read_jsonl(path, report)
    assert read.rows == [{"a": 1}, {"a": 3}] and read.numbers == [1, 3]
    assert read.malformed == {2: bad}
    assert report.skips[MALFORMED].count == 1 and report.skips[MALFORMED].where == [f"{path}:2"]
    with pytest.raises(LogFormatError, match=rf"a\.jsonl:2: {says}"):
        read_jsonl(path, LoadReport(), strict=True)


def test_a_file_none_of_whose_lines_reads_is_an_error_naming_the_first(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('not json\n{"a": \n')
    with pytest.raises(LogFormatError, match=r"a\.jsonl:1: malformed JSON line"):
        read_jsonl(path, LoadReport())


def test_only_an_unfinished_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": ')
    report = LoadReport()
    assert read_jsonl(path, report) == JsonLines([], [])
    assert report.n_skipped == 1


def test_empty_and_whitespace_files(tmp_path):
    for content in ("", "\n\n  \n"):
        path = tmp_path / "a.jsonl"
        path.write_text(content)
        with pytest.raises(LogFormatError, match="the file is empty"):
            read_jsonl(path, LoadReport())


def test_decode_text_names_bad_lines():
    report = LoadReport()
    text = decode_text(b"ok\nbad \xc3\x28 here\nfine\n\xff", "f.txt", report)
    assert text.splitlines() == ["ok", "bad \ufffd( here", "fine", "\ufffd"]
    assert len(report.notes) == 1
    assert "line 2 byte 0xc3 at column 5" in report.notes[0] and "line 4 byte 0xff" in \
        report.notes[0]


def test_lone_surrogates_are_replaced_and_noted(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": "x\\ud800y", "b": "\\ud83d\\ude00"}\n{"a": "\\udfff"}\n')
    report = LoadReport()
    rows = read_jsonl(path, report).rows
    assert rows == [{"a": "x\ufffdy", "b": "\U0001f600"}, {"a": "\ufffd"}]
    (note,) = report.notes
    assert "lone UTF-16 surrogates" in note and "first at line 1, field 'a'" in note
