"""CI: the documented GPU install resolves, checked without installing or downloading it.

Resolves ``-e .[verl,envs]`` + ``requirements/gpu.txt`` with ``requirements/overrides.txt`` for
Linux x86_64 / Python 3.11 (``uv pip compile``: package metadata only, in a fresh cache), checks
the pins docs/verl.md promises (torch 2.13.0's CUDA build, vLLM 0.32.x, verl 0.9.1, transformers
in vLLM's range), that no wheel was downloaded, and writes the resolution to
``artifacts/gpu-set.txt``. Exits 1 with the reason otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
#: More than this in uv's cache, index pages aside, means wheels were downloaded (the CUDA torch
#: wheel alone is ~900 MB).
MAX_DOWNLOAD_MB = 50


def _pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def problems(pins: dict[str, str]) -> list[str]:
    """What the resolved set lacks of docs/verl.md's promises (empty when it is all there)."""
    found = []
    if pins.get("torch") != "2.13.0":
        found.append(f"torch {pins.get('torch')}, expected 2.13.0 (PyPI's CUDA build, no +cpu)")
    if _version(pins.get("vllm", "0"))[:2] != (0, 32):
        found.append(f"vllm {pins.get('vllm')}, expected 0.32.x")
    if pins.get("verl") != "0.9.1":
        found.append(f"verl {pins.get('verl')}, expected 0.9.1")
    if not (5, 16, 1) <= _version(pins.get("transformers", "0")) < (5, 20):
        found.append(f"transformers {pins.get('transformers')}, expected >=5.16.1,<5.20")
    if not any(name.startswith("nvidia-") for name in pins):
        found.append("no nvidia-* package: torch would not be a CUDA build")
    return found


def main() -> int:
    uv = Path(sys.executable).parent / "uv"
    out = ROOT / "artifacts" / "gpu-set.txt"
    out.parent.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    with tempfile.TemporaryDirectory(prefix="g2po-gpu-set-") as tmp:
        wanted = Path(tmp) / "gpu.in"
        wanted.write_text(f"-e {ROOT}[verl,envs]\n-r {REQUIREMENTS / 'gpu.txt'}\n")
        cache = Path(tmp) / "cache"
        done = subprocess.run(
            [str(uv), "pip", "compile", str(wanted), "--overrides",
             str(REQUIREMENTS / "overrides.txt"), "--python-version", "3.11",
             "--python-platform", "x86_64-manylinux_2_28", "--cache-dir", str(cache),
             "--no-header", "--quiet", "-o", str(out)],
            env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"the GPU set does not resolve:\n{done.stderr}", file=sys.stderr)
            return 1
        downloaded = sum(f.stat().st_size for f in cache.rglob("*")
                         if f.is_file() and not f.relative_to(cache).parts[0].startswith("simple"))
    pins = _pins(out.read_text())
    found = problems(pins)
    if downloaded > MAX_DOWNLOAD_MB * 2**20:
        found.append(f"resolving downloaded {downloaded / 2**20:.0f} MB (wheels?)")
    print(f"GPU set ({len(pins)} packages, {out.relative_to(ROOT)}): "
          + ", ".join(f"{k} {pins.get(k)}" for k in ("torch", "vllm", "verl", "transformers"))
          + f"; {downloaded / 2**20:.1f} MB fetched besides index pages")
    for problem in found:
        print(f"GPU set: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
