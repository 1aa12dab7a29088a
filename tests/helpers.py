"""Shared tolerances (named, never bare literals) and small test utilities."""

import math
from pathlib import Path

import numpy as np

import redundax as rx

# Reference data published by others, vendored with its source (tests/data/README.md).
DATA = Path(__file__).resolve().parent / "data"

# Exactness of assembled quantities against hand-derived oracles (float64 round-off).
TOL_EXACT = 1e-12
# Paper values printed with 3 significant digits.
TOL_PAPER = 1e-3
# Central finite differences with h ~ eps^(1/3): truncation + round-off ~ 1e-10 relative.
TOL_FD = 1e-6
# Solvability: B_X of a unique pair is round-off; of a non-unique one, O(1).
TOL_ZERO_B = 1e-10


def central_difference(f, x, h=None):
    """Central finite-difference derivative of scalar-valued `f` along each entry of `x`."""
    x = np.asarray(x, dtype=float)
    h = np.cbrt(np.finfo(float).eps) * max(1.0, float(np.max(np.abs(x)))) if h is None else h
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        out.flat[k] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


def read_reference(name, dtype=float):
    """A table of tests/data/: `(column names, rows)`. Its `#` lines (source,
    licence) are skipped wherever they are; the first other line names the columns."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    header, *rows = [line for line in lines if line.strip() and not line.startswith("#")]
    return header.split(","), np.loadtxt(rows, delimiter=",", dtype=dtype, ndmin=2)


# --- dynamics (tests/test_dynamics.py) ---
# Same motion by different methods at rtol = 1e-10, atol = 1e-12 (issue 3): max |Δq| [m, rad].
TOL_SAME_MOTION = 1e-7
# Unique reactions by different methods: relative difference.
TOL_SAME_REACTION = 1e-6
# Non-unique reactions must differ by more than this (relative) somewhere in the run.
MIN_NONUNIQUE_DIFFERENCE = 1e-3
# Constraint violation with projection (positions and velocities).
TOL_PROJECTED_VIOLATION = 1e-9
# Documented bound with Baumgarte (α = β = 10 /s) alone at rtol = 1e-8, atol = 1e-10.
TOL_BAUMGARTE_VIOLATION = 1e-8
# Energy drift relative to the largest kinetic energy of the run (rtol = 1e-11).
TOL_ENERGY_RELATIVE = 1e-7
# IFToMM A01 high-precision threshold [m].
TOL_A01_POSITION = 1e-3
# IFToMM A02 high precision on B0 [m] (the same level).
TOL_A02_POSITION = 1e-3
# Closed-form reactions (with 1e-9-kg "massless" links or 1e-12 m² point-mass inertia).
TOL_CLOSED_FORM = 1e-6
# Gradients through Diffrax against central differences: relative error.
TOL_FD_SOLVE = 1e-5


def planar_rotation(a: float) -> np.ndarray:
    return np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])


def planar_twin(mech: rx.Mechanism) -> rx.Mechanism:
    """The spatial model of a planar mechanism (`rx.models.spatial_twin`)."""
    return rx.models.spatial_twin(mech)

# --- force elements (tests/test_forces.py) ---
# Linear oscillators (spring, torsion spring, dampers) against their closed-form motion
# at rtol = 1e-10, atol = 1e-12 [m, rad].
TOL_OSCILLATOR = 1e-8
# Accelerations at a closed-form static equilibrium (bushing), relative to g.
TOL_STATIC = 1e-9
# Andrews' squeezer: the seven angles at t = 0.03 s against the Bari test set [rad]
# (issue 14).
TOL_ANDREWS_ANGLE = 1e-6
