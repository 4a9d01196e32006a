import subprocess
import sys
from pathlib import Path

from app.streamlit_patches import PINNED_VERSION

ROOT = Path(__file__).resolve().parents[2]


def _scan_probe(version: str) -> str:
    """In a fresh process, as Streamlit ``version``: apply the patch, then run what
    Streamlit's Runtime runs at start; prints whether the patch applied and whether the
    metadata of installed distributions was read."""
    return f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import importlib.metadata, streamlit
streamlit.__version__ = {version!r}
from app.streamlit_patches import skip_component_scan
applied = skip_component_scan()
read = []
original = importlib.metadata.Distribution.metadata
importlib.metadata.Distribution.metadata = property(lambda d: read.append(1) or original.fget(d))
from streamlit.components.v2.component_manager import BidiComponentManager
BidiComponentManager().discover_and_register_components(start_file_watching=False)
print(applied, bool(read))
"""


def test_the_component_scan_is_skipped_on_the_pinned_version_only():
    out = {}
    for version in (PINNED_VERSION, "1.99.0"):
        run = subprocess.run([sys.executable, "-c", _scan_probe(version)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        out[version] = run.stdout.split()[-2:]
    assert out[PINNED_VERSION] == ["True", "False"]  # patched: no distribution's metadata read
    assert out["1.99.0"] == ["False", "True"]  # another version: Streamlit's own scan
