"""Special and huge files: refused before opening, bounded sniffing, bounded lines."""

from __future__ import annotations

import os

import pytest

from loaders import NoLogFoundError, detect_format, load_steps
from loaders.discover import find_logs
from loaders.errors import LogFormatError
from loaders.files import check_line_lengths, read_bytes, read_prefix, regular_file
from loaders.lines import read_jsonl
from loaders.report import LoadReport
from tests.loaders.builders import step_table


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "steps.jsonl"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    for read in (detect_format, load_steps, read_prefix, read_bytes):
        with pytest.raises(NoLogFoundError, match="a FIFO"):
            read(fifo)


def test_devices_are_refused():
    with pytest.raises(NoLogFoundError, match="character device"):
        detect_format("/dev/zero")
    with pytest.raises(NoLogFoundError, match="character device"):
        load_steps("/dev/zero", "jsonl")


def test_regular_file_follows_links_and_names_loops(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("a\n")
    (tmp_path / "link.csv").symlink_to(target)
    assert regular_file(tmp_path / "link.csv") == tmp_path / "link.csv"
    (tmp_path / "loop.csv").symlink_to(tmp_path / "loop.csv")
    with pytest.raises(NoLogFoundError, match="loop.csv: cannot be read"):
        regular_file(tmp_path / "loop.csv")


def test_a_line_longer_than_the_limit_is_an_error_naming_it(tmp_path):
    data = b"short\n" + b"x" * 50 + b"\nshort\n"
    check_line_lengths(data, "f", max_line=50)  # exactly the limit is fine
    with pytest.raises(LogFormatError, match=r"f:2: line longer than"):
        check_line_lengths(data, "f", max_line=49)
    path = tmp_path / "long.jsonl"
    path.write_bytes(data)
    with pytest.raises(LogFormatError, match="long.jsonl:2"):
        read_bytes(path, max_line=10)


def test_format_detection_reads_a_bounded_prefix(tmp_path):
    # a first line far longer than the sniffed prefix: still told from its start
    path = tmp_path / "big.jsonl"
    path.write_text('{"group_id": "' + "g" * (3 << 20) + '"}\n')
    assert detect_format(path) == "jsonl"


def test_deeply_nested_json_is_a_malformed_line_named_by_its_number(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": 1}\n{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert list(read_jsonl(path, LoadReport()).malformed) == [2]
    with pytest.raises(LogFormatError, match=r"deep.jsonl:2: JSON nested too deeply"):
        read_jsonl(path, LoadReport(), strict=True)


@pytest.mark.parametrize(("name", "content", "why"), [
    ("blob.parquet", b"not parquet at all", "not a Parquet file"),
    ("x.jsonl", b"hello world\n", "not JSON lines"),
    ("x.json", b'{\n  "a": 1\n}\n', "a JSON document"),
    ("x.csv", bytes(range(128, 256)) * 4, "binary content"),
    ("x", b"a,b\x00,c\n", "binary content"),
])
def test_junk_with_a_log_name_is_no_log(tmp_path, name, content, why):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(NoLogFoundError, match=why):
        detect_format(tmp_path / name)


def test_discovery_lists_exactly_what_validate_accepts(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "blob.parquet").write_bytes(os.urandom(256))
    (tmp_path / "sub" / "x.jsonl").write_bytes(b"\x93junk\n")
    with pytest.raises(NoLogFoundError, match="no logs found"):
        find_logs(tmp_path)
    step_table().to_csv(tmp_path / "sub" / "real.csv", index=False)
    logs, notes = find_logs(tmp_path)
    assert logs == {tmp_path / "sub" / "real.csv": "csv"}
    assert any("blob.parquet: not a Parquet file" in n for n in notes)
    assert any("x.jsonl" in n for n in notes)
