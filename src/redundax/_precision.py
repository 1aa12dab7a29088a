"""The working precision, fixed when redundax is imported, and the tolerances set by it.

redundax computes in float64: the seed papers' numbers, the rank decisions at
1e-8 and the IFToMM tolerances need it, so importing redundax switches JAX to 64-bit
(`jax_enable_x64`). A user who sets `JAX_ENABLE_X64=0` (or `false`) in the
environment before importing it is obeyed instead: JAX stays in single precision,
redundax warns once (a `UserWarning` naming the variable), and every tolerance that
round-off sets takes its single-precision value below, so that rank decisions,
consistency checks and step-size floors still mean what they say (in float32,
round-off in C or Φ is about 1e-7 of their scale, above every float64 tolerance).
Single precision is for exploration where speed matters more than the last digits
(a GPU's float32 units); verdicts near a tolerance, the validation figures and every
number in the documentation are float64.

The precision is read once, at import: switching `jax_enable_x64` afterwards is not
seen by these tolerances (import redundax after choosing).
"""

import os
import warnings

import jax

_FALSE = ("0", "false", "no", "off")

X64: bool = os.environ.get("JAX_ENABLE_X64", "").strip().lower() not in _FALSE
"""Whether redundax computes in float64 (the default) — False where the user set
`JAX_ENABLE_X64=0` before importing it."""

if X64:
    jax.config.update("jax_enable_x64", True)
else:
    warnings.warn(
        "redundax: JAX_ENABLE_X64=0 is set, so results are single precision (float32) "
        "and tolerances are float32's (redundax._precision); unset it for float64, "
        "redundax's default",
        UserWarning,
        stacklevel=3,
    )


def precise(float64: float, float32: float) -> float:
    """The tolerance of the working precision: `float64` by default, `float32`
    where the user chose single precision (module docstring)."""
    return float64 if X64 else float32
