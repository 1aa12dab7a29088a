"""Constants shared by the parts of [`redundax.sweep`][]."""

FORMAT = "redundax sweep 1"
"""The `format` entry of the manifest and of the combined file."""

AXIS = "variants"
"""Name of the mesh axis the variants are sharded over."""

PROJECTION_STEPS = 10
"""Gauss–Newton steps of the initial projection (`initial = "project"`). Four (the
`Projection` default) leave 1e-12 m to 3.5e-9 m at steering offsets of 4–6 cm of the
mobile robot, which the rank test (tolerance ~1e-14) reads as a broken constraint
(rank 21 instead of 20); ten converge to round-off."""

SINGULAR_RTOL = 1e-8
"""Relative tolerance of the rank of C along a simulated motion (`rank_min`,
`rank_max`): a singular value below `SINGULAR_RTOL · σ₁` counts as zero. Drift of
the order of the integrator's tolerance makes dependent rows independent by far
less, and a singular configuration passed between two saved states by more."""
