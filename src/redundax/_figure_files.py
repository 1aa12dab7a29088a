"""The figure files of [`redundax.plot.save_all`][] and `redundax plot`: their names
and formats, in a module of their own so that the command line can offer them as
choices without importing matplotlib."""

FIGURES = ("trajectories", "reactions", "violation", "solvability", "rank")
"""The figures of [`save_all`][redundax.plot.save_all], by file name (without extension)."""

FORMATS = ("png", "pdf", "svg")
"""The file formats of [`save_all`][redundax.plot.save_all]."""
