"""Design optimisation with gradients of unique reactions through the Diffrax solve.

A design study changes a few named dimensions of a mechanism (design variables)
to make a functional of its simulated manoeuvre smaller: the peak of a unique
reaction, its impulse. Every evaluation simulates the whole manoeuvre; the
gradient with respect to the design variables comes from reverse-mode autodiff
through the solve ([`redundax.simulate`][], Diffrax's checkpointed adjoint) and
is applied by an Optax optimiser.

**Design variables.** Each variable is one number x that moves several model
parameters together, affinely: every parameter address a (the addresses of
`redundax sweep FILE --list-parameters`, e.g. `pairs.D.point_j.x`) takes the
value a₀ + c_a (x − x₀), a₀ its nominal value, c_a the coefficient the design
file gives, x₀ the variable's initial value. So a left/right pair of joints
moves symmetrically (coefficients ±1), and a link that must keep spanning the
same points follows (e.g. c_x = 4a − b_x: coefficient −½ on each half-link
point). The optimiser works on z = (x − x₀)/s, s the variable's `scale` (a
typical change, in the variable's unit), so one learning rate suits every
variable; bounds are kept by projecting z onto its box after every step
(`optax.projections.projection_box`).

**Objective.** J(x) = Σ_k w_k f_k(x)/f_k(x₀) + penalty, each term normalised by
its initial value: a term is the smooth peak of a unique reaction over the
manoeuvre ([`redundax.analysis.peak_reaction`][], a power mean of order p) or the
magnitude of its impulse ([`redundax.analysis.reaction_impulse`][]). Only reactions a
rigid model determines can be design objectives; the design file is refused
otherwise (the others depend on the method of handling redundancy, not on the
design). The changed geometry makes the nominal initial state inconsistent: it
is projected onto the constraints first (a fixed number of Gauss–Newton steps,
differentiated too).

**Assemblability.** Near a singular configuration of the linkage (a dead point:
links and arms aligned) the constraint matrix C loses rank and the linkage
cannot be driven through it. The design file can require
σ_r(C)/σ_1(C) ≥ ρ_min at every saved state of the manoeuvre (r the nominal
rank, σ the singular values of C at q(t)): the penalty
weight · mean_t max(0, 1 − ρ(t)/ρ_min)² is added to J. A variant whose
simulation fails (the linkage locks or comes apart), or whose motion leaves its
constraints (`Trajectory.valid`: the drive takes the mechanism out of its
workspace), is a failed evaluation, never a design: J is non-finite and its step
is rejected, in one line saying when the motion left its constraints.

**Steps.** Each iteration evaluates J and ∇J at the current design (one
compiled call). A step that does not decrease J, gives a non-finite J, or a
gradient that is not finite (named by variable, with its addresses, and design)
is rejected: the design goes back and the learning rate is halved, so the
accepted objective history is monotone. The first iteration evaluates the
initial design, so `steps` iterations make at most `steps` − 1 optimiser updates
(the history has one entry per iteration). The optimiser stops after `steps`
iterations, when the relative decrease of J over an accepted step falls below
`tolerance`, or after `max_rejections` rejections in a row; and at once, with
that one line, when the initial design is rejected (there is no design to go
back to).

**Layout.** `_file` (the design file, `load_design`), `_problem` (`DesignProblem`:
the objective and its gradient), `_optimizer` (`optimize_design`), `_output`
(`write_result`, `write_history`); parameter addresses are
`redundax._parameters` (shared with `redundax.sweep`), and the command
`redundax optimize` is `redundax.cli.optimize`.
"""

from ._constants import (
    FORMAT as FORMAT,
    OBJECTIVES as OBJECTIVES,
    OPTIMIZERS as OPTIMIZERS,
    QUANTITIES as QUANTITIES,
)
from ._file import (
    Assembly as Assembly,
    Design as Design,
    Term as Term,
    Variable as Variable,
    load_design as load_design,
)
from ._optimizer import (
    DesignResult as DesignResult,
    Step as Step,
    optimize_design as optimize_design,
)
from ._output import (
    OUTPUTS as OUTPUTS,
    write_history as write_history,
    write_result as write_result,
)
from ._problem import DesignProblem as DesignProblem, Evaluation as Evaluation

__all__ = [
    "load_design",
    "Design",
    "Variable",
    "Term",
    "Assembly",
    "DesignProblem",
    "optimize_design",
    "DesignResult",
    "Step",
    "Evaluation",
    "write_result",
    "write_history",
]
