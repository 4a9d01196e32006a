"""The app as ``scripts/bench_app.py`` runs it in-process (AppTest): the group explorer on the
bundled sample rollouts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.shell import run  # noqa: E402

run(argv=[], start_page="group")
