"""The research notebooks (notebooks/*.ipynb) run from top to bottom.

Each notebook is executed in a fresh Jupyter kernel ("python3": this interpreter,
so the virtual environment redundax is installed in), with notebooks/ as its
working directory, on a copy held in memory: the committed files and their
outputs are never rewritten. A cell that raises fails the test with that cell's
source and traceback. The notebooks carry their own `assert`s on the numbers they
report (rank 20 and p = 2 for the mobile robot, p = 1 and mobility 1 for Bricard,
gradient against central differences, ...), so this also checks their science.

Compilation dominates: the five notebooks take 2.5–4 minutes together on a
shared 2-core CPU (measured 165 s at a load average of 1.4 and 221 s at 3; the
design-gradient notebook is the longest, 50–60 s, most of it compiling one reverse
pass through a Diffrax solve).
"""

import re
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
CELL_TIMEOUT = 300  # s, per cell (the longest cell compiles a gradient through a solve)
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours of IPython tracebacks


def test_there_are_notebooks():
    names = [p.name for p in PATHS]
    assert len(names) >= 5, names


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_core/jupyter_client paths
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)  # in memory; the file is not written back
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # cwd of the kernel
        record_timing=False,
    )
    start = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell raised\n{ANSI.sub('', str(err))}", pytrace=False)
    except nbclient.exceptions.CellTimeoutError as err:
        pytest.fail(f"{path.name}: a cell ran past {CELL_TIMEOUT} s\n{err}", pytrace=False)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors
