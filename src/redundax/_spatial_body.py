"""A spatial body as the user writes it: mass, inertia tensor and initial pose, and
the checks of an inertia tensor and of a rotation matrix.

Natural coordinates are an internal choice (`_bodies.py`): a user never writes them.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

Vector = Sequence[float] | Any
Matrix = Sequence[Sequence[float]] | Any
IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@dataclasses.dataclass(frozen=True)
class SpatialBody:
    """A spatial rigid body; its frame sits at its centre of mass.

    **Arguments:**

    - `name`: unique name ("ground" is reserved for the fixed frame).
    - `mass`: mass [kg], > 0.
    - `inertia`: inertia tensor about the centre of mass in body axes [kg m²]:
      a symmetric 3 × 3 matrix, or its three principal moments (body axes along
      the principal axes). Positive definite and physically realisable (each
      principal moment at most the sum of the other two).
    - `position`: initial global position of the centre of mass [m].
    - `rotation`: initial rotation matrix, body to global components (columns:
      the body axes in global components); proper orthogonal.
    - `velocity`: initial velocity of the centre of mass [m/s].
    - `angular_velocity`: initial angular velocity, global components [rad/s].
    """

    name: str
    mass: float
    inertia: Matrix | Vector
    position: Vector = (0.0, 0.0, 0.0)
    rotation: Matrix = IDENTITY
    velocity: Vector = (0.0, 0.0, 0.0)
    angular_velocity: Vector = (0.0, 0.0, 0.0)


def check_inertia(p, value, where: str):
    """A valid inertia tensor from `value` (3 × 3, or 3 principal moments)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        p.add(f"{where}: expected a 3 × 3 matrix or 3 principal moments, got {value!r}")
        return np.eye(3)
    if arr.shape == (3,):
        arr = np.diag(arr)
    if arr.shape != (3, 3):
        p.add(f"{where}: expected a 3 × 3 matrix or 3 principal moments, got shape {arr.shape}")
        return np.eye(3)
    if not np.all(np.isfinite(arr)):
        p.add(f"{where}: contains a non-finite value")
        return np.eye(3)
    scale = max(float(np.max(np.abs(arr))), 1e-300)
    if np.max(np.abs(arr - arr.T)) > 1e-9 * scale:
        p.add(f"{where}: must be symmetric")
        return np.eye(3)
    moments = np.linalg.eigvalsh(arr)
    if moments[0] <= 0.0:
        p.add(f"{where}: must be positive definite, principal moments {moments.tolist()}")
    elif moments[2] > moments[0] + moments[1] + 1e-12 * scale:
        p.add(
            f"{where}: principal moments {moments.tolist()} violate the triangle inequality "
            "(no mass distribution has them)"
        )
    return np.asarray(0.5 * (arr + arr.T))


def check_rotation(p, value, where: str):
    """A proper rotation matrix from `value`."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        p.add(f"{where}: expected a 3 × 3 rotation matrix, got {value!r}")
        return np.eye(3)
    if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
        p.add(f"{where}: expected a finite 3 × 3 rotation matrix, got shape {arr.shape}")
        return np.eye(3)
    err = float(np.max(np.abs(arr.T @ arr - np.eye(3))))
    if err > 1e-9 or np.linalg.det(arr) < 0.0:
        p.add(
            f"{where}: not a proper rotation matrix (|RᵀR − I| = {err:.2g}, det = "
            f"{np.linalg.det(arr):.3g}); its columns are the body axes in global components"
        )
        return np.eye(3)
    return np.asarray(arr)
