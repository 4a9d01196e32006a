"""A corpus of hostile and broken logs, generated on disk (no committed blobs), and a runner
that feeds each one to every entry point — ``g2po validate``, ``g2po advantages`` and the
library's ``loaders.load_steps`` — each in its own process under a time and memory limit.

Each case says what a correct answer looks like: a clear error (exit 1 or 2, no traceback, the
message naming the file or option at fault), or, for the tricky-but-valid cases, a clean read
whose rows come back exactly as written (no silent change), or, for a log that can be read but
is not quite what it looks like, a read that says so (``says``). Run it alone for the counts::

    PYTHONPATH=. .venv/bin/python -m tests.loaders.bad_inputs
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from loaders import RunWriter
from loaders.rundir import step_path
from loaders.tables import write_csv
from tests.loaders.builders import agent_loop_entries, rewrite_footer, step_table, write_verl_dump

#: Limits of one command: wall-clock seconds (past it: a hang) and address space.
TIME_LIMIT_S = 60
MEMORY_LIMIT_BYTES = 2 << 30
#: ``load_steps``: :func:`loaders.load_steps` called as a library user would (:func:`_library`).
COMMANDS = ("validate", "advantages", "load_steps")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Case:
    """One input: ``path`` given to each command with ``args``; ``names`` are words one of
    which a clear message must hold (default: the file's name), ``all_names`` words every one
    of which it must hold (file, line and field); ``valid`` cases must be read without error
    and give back ``expect`` (the rows written) unchanged; ``says``: the input may be read
    (exit 0) only if the output holds every one of these words (what it read, what it left
    out), else it must be refused clearly."""

    name: str
    path: str
    args: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    valid: bool = False
    expect: pd.DataFrame | None = None
    commands: tuple[str, ...] = COMMANDS
    all_names: list[str] = field(default_factory=list)
    says: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    case: str
    command: str
    kind: str  # clear | accepted | said | traceback | internal | hang | unclear | changed |
    #            refused | silent
    seconds: float
    detail: str = ""


# -- building the corpus ----------------------------------------------------------------------

def _jsonl(path: Path, rows: list, raw: str | None = None) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows) if raw is None else raw
    path.write_text(text, encoding="utf-8")
    return path


def _run(root: Path, name: str, steps: int = 2) -> Path:
    writer = RunWriter(root / name, {"env": "demo"})
    for s in range(1, steps + 1):
        writer.write_step(s, step_table(groups=3, trajs=3, seed=s))
    return root / name


def _tricky_text() -> pd.DataFrame:
    """Valid rows whose text trips naive readers: carriage returns, quotes, NA-like words,
    leading zeros, formulas, non-ASCII."""
    frame = step_table(groups=2, trajs=3)
    texts = ["a\rb", 'say "hi", then\nleave', "None", "NA", "=1+1", "café ☕ 東京", "\tx ",
             "007", "null", ""]
    frame["action"] = [texts[i % len(texts)] or "empty?" for i in range(len(frame))]
    frame["group_id"] = frame["group_id"].map({"g0": "007", "g1": "NaN"})
    return frame


def build_corpus(root: Path) -> list[Case]:
    """Write every case under ``root``; returns the cases."""
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def add(name: str, path: Path | str, **kw) -> None:
        cases.append(Case(name, str(path), **kw))

    good = step_table(groups=2, trajs=3)
    records = good.to_dict("records")

    # Special and huge files.
    add("device /dev/zero", "/dev/zero", names=["/dev/zero"])
    fifo = root / "pipe.jsonl"
    os.mkfifo(fifo)
    add("FIFO", fifo)
    run_fifo = _run(root, "run_fifo", 1)
    os.mkfifo(run_fifo / "rollouts" / "step-000002.parquet")
    add("FIFO as a step file", run_fifo, names=["step-000002.parquet"])
    run_folder = _run(root, "run_folder", 1)
    (run_folder / "rollouts" / "step-000007.parquet").mkdir()
    add("folder named like a step file", run_folder, names=["step-000007.parquet"])
    loop = root / "loop.csv"
    loop.symlink_to(loop)
    add("symlink loop", loop)
    huge = root / "huge_line.jsonl"
    with open(huge, "wb") as f:
        f.write(b'{"group_id": "')
        f.write(b"x" * (65 * 1024 * 1024))
    add("65 MiB line without newline", huge)

    # Empty, random and truncated files.
    rng = np.random.default_rng(0)
    for suffix in (".csv", ".jsonl", ".parquet", ".pkl", ""):
        (root / f"empty{suffix}").write_bytes(b"")
        add(f"empty {suffix or 'no suffix'}", root / f"empty{suffix}")
        (root / f"random{suffix}").write_bytes(rng.bytes(4096))
        add(f"random bytes {suffix or 'no suffix'}", root / f"random{suffix}")
    (root / "par1_garbage.parquet").write_bytes(b"PAR1" + rng.bytes(1000))
    add("PAR1 then garbage", root / "par1_garbage.parquet")
    good.to_parquet(root / "whole.parquet")
    data = (root / "whole.parquet").read_bytes()
    (root / "truncated.parquet").write_bytes(data[: len(data) // 2])
    add("truncated Parquet", root / "truncated.parquet")

    # JSON lines.
    deep = dict(records[0], extra="PLACEHOLDER")
    _jsonl(root / "deep.jsonl", [], json.dumps(deep).replace('"PLACEHOLDER"',
                                                            "[" * 100_000 + "]" * 100_000) + "\n")
    add("nested 100,000 deep", root / "deep.jsonl")
    for col, value in (("episode_reward", 10**400), ("t", 2**70), ("train_step", 2**80)):
        rows = [dict(r) for r in records]
        rows[1][col] = value
        _jsonl(root / f"bigint_{col}.jsonl", rows)
        add(f"integer too large in {col}", root / f"bigint_{col}.jsonl", names=[col])
    for label, line in (("array", "[1, 2]"), ("number", "3"), ("string", '"x"'),
                        ("malformed", '{"group_id": "g0",, }')):
        _jsonl(root / f"line_{label}.jsonl", [], json.dumps(records[0]) + "\n" + line + "\n"
               + json.dumps(records[1]) + "\n")
        # one bad line costs that line: read, saying which line and trajectory; refused
        # only when the user asks for strictness
        add(f"JSONL line that is a {label}", root / f"line_{label}.jsonl",
            says=["malformed line", "line 2"])
        add(f"JSONL line that is a {label}, --strict", root / f"line_{label}.jsonl",
            args=["--strict"], all_names=[f"line_{label}.jsonl:2"])
    for label, value in (("text t", "a"), ("null t", None), ("list t", [1]),
                         ("dict group", {"a": 1})):
        rows = [dict(r) for r in records]
        col = "group_id" if "group" in label else "episode_reward" if "reward" in label else "t"
        rows[2][col] = value
        _jsonl(root / f"odd_{label.replace(' ', '_')}.jsonl", rows)
        add(f"JSONL {label}", root / f"odd_{label.replace(' ', '_')}.jsonl", names=[col])
    _jsonl(root / "nan_reward.jsonl", [], "\n".join(
        json.dumps(r).replace('"episode_reward": 10.0', '"episode_reward": Infinity')
        for r in records) + "\n")
    add("Infinity reward", root / "nan_reward.jsonl", names=["episode_reward"])
    _jsonl(root / "surrogate.jsonl", [], "\n".join(
        json.dumps(r).replace('"go 0"', '"\\ud800 go"') for r in records) + "\n")
    add("lone surrogate in text (replaced, noted)", root / "surrogate.jsonl", valid=True)

    # CSV.
    text = good.to_csv(index=False)
    header, rest = text.split("\n", 1)
    (root / "cr_header.csv").write_bytes((header.replace(",t,", ",t\r,") + "\n" + rest).encode())
    add("bare \\r in the CSV header", root / "cr_header.csv")
    (root / "dup_header.csv").write_text(header + ",action\n"
                                         + "".join(f"{ln},x\n" for ln in rest.splitlines()))
    add("duplicated CSV header", root / "dup_header.csv")
    (root / "ragged_wide.csv").write_text(header + "\n" + "".join(
        f"{ln},extra,more\n" for ln in rest.splitlines()))
    add("every row wider than the header", root / "ragged_wide.csv")
    (root / "ragged_one.csv").write_text(text + "a,b,c,d,e,f,g,h,i,j\n")
    n_lines = len(text.splitlines()) + 1
    add("one row wider than the header", root / "ragged_one.csv",
        says=["malformed line", f"line {n_lines}"])
    add("one row wider than the header, --strict", root / "ragged_one.csv", args=["--strict"],
        all_names=[f"ragged_one.csv:{n_lines}"])
    (root / "open_quote.csv").write_text(text.replace("go 1", '"go 1', 1))
    add("unclosed quote", root / "open_quote.csv")
    (root / "header_only.csv").write_text(header + "\n")
    add("header only", root / "header_only.csv")
    (root / "nul.csv").write_bytes(text.encode().replace(b"go", b"g\x00o"))
    add("NUL characters in CSV text (text, kept)", root / "nul.csv", valid=True)
    for label, col, value in (("is_action_valid 2.5", "is_action_valid", 2.5),
                              ("t inf", "t", np.inf), ("t 1.5", "t", 1.5), ("t -1", "t", -1),
                              ("reward text", "episode_reward", "abc"),
                              ("reward complex", "episode_reward", "1+2j"),
                              ("train_step text", "train_step", "a")):
        frame = good.astype({col: object}) if col in good else good.assign(train_step=1)
        frame = frame.astype({col: object})
        frame.loc[frame.index[1], col] = value
        name = "csv_" + label.replace(" ", "_").replace(".", "_") + ".csv"
        frame.to_csv(root / name, index=False)
        add(f"CSV {label}", root / name, names=[col])
    (root / "missing_cols.csv").write_text("uid,step,text\nu1,0,hello\n")
    add("CSV without the step columns", root / "missing_cols.csv",
        names=["missing required column"])

    # Parquet.
    table = pa.Table.from_pandas(good, preserve_index=False)
    bad_bytes = table.set_column(table.schema.get_field_index("action"), "action",
                                 pa.array([b"\xff\xfe"] * len(good), pa.binary()))
    pq.write_table(bad_bytes, root / "binary_text.parquet")
    add("non-UTF-8 bytes in a Parquet text column", root / "binary_text.parquet",
        names=["action"])
    pq.write_table(pa.Table.from_arrays([table.column(c) for c in table.column_names]
                                        + [table.column("t")],
                                        names=table.column_names + ["t"]),
                   root / "dup_cols.parquet")
    add("duplicate Parquet column names", root / "dup_cols.parquet", names=["'t'"])
    structs = table.set_column(table.schema.get_field_index("state_key"), "state_key",
                               pa.array([{"room": i} for i in range(len(good))]))
    pq.write_table(structs, root / "struct_key.parquet")
    add("struct values as state_key", root / "struct_key.parquet", names=["state_key"])
    good.assign(is_action_valid=2.5).to_parquet(root / "valid_25.parquet")
    add("is_action_valid 2.5 in Parquet", root / "valid_25.parquet", names=["is_action_valid"])
    good.assign(t=good["t"].astype(float).where(good.index != 2, np.nan)).to_parquet(
        root / "t_nan.parquet")
    add("t null in Parquet", root / "t_nan.parquet", names=["'t'"])

    # Run directories.
    for label, content in (("invalid JSON", b"{"), ("a list", b"[1]"),
                           ("version '1'", b'{"format": "g2po-run", "version": "1"}'),
                           ("version 99", b'{"format": "g2po-run", "version": 99}'),
                           ("another format", b'{"format": "other"}'),
                           ("binary", b"\xff\xfe\x00")):
        run = _run(root, "run_manifest_" + label.split()[0].strip("'").lower()
                   + str(len(cases)), 1)
        (run / "run.json").write_bytes(content)
        add(f"run.json {label}", run, names=["run.json"])
    run = _run(root, "run_footer_json")
    rewrite_footer(step_path(run, 2), b"{not json")
    add("step-file footer not JSON", run, names=["step-000002.parquet"], commands=("validate",))
    run = _run(root, "run_footer_type")
    rewrite_footer(step_path(run, 2), lambda f: f.update(groups=5))
    add("step-file footer of the wrong shape", run, names=["step-000002.parquet"],
        commands=("validate",))
    run = _run(root, "run_footer_past")
    rewrite_footer(step_path(run, 2), lambda f: [g.update(row_group=7) for g in f["groups"]])
    add("footer past the last row group", run, names=["step-000002.parquet"],
        commands=("validate",))
    run = _run(root, "run_footer_rows")
    rewrite_footer(step_path(run, 2), lambda f: [g.update(stop=g["stop"] + 1000)
                                                  for g in f["groups"]])
    add("footer rows past a row group", run, names=["step-000002.parquet"], commands=("validate",))
    run = _run(root, "run_footer_swap")

    def swap(footer):
        ids = [g["group_id"] for g in footer["groups"]]
        for g, other in zip(footer["groups"], ids[1:] + ids[:1], strict=True):
            g["group_id"] = other
    rewrite_footer(step_path(run, 2), swap)
    add("footer pointing groups at other groups' rows", run, names=["step-000002.parquet"],
        commands=("validate",))
    run = _run(root, "run_wrong_step", 1)
    other = RunWriter(root / "tmp_other", {})
    other.write_step(42, step_table(seed=4))
    os.replace(step_path(root / "tmp_other", 42), step_path(run, 3))
    add("step-000003 holding rows of step 42", run, names=["step-000003.parquet"])
    run = _run(root, "run_two_files", 1)
    (run / "rollouts" / "step-1.parquet").write_bytes(step_path(run, 1).read_bytes())
    add("two files claiming one step", run, names=["step-1.parquet"])
    run = _run(root, "run_random_step", 1)
    step_path(run, 2).write_bytes(rng.bytes(2000))
    add("random bytes as a step file", run, names=["step-000002.parquet"])
    for label, line in (("text train_step", '{"train_step": "a"}'),
                        ("deep", '{"train_step": 1, "x": ' + "[" * 50_000 + "]" * 50_000 + "}"),
                        ("not an object", "[1, 2]"), ("no train_step", '{"loss": 1}')):
        run = _run(root, "run_metrics_" + label.replace(" ", "_"), 1)
        with open(run / "metrics.jsonl", "a") as f:
            f.write(line + "\n")
        if label in ("deep", "not an object"):  # no JSON object: a malformed line, skipped
            add(f"metrics.jsonl {label}", run, says=["metrics.jsonl:2"], commands=("validate",))
            add(f"metrics.jsonl {label}, --strict", run, args=["--strict"],
                all_names=["metrics.jsonl:2"], commands=("validate",))
        else:
            add(f"metrics.jsonl {label}", run, names=["metrics.jsonl"], commands=("validate",))

    # verl dumps.
    for label, edit in (("uid null", {"uid": None}), ("uid object", {"uid": {"a": 1}}),
                        ("score too large", {"score": 10**400}), ("score text", {"score": "x"}),
                        ("step too large", {"step": 10**400}), ("input a number", {"input": 3}),
                        ("no output", {"output": None})):
        entries = agent_loop_entries(1)
        entries[1].update(edit)
        if label == "no output":
            del entries[1]["output"]
        folder = root / ("verl_" + label.replace(" ", "_"))
        write_verl_dump(folder, 1, entries)
        field_name = next(iter(edit))
        add(f"verl line {label}", folder, names=[field_name])
    entries = agent_loop_entries(1)
    entries[1]["uid"] = entries[1]["uid"].rsplit("_", 1)[0] + "_" + "1" + "0" * 30
    write_verl_dump(root / "verl_uid_index_1e30", 1, entries)
    add("verl uid whose turn index is 1e30", root / "verl_uid_index_1e30",
        all_names=["1.jsonl:2", "'uid'"])
    write_verl_dump(root / "verl_step_1e30", 10**30, agent_loop_entries(1))
    add("verl dump file named for global step 1e30", root / "verl_step_1e30",
        names=["1" + "0" * 30 + ".jsonl"])
    entries = agent_loop_entries(1)
    for e in entries:
        e["input"] = "a" * 40 + "!"
    write_verl_dump(root / "verl_regex", 1, entries)
    add("catastrophic --state-regex", root / "verl_regex", args=["--state-regex", "(a|aa)+$"],
        names=["state_regex", "--state-regex"])
    add("invalid --state-regex", root / "verl_regex", args=["--state-regex", "("],
        names=["state_regex"])
    keys = good.assign(state_key="a" * 40 + "!")
    keys.to_csv(root / "regex_keys.csv", index=False)
    add("catastrophic --state-key regex", root / "regex_keys.csv",
        args=["--state-key", "regex:(a|aa)+$"], names=["state-key regex"],
        commands=("advantages",))
    add("invalid --state-key regex", root / "regex_keys.csv", args=["--state-key", "regex:("],
        names=["state-key regex"], commands=("advantages",))

    # Mapping files and folders.
    good.to_csv(root / "plain.csv", index=False)
    (root / "binary_map.yaml").write_bytes(b"\xff\xfe\x00\x01")
    add("binary mapping file", root / "plain.csv",
        args=["--mapping", str(root / "binary_map.yaml")], names=["binary_map.yaml"])
    (root / "deep_map.yaml").write_text("a: " + "[" * 3_000 + "]" * 3_000 + "\n")
    add("deeply nested mapping file", root / "plain.csv",
        args=["--mapping", str(root / "deep_map.yaml")], names=["deep_map.yaml"])
    os.mkfifo(root / "fifo_map.yaml")
    add("FIFO as the mapping file", root / "plain.csv",
        args=["--mapping", str(root / "fifo_map.yaml")], names=["fifo_map.yaml"])
    junk = root / "junk"
    (junk / "sub").mkdir(parents=True)
    (junk / "blob.parquet").write_bytes(rng.bytes(512))
    (junk / "sub" / "x.jsonl").write_bytes(rng.bytes(512))
    add("folder of junk", junk, names=["no logs found"])
    (root / "empty_dir").mkdir()
    add("empty folder", root / "empty_dir", names=["no logs found"])

    # A folder named rollouts holding a file named like a step file, in no run.
    plain = root / "rollouts_plain"
    (plain / "rollouts").mkdir(parents=True)
    good.to_parquet(plain / "rollouts" / "step-000001.parquet")
    (plain / "rollouts" / "1.jsonl").write_text(json.dumps(records[0]) + "\n")
    add("rollouts/ of a plain table, no run.json", plain,
        names=["run.json", "step-000001.parquet"], says=["run.json missing", "1.jsonl"])
    alone = root / "rollouts_alone"
    (alone / "rollouts").mkdir(parents=True)
    good.to_parquet(alone / "rollouts" / "step-000001.parquet")
    add("a run's rollouts/ folder given itself", alone / "rollouts",
        names=["pass the run directory"])
    add("a rollouts/ folder whose 1.jsonl is no verl dump", plain / "rollouts",
        all_names=["1.jsonl:1", "missing field"])
    odd = root / "rollouts_misnamed"
    (odd / "rollouts").mkdir(parents=True)
    good.to_parquet(odd / "rollouts" / "STEP-000001.PARQUET")
    add("rollouts/ holding a misnamed step file", odd, names=["STEP-000001.PARQUET"],
        says=["STEP-000001.PARQUET"])
    noise = root / "rollouts_random"
    (noise / "rollouts").mkdir(parents=True)
    (noise / "rollouts" / "step-000001.parquet").write_bytes(rng.bytes(1500))
    add("rollouts/ holding random bytes named as a step file", noise,
        names=["step-000001.parquet"])

    # Tricky but valid: read without error, rows unchanged.
    tricky = _tricky_text()
    write_csv(tricky, root / "tricky.csv")
    add("tricky text in our own CSV", root / "tricky.csv", valid=True, expect=tricky)
    tricky.to_json(root / "tricky.jsonl", orient="records", lines=True, force_ascii=False)
    add("tricky text in JSON lines", root / "tricky.jsonl", valid=True, expect=tricky)
    tricky.to_parquet(root / "tricky.parquet")
    add("tricky text in Parquet", root / "tricky.parquet", valid=True, expect=tricky)
    run = _run(root, "run_stale_checkpoint", 1)
    (run / "checkpoints" / ".tmp-step-000002-4242").mkdir(parents=True)
    (run / "checkpoints" / ".tmp-step-000002-4242" / "model.safetensors").write_bytes(b"0" * 10)
    add("run with a stale checkpoint folder", run, valid=True)
    return cases


# -- running it -------------------------------------------------------------------------------
#
# Each command runs in its own process under RLIMIT_AS and a wall-clock limit. By default the
# processes are forked from a multiprocessing fork server that has imported g2po once (the
# same code as `python -m g2po`, without paying ~1 s of imports per run); ``exec=True`` starts
# a fresh `python -m g2po` for every run instead.

def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def _child(argv: list[str], out: str, err: str) -> None:
    """The body of a forked run: limits, stdout/stderr to files, the CLI's own entry point."""
    _limits()
    os.environ["COLUMNS"] = "120"
    os.environ.pop("G2PO_DEBUG", None)
    for fd, name in ((1, out), (2, err)):
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = open(1, "w", closefd=False, encoding="utf-8", errors="strict")  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    if argv[0] == "load_steps":
        rc = _library(argv[1:])
    else:
        from g2po.cli import main

        rc = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _library(argv: list[str]) -> int:
    """``loaders.load_steps(path, **options)`` as a library user calls it (the options from
    the same arguments the CLI takes). A clear error is one of the exceptions the loaders
    document (their message printed, exit 2); anything else is a bug (its traceback printed,
    exit 3). A read prints the rows read and the notes of the report the frame carries."""
    import argparse
    import traceback

    import loaders
    from g2po.cli.logs import add_log_options, log_options
    from g2po.errors import G2POError
    from loaders.report import report_of

    parser = argparse.ArgumentParser(prog="load_steps")
    parser.add_argument("path")
    add_log_options(parser)
    args = parser.parse_args(argv)
    try:
        steps = loaders.load_steps(args.path, **log_options(args))
    except (G2POError, OSError, ValueError) as err:  # LoaderError is both of the first two
        print(f"load_steps: error ({type(err).__name__}): {err}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a raw exception reaching the library user is the bug
        traceback.print_exc()
        return 3
    print(f"load_steps: {len(steps)} rows")
    for note in report_of(steps).notes:
        print(f"load_steps: note: {note}")
    return 0


def _execute(argv: list[str], scratch: Path, exec_: bool) -> tuple[int | None, str, str]:
    """(exit code or None on a hang, stdout, stderr) of one run."""
    if exec_:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
        env.pop("G2PO_DEBUG", None)
        command = [sys.executable, "-m", "g2po", *argv] if argv[0] != "load_steps" else \
            [sys.executable, "-c", "import sys; from tests.loaders.bad_inputs import _library; "
             "sys.exit(_library(sys.argv[1:]))", *argv[1:]]
        try:
            done = subprocess.run(command, capture_output=True,
                                  text=True, errors="replace", timeout=TIME_LIMIT_S,
                                  preexec_fn=_limits, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, "", ""
        return done.returncode, done.stdout, done.stderr
    out, err = (tempfile.mkstemp(dir=scratch, suffix=s)[1] for s in (".out", ".err"))
    process = _context().Process(target=_child, args=(argv, out, err))
    with _START_LOCK:
        _start_with_bare_main(process)
    process.join(TIME_LIMIT_S)
    if process.is_alive():
        process.kill()
        process.join()
        return None, "", ""
    if process.exitcode == _STATUS_LOST:  # the fork server lost the status: run it for real
        return _execute(argv, scratch, exec_=True)
    read = [Path(p).read_text(encoding="utf-8", errors="replace") for p in (out, err)]
    return process.exitcode, read[0], read[1]


_CONTEXT = None
#: What multiprocessing reports when the fork server's pipe closed before it sent a child's
#: exit status (``popen_forkserver``); the CLI itself never exits with it.
_STATUS_LOST = 255
_START_LOCK = threading.Lock()


def _start_with_bare_main(process) -> None:
    """Start ``process`` while ``__main__`` is a bare module: multiprocessing re-runs the
    parent's ``__main__`` file in every child, and in a test session that is whatever script
    ran last (Streamlit's AppTest leaves its own temporary script there)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        process.start()
    finally:
        sys.modules["__main__"] = main


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        # the commands import these when they run (the parser does not): loaded once here
        _CONTEXT.set_forkserver_preload(["g2po.cli", "g2po.cli.analysis", "g2po.cli.logs",
                                         "g2po.cli.text", "g2po.estimators", "loaders.opener",
                                         "loaders.tables", "loaders.validate"])
    return _CONTEXT


def run_case(case: Case, command: str, scratch: Path, exec_: bool = False) -> Outcome:
    """Run one command on one case in its own process and classify what came back."""
    out = scratch / f"out-{abs(hash((case.name, command)))}.parquet"
    argv = [command, case.path, *case.args]
    if command == "advantages" and case.valid:
        argv += ["--out", str(out)]
    start = time.perf_counter()
    rc, stdout, stderr = _execute(argv, scratch, exec_)
    seconds = time.perf_counter() - start
    if rc is None:
        return Outcome(case.name, command, "hang", seconds)
    text = stdout + stderr
    tail = "\n".join(text.strip().splitlines()[-3:])
    if "Traceback (most recent call last)" in text:
        return Outcome(case.name, command, "traceback", seconds, tail)
    if "internal error" in stderr or rc not in (0, 1, 2):
        return Outcome(case.name, command, "internal", seconds, f"rc {rc}: {tail}")
    if case.valid:
        if rc != 0:
            return Outcome(case.name, command, "refused", seconds, tail)
        if command == "advantages" and case.expect is not None:
            changed = _changes(case.expect, pd.read_parquet(out))
            if changed:
                return Outcome(case.name, command, "changed", seconds, changed)
        return Outcome(case.name, command, "accepted", seconds)
    if rc == 0 and case.says:
        missing = [w for w in case.says if w not in text]
        return Outcome(case.name, command, "silent" if missing else "said", seconds,
                       f"read without saying {missing}: {tail}" if missing else "")
    if rc == 0:
        return Outcome(case.name, command, "accepted", seconds, tail)
    names = case.names or [Path(case.path).name]
    if not any(n in text for n in names) or not all(n in text for n in case.all_names):
        return Outcome(case.name, command, "unclear", seconds, tail)
    return Outcome(case.name, command, "clear", seconds)


def _changes(expect: pd.DataFrame, got: pd.DataFrame) -> str:
    """What differs between the rows written and the rows read (key and text columns)."""
    cols = ["group_id", "traj_id", "t", "action", "episode_reward"]
    a = expect[cols].astype(str).sort_values(cols).reset_index(drop=True)
    b = got[cols].astype(str).sort_values(cols).reset_index(drop=True)
    if a.equals(b):
        return ""
    return f"rows read differ from rows written: {a.compare(b).head(3).to_dict()}"


def run_corpus(root: Path, workers: int = 4, exec_: bool = False) -> list[Outcome]:
    """Build the corpus under ``root`` and run every case through its commands, ``workers``
    processes at a time."""
    cases = build_corpus(root / "corpus")
    jobs = [(c, cmd) for c in cases for cmd in c.commands]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: run_case(*job, root, exec_), jobs))


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    """Inputs tried, and command runs by outcome."""
    tally = Counter(o.kind for o in outcomes)
    return {"inputs": len({o.case for o in outcomes}), "runs": len(outcomes),
            **{k: tally.get(k, 0) for k in ("clear", "accepted", "said", "traceback",
                                            "internal", "hang", "unclear", "changed",
                                            "refused", "silent")}}


def main() -> int:
    exec_ = "--exec" in sys.argv  # a fresh `python -m g2po` per run
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outcomes = run_corpus(Path(tmp), exec_=exec_)
        wall = time.perf_counter() - start
    for o in outcomes:
        if o.kind not in ("clear", "accepted", "said") or o.detail:
            print(f"{o.kind:9s} {o.command:10s} {o.case}: {o.detail}")
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(json.dumps(counts(outcomes)), f"{wall:.0f} s wall,",
          f"slowest run {slowest.seconds:.1f} s ({slowest.command} {slowest.case})")
    return 0


if __name__ == "__main__":  # import this file by its name: forked runs pickle its functions
    from tests.loaders.bad_inputs import main as _main

    sys.exit(_main())
