"""The research notebooks (notebooks/*.ipynb) run from top to bottom.

Each notebook is executed in a fresh Jupyter kernel ("python3": this interpreter,
so the virtual environment redundax is installed in), with notebooks/ as its
working directory, on a copy held in memory: the committed files and their
outputs are never rewritten. A cell that raises fails the test with that cell's
source and traceback. The notebooks carry their own `assert`s on the numbers they
report (rank 20 and p = 2 for the mobile robot, p = 1 and mobility 1 for Bricard,
gradient against central differences, ...), so this also checks their science.
So that it does not rest on those alone (a notebook's `assert` can be edited away
with its prose), the test appends one cell to the in-memory copy that prints a few
key numbers of each notebook as JSON (`KEY_NUMBERS` below), and checks them here.

Compilation dominates: the five notebooks take 2.5–4 minutes together on a
shared 2-core CPU (measured 165 s at a load average of 1.4 and 221 s at 3; the
design-gradient notebook is the longest, 50–60 s, most of it compiling one reverse
pass through a Diffrax solve).
"""

import json
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
MARK = "KEY NUMBERS: "

# Per notebook (by stem): the expressions, in the notebook's namespace at its end,
# whose values the appended cell prints; `_checks` below asserts on them.
KEY_NUMBERS = {
    "01_mobile_robot_reactions": {
        "rank": 'd["rank"]',
        "p": 'd["redundancy"]',
        "mobility": 'd["dof"]',
        "not_unique": "not_unique",
        "b_norm_B": 'd["pairs"]["B"]["b_norm"]',
        "B_components": 'd["pairs"]["B"]["components"]',
        "tests_agree": "agree",
        "qr_rank": "by_qr.rank",
        "unique_diff_relative": "diff[u].max() / scale.max()",
        "nonunique_diff_min": "diff[~u].min()",
        "eliminated_multipliers": "np.abs(lam[:, [5, 20]]).max()",
    },
    "02_five_methods": {
        "p": "report.redundancy",
        "methods": "list(runs)",
        "dq": "dq",
        "unique_spread_relative": "unique_spread / scale.max()",
        "nonunique_spread": "nonunique_spread",
        "penalty_vs_compliant_t0_relative": "at_start / scale.max()",
        "penalty_vs_compliant_over_time": "over_time",
    },
    "03_bricard": {
        "gruebler": "gruebler",
        "rank": "report.rank",
        "p": "report.redundancy",
        "mobility": "report.dof",
        "unique_joints": "int(np.asarray(report.unique).sum())",
        "unique_components": "int(row_unique.sum())",
        "P3_x": "[P3[:, 0].min(), P3[:, 0].max()]",
        "P3_y": "[P3[:, 1].min(), P3[:, 1].max()]",
        "rigid_energy_drift": "np.abs(E - E[0]).max()",
        "compliant": 'summary["compliant"]',
        "projected": 'summary["compliant + projection"]',
    },
    "04_design_gradients": {
        "grad_vs_fd_relative": "rel_fd",
        "elimination_vs_null_relative": "rel_method",
        "B_chosen_unique": "chosen.unique",
        "B_force_x_unique": "[verdicts[0.0]['force x'], verdicts[t]['force x']]",
        "J_history": "[h[1] for h in history]",
        "decrease": "decrease",
    },
    "05_sweep_solvability": {
        "residual": 'out["residual"].max()',
        "ranks_exact_geometry": "sorted(set(rank[i0].tolist()))",
        "rank_1mm_straight": "rank[i0 + 2, j0]",
        "rank_1mm_offset_4cm": "rank[i0 + 2, j0 + 8]",
        "p_1mm_offset_4cm": 'out["p"][(i0 + 2) * len(offsets) + j0 + 8]',
        "rank_flip_delta": "flip",
        "log_ranks": "r_log",
    },
    "06_joint_coordinates": {
        "four_bar": "[joint4.redundancy, joint4.mobility, all(joint4.unique), same4]",
        "four_bar_steps": "sorted(set(joint4.step))",
        "bricard": "[jointB.redundancy, jointB.mobility, any(jointB.unique), sameB]",
        "bricard_steps": "steps",
        "acceleration_relative": "acc_diff",
        "reaction_relative": "lam_diff",
        "run_reaction_relative": "gap",
        "run_energy_drift": "drift",
    },
    "07_tolerances": {
        "p": "p",
        "unique_components": "unique_components",
        "ratios": "ratios",
        "forces": "forces",
        "allocated_um": "allocated_um",
        "p99_allocated": "p99_allocated",
        "p99_nominal": "p99_nominal",
    },
}


def _key_cell(expressions):
    """Source of the appended cell: one line, MARK and the values as JSON."""
    items = ", ".join(f"{name!r}: _plain({expr})" for name, expr in expressions.items())
    return (
        "import json as _json, numpy as _np\n"
        "_plain = lambda v: _np.asarray(v).tolist() if hasattr(v, 'shape') or "
        "isinstance(v, _np.generic) else v\n"
        f"print({MARK!r} + _json.dumps({{{items}}}, default=_plain))"
    )


def _checks(stem, k):
    """The key numbers of each notebook (the values it reports, with margins)."""
    if stem == "01_mobile_robot_reactions":
        assert (k["rank"], k["p"], k["mobility"], k["qr_rank"]) == (20, 2, 1, 20)
        assert sorted(k["not_unique"]) == ["B", "C", "W1", "W2", "W3", "W4"]
        assert abs(k["b_norm_B"] - 0.34**0.5) < 1e-3  # the paper's ‖B_X‖
        assert k["B_components"] == {"force x": True, "force y": False}
        assert k["tests_agree"] is True
        assert k["unique_diff_relative"] < 1e-6  # minimum norm = elimination {6, 21}
        assert k["nonunique_diff_min"] > 1e-2  # reported 0.19 N
        assert k["eliminated_multipliers"] == 0.0
    elif stem == "02_five_methods":
        assert k["p"] == 2 and len(k["methods"]) == 5
        dq = k["dq"]  # max |Δq| against the null-space run
        assert dq["eliminate {6, 21}"] < 1e-7 and dq["penalty (same k)"] < 1e-5
        assert k["unique_spread_relative"] < 1e-5  # reported 6e-7
        assert k["nonunique_spread"] > 1e-2  # reported 0.19 N
        assert k["penalty_vs_compliant_t0_relative"] < 1e-5
        assert k["penalty_vs_compliant_over_time"] > 1e-2  # reported 0.17 N
    elif stem == "03_bricard":
        assert k["gruebler"] == 0
        assert (k["rank"], k["p"], k["mobility"]) == (59, 1, 1)
        assert k["unique_joints"] == 0 and k["unique_components"] == 0
        assert k["P3_x"][0] < -0.999 and k["P3_x"][1] > 0.999
        assert k["P3_y"][0] > -1 - 1e-6 and k["P3_y"][1] < -(3**0.5) / 2 + 1e-4
        assert k["rigid_energy_drift"] < 1e-4
        # (max |Φ|, max |C q̇ + b|, P3 vs rigid, ΔE) of the González runs.
        assert 1e-6 < k["compliant"][0] < 1e-3 and k["projected"][0] < 1e-10
        assert k["compliant"][2] < 0.05 and k["projected"][2] < 0.05
    elif stem == "04_design_gradients":
        assert k["grad_vs_fd_relative"] < 1e-5  # reported 3.5e-9
        assert k["elimination_vs_null_relative"] < 1e-8  # reported 5e-14
        assert k["B_chosen_unique"] is False
        assert k["B_force_x_unique"] == [True, False]  # at t = 0 only
        J = k["J_history"]
        assert len(J) == 5 and all(b < a for a, b in zip(J, J[1:], strict=False))
        assert k["decrease"] > 0.1  # reported 21 %
    elif stem == "05_sweep_solvability":
        assert k["residual"] < 1e-12
        assert k["ranks_exact_geometry"] == [20]
        assert k["rank_1mm_straight"] == 20 and k["rank_1mm_offset_4cm"] == 21
        assert k["p_1mm_offset_4cm"] == 1
        assert 1e-15 < k["rank_flip_delta"] < 1e-11  # reported 1e-13 m
        r = k["log_ranks"]
        assert r[0] == 20 and r[-1] == 21 and all(b >= a for a, b in zip(r, r[1:], strict=False))
    elif stem == "07_tolerances":
        assert k["p"] == 1 and k["unique_components"] == 0
        assert all(abs(r - 1) < 1e-3 for r in k["ratios"])  # exact / first order
        f = k["forces"]  # linear in the misfit
        assert abs(f[1] / f[0] - 10) < 1e-6 and abs(f[2] / f[1] - 10) < 1e-6  # 1e-6, 1e-5, 1e-4 m
        assert abs(k["p99_allocated"] / 50.0 - 1) < 0.05
        assert all(1.0 < v < 100.0 for v in k["allocated_um"].values())
    elif stem == "06_joint_coordinates":
        # Four-bar: p = 0, all unique, decided from the base up; Bricard: p = 1,
        # nothing unique, one dropped row and the two-pair rule; both as the QR test.
        assert k["four_bar"] == [0, 1, True, True] and k["four_bar_steps"] == ["assembly"]
        assert k["bricard"] == [1, 1, False, True]
        assert k["bricard_steps"] == ["dropped", "two pairs"]
        assert k["acceleration_relative"] < 1e-9 and k["reaction_relative"] < 1e-7
        # A 2 s joint run: the DCA's wrenches at its last state are the absolute ones.
        assert k["run_reaction_relative"] < 1e-7 and k["run_energy_drift"] < 1e-5
    else:
        pytest.fail(f"{stem}: no key numbers listed in KEY_NUMBERS")


def test_there_are_notebooks():
    names = [p.name for p in PATHS]
    assert len(names) >= 6, names


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_core/jupyter_client paths
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)  # in memory; the file is not written back
    assert path.stem in KEY_NUMBERS, f"{path.name}: list its key numbers in KEY_NUMBERS"
    nb.cells.append(nbformat.v4.new_code_cell(_key_cell(KEY_NUMBERS[path.stem])))
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
    printed = "".join(
        out.get("text", "")
        for out in nb.cells[-1].get("outputs", [])
        if out.get("output_type") == "stream"
    )
    lines = [line for line in printed.splitlines() if line.startswith(MARK)]
    assert len(lines) == 1, printed
    key = json.loads(lines[0][len(MARK) :])
    print(f"{path.name}: {key}")
    _checks(path.stem, key)
