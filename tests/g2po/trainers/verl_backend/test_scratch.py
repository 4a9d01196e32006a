"""What a CPU run leaves in shared places goes when it ends: new, unused files only."""

from __future__ import annotations

import subprocess
import time

import pytest

from g2po.trainers.verl_backend.scratch import cleaned_up, in_use, leftovers


@pytest.fixture
def places(tmp_path):
    (tmp_path / "shm").mkdir()
    (tmp_path / "tmp").mkdir()
    return {str(tmp_path / "shm"): ("verl_weights_*", "psm_*"),
            str(tmp_path / "tmp"): ("vllm_dist_*",)}


def test_new_unused_files_go_old_busy_and_other_files_stay(tmp_path, places):
    shm, tmp = tmp_path / "shm", tmp_path / "tmp"
    (shm / "psm_old").write_bytes(b"x")  # there before the run: someone else's
    holder = None
    try:
        with cleaned_up(places, wait_s=0.5) as removed:
            for path in (shm / "verl_weights_1", shm / "psm_2", tmp / "vllm_dist_3",
                         shm / "other", shm / "psm_busy"):
                path.write_bytes(b"x")
            # another process still holds one open (a run beside this one)
            holder = subprocess.Popen(["bash", "-c", f"exec 3<{shm / 'psm_busy'}; sleep 60"])
            deadline = time.monotonic() + 10
            while shm / "psm_busy" not in in_use():
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert removed == {shm / "verl_weights_1", shm / "psm_2", tmp / "vllm_dist_3"}
        assert sorted(p.name for p in shm.iterdir()) == ["other", "psm_busy", "psm_old"]
        assert not list(tmp.iterdir())
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()


def test_cleaned_up_also_when_the_run_fails(tmp_path, places):
    with pytest.raises(RuntimeError, match="sync failed"):
        with cleaned_up(places, wait_s=0):
            (tmp_path / "shm" / "verl_weights_9").write_bytes(b"x" * 1024)
            raise RuntimeError("sync failed")
    assert leftovers(places) == set()

