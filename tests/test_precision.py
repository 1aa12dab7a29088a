"""Single precision: float64 by default, `JAX_ENABLE_X64=0` honoured (`redundax._precision`).

This process computes in float64 (tests/conftest.py turns x64 on), so the float32 checks
run in ONE child process started with `JAX_ENABLE_X64=0`, which prints its findings as
JSON; the float64 runs they are compared with are computed here while it works. The
verdicts are compared with known float64 values (below, with their provenance). The
child's runs: IFToMM A02 with three parallelograms (`n_four_bar(3)`) for 1 s, through
its flat pose at t ≈ 0.717 s (in float32 it stalled there at the former tolerances,
its later states NaN), and Bricard for 0.5 s (4,440 steps for 1 s before: round-off
of the Schur path's q̈)."""

import importlib
import json
import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

import redundax as rx
from helpers import a02_exact_b0
from mechanism_generator import generate  # noqa: F401 (the runs' `eval`)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "concepts.md"

# The float64 verdicts of the shipped mechanisms at their initial states:
# (rank of C, redundancy p, degrees of freedom, pairs with non-unique reactions).
VERDICTS = {
    # Wojtyra & Frączek's robot, the seed paper's numbers (tests/test_solvability.py).
    "mobile_robot": (20, 2, 1, ["B", "C", "W1", "W2", "W3", "W4"]),
    # Bricard's 6R loop: mobility 1 where Grübler-Kutzbach counts 0, so one redundant
    # row, shared by all six joints (float64 analysis; tests/test_structure.py).
    "bricard": (59, 1, 1, ["J0", "J1", "J2", "J3", "J4", "J5"]),
    # Grübler: 3·3 − 2·4 = 1, rows independent at a regular pose (test_solvability.py).
    "four_bar": (8, 0, 1, []),
    # A02, seven links and ten pins: 21 − 20 = 1, regular with the cranks upright.
    "n_four_bar_3": (20, 0, 1, []),
    # IFToMM A01: one pin.
    "pendulum": (2, 0, 1, []),
}

# The constants set by the precision: module, name, float64 value, float32 value.
CONSTANTS = (
    ("redundax._qr", "DECISION_RTOL", 1e-8, 1e-4),
    ("redundax._structure", "UNIQUENESS_RTOL", 1e-8, 1e-4),
    ("redundax._structure", "SCHUR_MIN_EIGENVALUE", 5e-5, 1e-2),
    ("redundax.methods._kernels", "SCHUR_REGULARISATION", 1e-6, 1e-3),
    ("redundax.methods._block_kernel", "PIVOT_RTOL", 1e-6, 1e-4),
    ("redundax._assembly", "CONSISTENCY_TOL", 1e-8, 1e-5),
    ("redundax._validity", "PROJECTED_TOL", 1e-6, 1e-4),
    ("redundax._validity", "STALL_STEP", 1e-9, 1e-6),
    ("redundax._bodies", "MASS_DEFINITE_RTOL", 1e-12, 1e-6),
    ("redundax._run", "RTOL", 1e-8, 1e-5),
    ("redundax._run", "ATOL", 1e-10, 1e-6),
    ("redundax.methods.elimination", "TIE", 1e-9, 1e-5),
    ("redundax.monitors._singularity", "TIE", 1e-12, 1e-5),
    ("redundax.joint_coordinates._model", "TREE_TOLERANCE", 1e-8, 1e-5),
)

# Runs compared in both precisions: (model, final time [s]).
RUNS = {
    "n_four_bar_3": ("rx.models.n_four_bar(3)", 1.0),
    "bricard": ("rx.models.bricard()", 0.5),
    # A generated mechanism, not a shipped one: the 3-RRR's spatial twin with seven
    # laminae (a singular mass block each in natural coordinates) and identical legs
    # (tests/mechanism_generator.py, twin_rrr3 seed 1).
    "twin_rrr3_laminae": ("generate('twin_rrr3', 1).mechanism", 0.3),
}
SAVES = 41

# Final positions in float32 against float64, relative to max(1, max |q|): measured
# 1e-7 to 8e-6 on the shipped mechanisms over 1-2 s (A02's B0 against its exact
# motion: 2e-6 m here).
TOL_FLOAT32_POSITION = 1e-4

CHILD = f"""
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import redundax as rx
    import redundax._precision, redundax.internal  # imported again: no second warning
import importlib
import jax
import numpy as np
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from mechanism_generator import generate  # after redundax: its warning is caught above
out = dict(
    warnings=[str(w.message) for w in caught if "JAX_ENABLE_X64" in str(w.message)],
    categories=[w.category.__name__ for w in caught if "JAX_ENABLE_X64" in str(w.message)],
    x64=bool(jax.config.jax_enable_x64),
    X64=rx._precision.X64,
    constants=[getattr(importlib.import_module(m), n) for m, n, _, _ in {CONSTANTS!r}],
    verdicts={{}},
    runs={{}},
)
for name in {list(VERDICTS)!r}:
    mech = getattr(rx.models, name.removesuffix("_3"))(*([3] if name.endswith("_3") else []))
    model, state = mech.build(), mech.initial_state()
    report = rx.analyze_solvability(model, state.q)
    out["verdicts"][name] = dict(
        verdict=[int(report.rank), int(report.redundancy), int(report.dof),
                 [n for n, u in zip(report.names, report.unique) if not u]],
        dtype=str(state.q.dtype),
    )
for name, (make, t1) in {RUNS!r}.items():
    mech = eval(make)
    traj = rx.simulate(mech.build(), mech.initial_state(), t1, saveat=rx.SaveAt(n={SAVES}))
    out["runs"][name] = dict(
        valid=bool(traj.valid.all()),
        steps=int(traj.num_steps),
        dtypes=[str(traj.q.dtype), str(traj.qd.dtype), str(traj.ts.dtype)],
        unique=[bool(u) for u in np.asarray(traj.structure.unique)],
        ts=np.asarray(traj.ts, dtype=float).tolist(),
        q=np.asarray(traj.q, dtype=float).tolist(),
    )
print(json.dumps(out))
"""


def _float64_runs() -> dict:
    out = {}
    for name, (make, t1) in RUNS.items():
        mech = eval(make)
        traj = rx.simulate(mech.build(), mech.initial_state(), t1, saveat=rx.SaveAt(n=SAVES))
        assert bool(traj.valid.all()), name
        out[name] = dict(
            steps=int(traj.num_steps),
            q=np.asarray(traj.q),
            unique=[bool(u) for u in np.asarray(traj.structure.unique)],
        )
    return out


@pytest.fixture(scope="module")
def runs():
    """(the child's JSON, its stderr, the float64 runs computed here meanwhile)."""
    env = {**os.environ, "JAX_ENABLE_X64": "0"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    streams = {}

    def read():  # the pipes, while this process computes (a full pipe blocks the child)
        streams["out"], streams["err"] = child.communicate()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        reference = _float64_runs()
    finally:
        reader.join(timeout=600)
        if reader.is_alive():
            child.kill()
            reader.join()
    assert child.returncode == 0, streams["err"][-3000:]
    return json.loads(streams["out"].strip().splitlines()[-1]), streams["err"], reference


def test_single_precision_is_honoured_with_one_warning(runs):
    """`JAX_ENABLE_X64=0`: JAX stays in float32, redundax says so once (a
    UserWarning naming the variable), states and trajectories are float32, and the
    constants take their float32 values."""
    out, _, _ = runs
    assert len(out["warnings"]) == 1 and out["categories"] == ["UserWarning"]
    assert "JAX_ENABLE_X64=0" in out["warnings"][0] and "float32" in out["warnings"][0]
    assert out["x64"] is False and out["X64"] is False
    assert out["constants"] == [f32 for _, _, _, f32 in CONSTANTS]
    assert {v["dtype"] for v in out["verdicts"].values()} == {"float32"}
    for run in out["runs"].values():
        assert run["dtypes"] == ["float32"] * 3


def test_single_precision_verdicts_are_the_float64_ones(runs):
    """Rank, redundancy, degrees of freedom and the non-unique pairs of the shipped
    mechanisms, in float32, are their float64 verdicts."""
    out, _, _ = runs
    assert {k: tuple(v["verdict"]) for k, v in out["verdicts"].items()} == VERDICTS


def test_single_precision_runs_follow_the_float64_ones(runs):
    """Default `simulate` runs in float32 are valid, take about as many steps as in
    float64 (not thousands: the Schur path's round-off), claim the same unique pairs, and stay within
    `TOL_FLOAT32_POSITION` of the float64 runs; A02 passes its flat pose on its
    branch (B0 against the exact 1-DOF motion)."""
    out, err, reference = runs
    assert "SingularPassageWarning" not in err
    for name, run in out["runs"].items():
        q32, q64 = np.asarray(run["q"]), reference[name]["q"]
        assert run["valid"] and np.all(np.isfinite(q32)), name
        assert run["unique"] == reference[name]["unique"], name
        assert run["steps"] <= 3 * reference[name]["steps"] + 10, (name, run["steps"])
        scale = max(1.0, float(np.max(np.abs(q64))))
        assert float(np.max(np.abs(q32 - q64))) < TOL_FLOAT32_POSITION * scale, name
    run = out["runs"]["n_four_bar_3"]
    q, ts = np.asarray(run["q"]), np.asarray(run["ts"])
    b0 = q[:, :2] + 0.5 * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], axis=1)  # crank 0's tip
    assert float(np.max(np.abs(b0 - a02_exact_b0(3, ts)))) < TOL_FLOAT32_POSITION


@pytest.mark.parametrize(
    "value, x64", [(None, True), ("1", True), ("true", True), ("0", False), (" False ", False)]
)
def test_the_variable_is_read_at_import(monkeypatch, value, x64):
    """Unset (or set to a true value), redundax turns x64 on and warns of nothing;
    `0`/`false`/`no`/`off` (any case, spaces around) keep single precision, with one
    warning. Here by re-executing `redundax._precision` (this process stays float64)."""
    precision = sys.modules["redundax._precision"]
    if value is None:
        monkeypatch.delenv("JAX_ENABLE_X64", raising=False)
    else:
        monkeypatch.setenv("JAX_ENABLE_X64", value)
    jax.config.update("jax_enable_x64", False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            importlib.reload(precision)
        assert precision.X64 is x64 and jax.config.jax_enable_x64 is x64
        assert precision.precise(1e-8, 1e-4) == (1e-8 if x64 else 1e-4)
        named = [w for w in caught if "JAX_ENABLE_X64" in str(w.message)]
        assert len(named) == (0 if x64 else 1)
        assert all(w.category is UserWarning for w in named)
    finally:
        monkeypatch.delenv("JAX_ENABLE_X64", raising=False)
        jax.config.update("jax_enable_x64", True)
        importlib.reload(precision)
    assert precision.X64 and jax.config.jax_enable_x64


def test_float64_is_the_default():
    """This process (no `JAX_ENABLE_X64=0`): float64 states and the float64 constants."""
    assert rx.models.pendulum().initial_state().q.dtype == np.float64
    values = [getattr(importlib.import_module(m), n) for m, n, _, _ in CONSTANTS]
    assert values == [f64 for _, _, f64, _ in CONSTANTS]


def _number(value: float) -> str:
    """1e-08 -> 1e-8, as the documentation writes it."""
    return re.sub(r"e-0*", "e-", f"{value:.0e}")


def test_the_documentation_lists_both_values():
    """docs/concepts.md's Precision section names each constant with its two values."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("\n## Precision") :]
    rows = {}
    for line in section.splitlines():
        for _, name, _, _ in CONSTANTS:
            if line.startswith("|") and f"`{name}`" in line:
                rows.setdefault(name, []).append(line)
    for module, name, f64, f32 in CONSTANTS:
        lines = [r for r in rows.get(name, []) if module.rsplit(".", 1)[-1] in r] or rows.get(name)
        assert lines, name
        assert any(_number(f64) in r and _number(f32) in r for r in lines), (name, lines)
