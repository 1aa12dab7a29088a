"""Shared tolerances (named, never bare literals) and small test utilities."""

import numpy as np

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
