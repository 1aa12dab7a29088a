"""Shared jaxtyping aliases.

Dimension names used across the package:

- `nq`: number of generalised coordinates (3 per planar body);
- `nc`: number of constraint rows, holonomic and Pfaffian together (m + h);
- `nb`: number of moving bodies;
- `k`: number of members of one stacked constraint group.
"""

from jaxtyping import Array, ArrayLike, Bool, Float, Int

Scalar = Float[ArrayLike, ""]
RealScalar = Float[Array, ""]
Q = Float[Array, " nq"]
QD = Float[Array, " nq"]
CMatrix = Float[Array, "nc nq"]
MassMatrix = Float[Array, "nq nq"]

__all__ = [
    "Array",
    "ArrayLike",
    "Bool",
    "CMatrix",
    "Float",
    "Int",
    "MassMatrix",
    "Q",
    "QD",
    "RealScalar",
    "Scalar",
]
