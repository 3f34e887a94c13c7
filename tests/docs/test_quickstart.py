"""docs/quickstart.ipynb, executed end to end with a real Jupyter kernel, so the docs cannot rot.

The kernel is the notebook's own (``waterline``) resolved to this interpreter: a
kernelspec written for the test into a temporary JUPYTER_PATH, so it is the venv's
Python whatever else is installed (`make setup` installs the same name into the venv
for people who open the notebook in Jupyter). The kernel runs in a temporary folder
and its JVM logs to a temporary file; the notebook itself works in a temporary folder
that its last cell removes.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "docs" / "quickstart.ipynb"
KERNEL = "waterline"

pytestmark = pytest.mark.spark  # the notebook starts its own local Spark


@pytest.fixture
def kernel_here(tmp_path, monkeypatch):
    """The ``waterline`` kernelspec, pointing at this interpreter, first on JUPYTER_PATH."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec_dir.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "waterline (test)",
        "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("WATERLINE_JVM_LOG", str(tmp_path / "jvm.log"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return tmp_path


def _text(output) -> str:
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    return output.get("data", {}).get("text/plain", "")


def test_quickstart_notebook_runs(kernel_here):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata.kernelspec.name == KERNEL
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), \
        "docs/quickstart.ipynb is stored with outputs: clear them"
    assert any("import waterline" in cell.source for cell in nb.cells if cell.cell_type == "code")

    workdir = kernel_here / "kernel_cwd"
    workdir.mkdir()
    NotebookClient(nb, kernel_name=KERNEL, timeout=600, startup_timeout=120,
                   resources={"metadata": {"path": str(workdir)}}).execute()

    outputs = [output for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs]
    text = "\n".join(_text(output) for output in outputs)
    streams = "\n".join(output.text for output in outputs if output.output_type == "stream")

    # Each tier after the first release at 14:50, then after the second at 15:05.
    assert "trades/realtime: W_T 2026-01-05T14:50:00Z (was none); released 6" in text
    assert "trades/delayed_15m: W_T 2026-01-05T14:50:00Z (was none); released 2" in text
    assert "trades/embargoed: W_T 2026-01-05T14:50:00Z (was none); released 0" in text
    assert "trades/delayed_15m: W_T 2026-01-05T15:05:00Z (was 2026-01-05T14:50:00Z); released 3" in text
    assert "trades/embargoed: W_T 2026-01-05T15:05:00Z (was 2026-01-05T14:50:00Z); released 6" in text
    assert "delayed_15m at W=14:50: 2 rows" in text and "delayed_15m now:        5 rows" in text

    # The status table (a DataFrame, shown as HTML) and the plot (a PNG).
    html = [o for o in outputs if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    assert any("pending versions" in o.data["text/html"] and "delayed_15m" in o.data["text/html"] for o in html)
    pngs = [o.data["image/png"] for o in outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(pngs) == 1 and base64.b64decode(pngs[0]).startswith(b"\x89PNG")

    # Spark's start-up banner and log lines went to the JVM log, not into the notebook.
    for noise in ("Setting default log level", "incubator modules", "WARN", "log4j"):
        assert noise not in streams, f"the notebook shows Spark's output ({noise!r}):\n{streams}"

    # The notebook removed its working folder; the kernel wrote nothing but Spark's scratch.
    root = re.search(r"working in (\S+)", text).group(1)
    assert not Path(root).exists(), f"the notebook left {root}"
    assert {p.name for p in workdir.iterdir()} <= {".waterline"}
