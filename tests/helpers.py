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
# Closed-form reactions (with 1e-9-kg "massless" links or 1e-12 m² point-mass inertia).
TOL_CLOSED_FORM = 1e-6
# Gradients through Diffrax against central differences: relative error.
TOL_FD_SOLVE = 1e-5


def _rotz(a: float):
    c, s = math.cos(a), math.sin(a)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def planar_rotation(a: float) -> np.ndarray:
    return np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])


def planar_twin(mech: rx.Mechanism) -> rx.Mechanism:
    """The spatial model of a planar mechanism: bodies in the plane z = 0 (body z
    along global z, the planar inertia about it, out-of-plane moments 0.5 J and
    0.7 J), revolutes about z, translationals as prismatic joints along their
    in-plane axis, revolute drivers about z (d(0) = 0: the planar angle offset is
    subtracted)."""
    pose = {b.name: (np.asarray(b.position, float), float(b.angle)) for b in mech.bodies}
    pose["ground"] = (np.zeros(2), 0.0)
    bodies = [
        rx.SpatialBody(
            b.name,
            b.mass,
            (0.5 * b.inertia, 0.7 * b.inertia, b.inertia),
            position=(*b.position, 0.0),
            rotation=_rotz(b.angle),
            velocity=(*b.velocity, 0.0),
            angular_velocity=(0.0, 0.0, b.angular_velocity),
        )
        for b in mech.bodies
    ]
    pairs = []
    for p in mech.pairs:
        (ri, ai), (_, aj) = pose[p.body_i], pose[p.body_j]
        if isinstance(p, rx.RevoluteDriver):
            c = p.motion.coefficients
            motion = rx.Polynomial(c.at[0].add(-(ai - aj)))
            point = (*ri, 0.0)
            pairs.append(rx.RevoluteDriver3D(p.name, p.body_i, p.body_j, motion, point, (0, 0, 1)))
            continue
        point = (*(ri + planar_rotation(ai) @ np.asarray(p.point_i, float)), 0.0)
        if isinstance(p, rx.Revolute):
            pairs.append(rx.Revolute3D(p.name, p.body_i, p.body_j, point=point, axis=(0, 0, 1)))
        elif isinstance(p, rx.Translational):
            n = planar_rotation(aj) @ np.asarray(p.normal, float)
            axis = (n[1], -n[0], 0.0)
            pairs.append(rx.Prismatic3D(p.name, p.body_i, p.body_j, point=point, axis=axis))
        else:
            raise NotImplementedError(type(p).__name__)
    return rx.Mechanism(bodies, pairs, gravity=(*mech.gravity, 0.0), loads=())
