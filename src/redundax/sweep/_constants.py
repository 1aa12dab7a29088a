"""Constants shared by the parts of [`redundax.sweep`][]."""

FORMAT = "redundax sweep 1"
"""The `format` entry of the manifest and of the combined file."""

ASSEMBLY_PERCENTILES = (50.0, 90.0, 99.0)
"""The percentiles of the largest assembly force and moment per pair that a sweep's
summary reports (`stresses`), beside the maximum."""

AXIS = "variants"
"""Name of the mesh axis the variants are sharded over."""

PROJECTION_STEPS = 10
"""Gauss–Newton steps of the initial projection (`initial = "project"`). Four (the
`Projection` default) leave 1e-12 m to 3.5e-9 m at steering offsets of 4–6 cm of the
mobile robot, which the rank test (tolerance ~1e-14) reads as a broken constraint
(rank 21 instead of 20); ten converge to round-off."""

MAX_VARIANTS = 10_000_000
"""The most variants a sweep may have (`samples`, or the product of a grid's value
counts), and the largest `chunk_size`. The table of values (variants × parameters
float64 numbers) is made before the first chunk and the combined file is gathered
in memory, about a kilobyte per variant for a mechanism of the mobile robot's size:
ten million variants are ten gigabytes (the same bound as a run's `n_save`); a
larger sweep is refused before anything is allocated (10^15 samples were an attempt
to allocate 7 PiB)."""
