"""Statics of perfect and imperfect mechanisms: static equilibrium with its reactions
and their verdicts; the equations of motion linearised about a state (natural
frequencies, damping ratios, mode shapes, stability) in independent coordinates; and
the assembly stresses that manufacturing deviations cause in a redundant mechanism
(first order and exact, tolerance studies with a Monte Carlo, tolerance allocation).
Redundant constraints are handled as the dynamics handles them."""

from ._assembly_stress import (
    AssemblyStress as AssemblyStress,
    CompliantEquilibrium as CompliantEquilibrium,
    assembly_stress as assembly_stress,
    compliant_equilibrium as compliant_equilibrium,
    deviate as deviate,
)
from ._equilibrium import (
    Equilibrium as Equilibrium,
    equilibrium as equilibrium,
)
from ._linearize import (
    Linearization as Linearization,
    Modes as Modes,
    coordinate_labels as coordinate_labels,
    linearize as linearize,
)
from ._tolerances import (
    Allocation as Allocation,
    Deviation as Deviation,
    Tolerances as Tolerances,
    ToleranceStudy as ToleranceStudy,
    allocate_tolerances as allocate_tolerances,
    load_tolerances as load_tolerances,
    tolerance_study as tolerance_study,
    tolerance_sweep as tolerance_sweep,
)

__all__ = [
    "AssemblyStress",
    "CompliantEquilibrium",
    "assembly_stress",
    "compliant_equilibrium",
    "deviate",
    "Deviation",
    "Tolerances",
    "ToleranceStudy",
    "load_tolerances",
    "Allocation",
    "allocate_tolerances",
    "tolerance_study",
    "tolerance_sweep",
    "Equilibrium",
    "equilibrium",
    "Linearization",
    "Modes",
    "linearize",
    "coordinate_labels",
]
