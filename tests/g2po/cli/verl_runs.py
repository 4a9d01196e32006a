"""verl's real trainer on CPU, one run per rollout and test session, started in the background
as soon as the session knows it will need them (``tests/conftest.py``,
``pytest_collection_finish``).

Each run is two commands, steps 1-2 then the same command resumed for step 3, and takes minutes,
almost all of it start-up (Ray, verl's workers importing torch and verl, vLLM's engine). The
rest of the suite runs in one process on one core; the runs take the other core meanwhile,
one after the other (two at once would only fight over the cores), under ``nice`` so that the
tests in the foreground keep their pace. ``tests/g2po/cli/test_train.py`` waits for them.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from tests.g2po.trainers.fixtures import ENV, TINY

__all__ = ["VERL_CPU_ROLLOUTS", "TINY_VLLM", "available", "start", "result", "stop"]

ROOT = Path(__file__).resolve().parents[3]
#: The vLLM run's tiny model: TINY with heads of 64 / 2 = 32, a size vLLM's CPU attention takes.
TINY_VLLM = TINY.replace("hidden_size=32", "hidden_size=64")
#: rollout -> (model, learning rate, seconds a command may take). vLLM's run takes large steps,
#: so that a rollout still on the previous weights would be far from the actor
#: (test_verl_cpu_rollout_follows_the_actor); its engine starts slowly on a loaded machine (a
#: command took 3 minutes on a quiet one, 37 at a load average of 30-50).
VERL_CPU_ROLLOUTS = {"hf": (TINY, "1e-3", 1800), "vllm": (TINY_VLLM, "0.05", 2400)}

_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verl-cpu-run")
_futures: dict[str, Future] = {}
_running: set[subprocess.Popen] = set()
_lock = threading.Lock()
_scratch = Path(tempfile.mkdtemp(prefix="g2po-verl-cpu-"))
_stopping = threading.Event()


def available(rollout: str) -> bool:
    """Whether this environment can run ``rollout`` (vLLM's needs the CPU vLLM install)."""
    return rollout != "vllm" or importlib.util.find_spec("vllm") is not None


def command(out: Path, steps: int, rollout: str) -> list[str]:
    """2 tasks x 4 rollouts x <= 4 steps; validation and a checkpoint at step 2."""
    model, lr, _ = VERL_CPU_ROLLOUTS[rollout]
    return ["nice", "-n", "5", sys.executable, "-m", "g2po", "train", "--backend", "verl",
            "--device", "cpu", "--rollout", rollout, "--env", ENV, "--model", model,
            "--out", str(out), "--total-steps", str(steps), "--tasks-per-step", "2",
            "--rollouts-per-task", "4", "--max-steps", "4", "--lr", lr,
            "g2po_env.train_tasks=2", "g2po_env.val_tasks=2", "data.val_batch_size=2",
            "data.max_prompt_length=1024", "data.max_response_length=24",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
            "actor_rollout_ref.model.use_remove_padding=false",
            "actor_rollout_ref.model.enable_gradient_checkpointing=false",
            "trainer.val_before_train=false", "trainer.test_freq=2", "trainer.save_freq=2",
            "trainer.logger=[console]", f"trainer.rollout_data_dir={out / 'verl_dump'}"]


def _shared_files() -> set[Path]:
    """What verl's and vLLM's processes leave in /dev/shm and /tmp, less what a living
    process (a test running beside the run) still holds."""
    from g2po.trainers.verl_backend.scratch import in_use, leftovers

    return leftovers() - in_use()


def _run(rollout: str) -> tuple[Path, list[str], str, Path]:
    from g2po.trainers.tiny import tiny_model

    model = tiny_model(ENV, VERL_CPU_ROLLOUTS[rollout][0], verbose=False)
    out = _scratch / f"verl-cpu-{rollout}" / "run"
    out.parent.mkdir(parents=True)
    # Ray's workers get this checkout through PYTHONPATH (an installed package needs nothing)
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "RAY_DEDUP_LOGS": "0", "PYTHONPATH": path}
    logs = []
    before = _shared_files()
    for steps in (2, 3):
        if _stopping.is_set():
            raise RuntimeError("the test session ended before this run")
        proc = subprocess.Popen(command(out, steps, rollout), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        watcher = _watch(proc.pid)
        with _lock:
            _running.add(proc)
        try:
            output, _ = proc.communicate(timeout=VERL_CPU_ROLLOUTS[rollout][2])
        except subprocess.TimeoutExpired:
            _kill(proc)
            output, _ = proc.communicate()
            raise AssertionError(f"{rollout}: `g2po train` ran past its time limit:\n"
                                 f"{output[-6000:]}") from None
        finally:
            with _lock:
                _running.discard(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                watcher.wait(timeout=10)  # gone a second after the run's last process
        logs.append(output)
        assert proc.returncode == 0, output[-6000:]
    # What the processes left in /dev/shm and /tmp went with them. Tests running beside the
    # run make such files too (process pools' semaphores, unlinked by Python's resource
    # tracker soon after their processes end): only what stays counts.
    left = _shared_files() - before
    for _ in range(15):
        if not left:
            break
        time.sleep(2)
        left &= _shared_files()
    assert not left, left
    return out, logs, rollout, model


def start(rollouts: list[str]) -> None:
    """Queue the runs of ``rollouts`` (those this environment has), in this order."""
    for rollout in rollouts:
        if available(rollout) and rollout not in _futures:
            _futures[rollout] = _pool.submit(_run, rollout)


def result(rollout: str) -> tuple[Path, list[str], str, Path]:
    """(run directory, the two commands' logs, rollout, initial model) of ``rollout``'s run,
    waiting for it (started here if the session did not start it)."""
    start([rollout])
    return _futures[rollout].result()


#: Run by :func:`watch_group`: argv is the session's pid and the group's id.
_WATCH = """
import os, signal, sys, time
session, group = int(sys.argv[1]), int(sys.argv[2])
while True:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        sys.exit(0)  # the run ended
    if os.getppid() != session:  # the session ended, however: this process was handed on
        break
    time.sleep(1)
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        break
    time.sleep(10)
"""


def watch_command(group: int) -> list[str]:
    """A command, to be started by this process, that ends process group ``group`` (TERM,
    then KILL) if this process ends first, however it ends: a test session killed
    (``timeout``, CI's limit) runs no :func:`stop`, and a verl run left behind takes a core
    for minutes. It ends by itself once the group has."""
    return [sys.executable, "-c", _WATCH, str(os.getpid()), str(group)]


def _watch(group: int) -> subprocess.Popen:
    return subprocess.Popen(watch_command(group), start_new_session=True,
                            stdin=subprocess.DEVNULL)


def _kill(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


@atexit.register
def stop() -> None:
    """End the runs still going (a session stopped early) and remove their folders."""
    _stopping.set()
    for future in _futures.values():
        future.cancel()
    with _lock:
        running = list(_running)
    for proc in running:
        _kill(proc)
    _pool.shutdown(wait=True)
    shutil.rmtree(_scratch, ignore_errors=True)
