"""The ``g2po`` command's own error handling (g2po/cli/__init__.py)."""

from __future__ import annotations

import subprocess
import sys

from g2po.synthetic import synthetic_steps


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """``g2po … | head -1``: the pipe closes while the table is being written; the command
    stops without a word, as Unix tools do (it said "error: [Errno 32] Broken pipe")."""
    table = tmp_path / "steps.csv"
    synthetic_steps(4000).to_csv(table, index=False)  # ~700 kB of output, beyond a pipe's buffer
    writer = subprocess.Popen([sys.executable, "-m", "g2po", "advantages", str(table),
                               "--max-rows", "100000"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, text=True,
                          timeout=300)
    writer.stdout.close()
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=300) == 0, err
    writer.stderr.close()
    assert head.stdout.startswith("group_id") and head.stdout.count("\n") == 1
    assert "Broken pipe" not in err and "Exception ignored" not in err
    assert "error" not in err, err
