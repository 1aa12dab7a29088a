"""redundax: differentiable dynamics of redundantly constrained multibody systems.

The everyday objects and functions live here; families in submodules:
[`redundax.joints`][], [`redundax.motions`][], [`redundax.forces`][] (what a mechanism is
built from), [`redundax.methods`][] (ways of handling redundant constraints),
[`redundax.drift`][] (drift control), [`redundax.monitors`][] (what a run records),
[`redundax.analysis`][] (solvability, uniqueness, reactions of a pair),
[`redundax.equations`][] (the terms of the equations of motion),
[`redundax.statics`][] (static equilibrium, linearised modes),
[`redundax.joint_coordinates`][] (seed 002's divide-and-conquer algorithm),
[`redundax.io`][] (files, MJCF/URDF), [`redundax.models`][] (the reference mechanisms),
[`redundax.plot`][], [`redundax.sweep`][], [`redundax.optimize`][]; kernels and plumbing
in [`redundax.internal`][] (unstable).
"""

# Float64 unless the user set JAX_ENABLE_X64=0 (then float32, with a warning): first,
# before any array is made (see redundax._precision).
from . import _precision as _precision  # noqa: I001

from . import (
    analysis as analysis,
    drift as drift,
    equations as equations,
    forces as forces,
    internal as internal,
    io as io,
    joint_coordinates as joint_coordinates,
    joints as joints,
    methods as methods,
    models as models,
    monitors as monitors,
    motions as motions,
    statics as statics,
)
from ._citation import (
    citation as citation,
)
from ._compliant_stepping import (
    Compliance as Compliance,
    GonzalezStepper as GonzalezStepper,
    GonzalezTrajectory as GonzalezTrajectory,
)
from ._errors import (
    AccuracyWarning as AccuracyWarning,
    ModelError as ModelError,
)
from ._integration import (
    AbstractTrajectory as AbstractTrajectory,
)
from ._model import (
    Model as Model,
    Pair as Pair,
    State as State,
)
from ._options import (
    CheckInitial as CheckInitial,
    ProjectInitial as ProjectInitial,
    SaveAt as SaveAt,
    Singularities as Singularities,
)
from ._progress import (
    Progress as Progress,
)
from ._reactions import (
    Reactions as Reactions,
    reaction_history as reaction_history,
    reactions as reactions,
)
from ._run import (
    simulate as simulate,
)
from ._simulate import (
    SingularPassageWarning as SingularPassageWarning,
    Trajectory as Trajectory,
)
from ._solvability import (
    SolvabilityReport as SolvabilityReport,
    analyze_solvability as analyze_solvability,
)
from ._spatial_body import SpatialBody as SpatialBody
from ._spec import Body as Body, Load as Load, Marker as Marker, Mechanism as Mechanism
from ._structure import (
    Structure as Structure,
    decide as decide,
)
from ._validity import (
    ConstraintsLeftError as ConstraintsLeftError,
)
from ._version import __version__ as __version__
from .joint_coordinates import (
    JointTrajectory as JointTrajectory,
)
from .monitors._singularity import singularity_report as singularity_report
from .statics import equilibrium as equilibrium

# Submodules that pull in heavier dependencies (matplotlib for `plot`; the sweep's
# and the design study's machinery) are imported on first use, so that
# `rx.sweep`, `rx.optimize` and `rx.plot` work after `import redundax` alone without
# making every import pay for them.
_LAZY_SUBMODULES = ("optimize", "plot", "sweep")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib  # noqa: PLC0415 - only for the lazy submodules

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBMODULES})
