"""Static equilibrium on the constraint manifold.

At rest, M q̈ + Cᵀ λ = F with q̈ = 0: the applied forces must lie in the range of Cᵀ,
P(q) F(q) = 0 with P the orthogonal projector onto the null space of C, and
Φ(q) = 0. Both are solved together as one consistent least-squares problem in q
alone (Levenberg–Marquardt, Optimistix), [Φ(q); P(q) F(q) / f] = 0, f a force
scale: its solution does not depend on the scaling, and λ never appears, so its
non-uniqueness in a redundant mechanism cannot stall the solver. P is built from
a maximal independent set of rows C_I (the pivoted QR of Cᵀ at the structure's rank,
rows equal by symmetry taken in index order: `ROW_TIE`), P F = F − C_Iᵀ (C_I C_Iᵀ)⁻¹
C_I F, smooth wherever the rank is constant.

The static reactions are the dynamics' [`reactions`][redundax.reactions] at the equilibrium at
rest (q̈ = 0 there), with the same per-pair and per-component verdicts; stability
and modes come from [`linearize`][redundax.statics.linearize].
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, ArrayLike, Float

from .._assembly import constraint_matrix, generalized_forces, position_residual
from .._errors import ModelError
from .._friction import refuse_friction
from .._model import Model
from .._motion import Constant
from .._precision import precise
from .._qr import DECISION_RTOL, pivoted_qr
from .._reactions import Reactions, _reactions as reactions_at
from .._structure import Structure, _independent, decide
from .._types import Scalar
from .._validation import check_vector
from ..drift._projection import weighted_pinv_step
from ..methods import AbstractRedundancyMethod, NullSpace
from ..methods._specialise import checked
from ._linearize import (
    Linearization,
    coordinate_labels,
    linearization,
    refuse_pfaffian,
    static_rank,
)

POSITION_TOL = precise(1e-10, 1e-5)
"""Largest |Φ| [m, rad] of an accepted equilibrium."""

FORCE_RTOL = precise(1e-9, 1e-4)
"""Largest unbalanced generalised force |P F| of an accepted equilibrium, relative
to the force scale (the largest |F| at the start, at least the weight of the
lightest body under gravity, and 1e-12 N)."""

ROW_TIE = precise(1e-9, 1e-5)
"""The rows of C that make P: among rows whose remaining norms tie within this
fraction (rows equal by symmetry, which differ by round-off), the lowest-numbered is
taken first (`pivoted_qr`'s `tie`). Off the manifold the iterates' P depends on which
rows are taken, and the solve's path with it: left to round-off, Bricard's rest took
66 to 100 steps by the build, and with jax 0.12 at XLA's -O0 (the test suite's
setting) stalled at max |Φ| 2.5e-6 after 256; with the rows taken by index, 65 steps
with jax 0.9.2 and 0.12.0.1 at -O0 and 65-71 at the default level."""

PROJECTION_STEPS = 12
"""Gauss–Newton steps that bring q0 onto Φ = 0 before the structure is decided."""


class Equilibrium(eqx.Module):
    """A static equilibrium.

    - `q`: the configuration [m, rad]; `t`: the time the loads were taken at.
    - `residual`: the largest generalised force the constraints do not balance,
      max |P F| [N, N m] (0 at an exact equilibrium).
    - `violation`: max |Φ(q)| [m, rad].
    - `reactions`: the static [`Reactions`][redundax.Reactions] (the dynamics' at rest), with
      their uniqueness verdicts.
    - `linearization`: the equations linearised about it (`.modes()`: frequencies,
      damping ratios, mode shapes).
    - `stable`: whether the stiffness is positive definite on the null space of C.
    - `steps`: Levenberg–Marquardt steps taken.
    - `structure`: the [`Structure`][redundax.Structure] the reactions and the projector used.
    """

    q: Float[Array, " nq"]
    t: Float[Array, ""]
    residual: Float[Array, ""]
    violation: Float[Array, ""]
    reactions: Reactions
    linearization: Linearization
    stable: Array
    steps: Array
    structure: Structure


def unbalanced(model: Model, q, t, independent) -> Float[Array, " nq"]:
    """P F: the part of the applied forces at rest that no multipliers of the
    `independent` rows of C (a boolean mask) can balance."""
    F = generalized_forces(model, q, None, t)
    C = constraint_matrix(model, q, t)[: model.n_holonomic]
    w = jnp.asarray(independent[: model.n_holonomic], dtype=F.dtype)
    Cw = C * w[:, None]
    S = Cw @ Cw.T + jnp.diag(1.0 - w)
    return F - Cw.T @ jnp.linalg.solve(S, Cw @ F)


def onto_constraints(model: Model, q, t, steps: int = PROJECTION_STEPS):
    """q moved onto Φ(q, t) = 0 by Gauss–Newton steps of least Euclidean norm."""
    m = model.n_holonomic
    if m == 0:
        return q
    eye = jnp.eye(q.shape[0])
    rank = pivoted_qr(constraint_matrix(model, q, t)[:m], DECISION_RTOL).rank

    def step(_, q):
        A = constraint_matrix(model, q, t)[:m]
        return q - weighted_pinv_step(eye, A, position_residual(model, q, t), rank)

    return jax.lax.fori_loop(0, steps, step, q)


def force_scale(model: Model, q, t) -> Float[Array, ""]:
    """f of the module docstring [N]."""
    F = generalized_forces(model, q, None, t)
    weight = jnp.min(model.bodies.mass) * jnp.linalg.norm(model.gravity)
    return jnp.maximum(jnp.maximum(jnp.max(jnp.abs(F)), weight), 1e-12)


@eqx.filter_jit
def _start(model, q0, t):
    q = onto_constraints(model, q0, t)
    return q, force_scale(model, q, t)


@eqx.filter_jit
def _equilibrium(model, q, t, structure, scale, method, rtol, atol, max_steps: int, rank: int):
    # The rows that make P, ties broken by index (`ROW_TIE`): the same solve in every
    # build.
    independent = _independent(model, constraint_matrix(model, q, t), rank, None, ROW_TIE)

    def residual(q, _):
        return jnp.concatenate(
            [position_residual(model, q, t), unbalanced(model, q, t, independent) / scale]
        )

    solution = optx.least_squares(
        residual,
        optx.LevenbergMarquardt(rtol=rtol, atol=atol),
        q,
        max_steps=max_steps,
        throw=False,
    )
    q = solution.value
    lin = linearization(model, q, jnp.zeros_like(q), t, structure, rank, at_rest=True)
    return Equilibrium(
        q=q,
        t=t,
        residual=jnp.max(jnp.abs(unbalanced(model, q, t, independent)), initial=0.0),
        violation=jnp.max(jnp.abs(position_residual(model, q, t)), initial=0.0),
        reactions=reactions_at(model, q, jnp.zeros_like(q), t, structure, method, None),
        linearization=lin,
        stable=lin.stable(),
        steps=solution.stats["num_steps"],
        structure=structure,
    )


def _drivers(model: Model) -> list[str]:
    """The driver pairs whose prescribed motion is not constant (a constant one only
    locks its joint: statics applies). Where the model is traced, every driver."""
    moving: set[int] = set()
    try:
        for group in model.holonomic:
            motion = getattr(group, "motion", None)
            if motion is not None and not isinstance(motion, Constant):
                moving.update(int(r) for r in np.asarray(group.rows).ravel())
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        moving = set(range(model.n_holonomic))
    return [p.name for p in model.pairs if p.kind.endswith("driver") and p.rows[0] in moving]


def equilibrium(
    model: Model,
    q0: Float[ArrayLike, " nq"],
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    rtol: float = precise(1e-12, 1e-6),
    atol: float = precise(1e-14, 1e-7),
    max_steps: int = 256,
    throw: bool = True,
) -> Equilibrium:
    """The static equilibrium of `model` nearest `q0` under its loads at time `t`
    (gravity, constant loads, springs, bushings and the other force elements).

    **Arguments:**

    - `model`: a holonomic mechanism without moving drivers (one whose motion is a
      `Constant` only locks its joint); `q0`: a starting
      configuration (need not satisfy the constraints: it is first moved onto
      them) [m, rad]; `t`: the time at which time-dependent loads are taken [s].
    - `structure`: the rank and independent rows (default: [`decide`][redundax.decide] at `q0`
      moved onto the constraints). Under `jax.jit`, `jax.vmap` or `jax.grad` pass
      one decided outside (the mobility sizes the linearisation).
    - `method`: how the static reactions' non-unique components are chosen
      (default minimum norm, the null-space method); the unique ones do not
      depend on it.
    - `rtol`, `atol`: Levenberg–Marquardt's tolerances on q; `max_steps`: its
      largest number of steps.
    - `throw`: refuse (a [`ModelError`][redundax.ModelError]) when no equilibrium is found
      within `POSITION_TOL` and `FORCE_RTOL`; False returns the last iterate
      (`residual`, `violation` say how far it is). Checked where the result is
      concrete.

    **Returns:** an [`Equilibrium`][redundax.statics.Equilibrium].

    Differentiable (implicit differentiation of the solve, Optimistix): the
    gradient of `eq.q` or of a unique reaction with respect to geometry, masses or
    stiffnesses.

    !!! example
        ```python
        eq = rx.equilibrium(model, q0)
        print(eq.stable, eq.linearization.modes().frequencies_hz)
        wrench, unique = eq.reactions.pair("A")
        ```
    """
    refuse_pfaffian(model, "equilibrium")
    refuse_friction(
        model, "equilibrium", "its modes would miss the friction's stiction-band damping"
    )
    drivers = _drivers(model)
    if drivers:
        verb = "prescribes" if len(drivers) == 1 else "prescribe"
        raise ModelError(
            f"equilibrium: {', '.join(repr(d) for d in drivers)} {verb} a motion (a "
            "driver): a driven mechanism is not at rest under its loads; remove the "
            "driver, or replace it by a spring (forces) that holds the joint",
            [f"pair {d!r}: a driver" for d in drivers],
            "equilibrium",
        )
    check_vector(q0, model.n_coordinates, "q0", "equilibrium")
    if not (isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps >= 1):
        raise ModelError(
            f"equilibrium: max_steps: expected a positive integer, got {max_steps!r}",
            source="equilibrium",
        )
    t = jnp.asarray(t, dtype=float)
    q, scale = _start(model, jnp.asarray(q0, dtype=float), t)
    if structure is None:
        structure = decide(model, q, t)
    rank = static_rank(structure, "equilibrium")
    method = checked(method, structure, model)
    eq = _equilibrium(model, q, t, structure, scale, method, rtol, atol, max_steps, rank)
    return _checked(model, eq, scale, max_steps) if throw else eq


def _checked(model: Model, eq: Equilibrium, scale, max_steps: int) -> Equilibrium:
    """`eq`, or a refusal of a failed solve: on the host where the result is
    concrete, else by `eqx.error_if` on its configuration."""
    failed = (eq.residual > FORCE_RTOL * scale) | (eq.violation > POSITION_TOL)
    if isinstance(failed, jax.core.Tracer):
        q = eqx.error_if(
            eq.q,
            failed,
            "equilibrium: no static equilibrium near q0 (throw=False returns the last iterate)",
        )
        return eqx.tree_at(lambda e: e.q, eq, q)
    if not bool(failed):
        return eq
    residual, violation, scale, steps = (
        float(eq.residual),
        float(eq.violation),
        float(scale),
        int(eq.steps),
    )
    if violation > POSITION_TOL:
        reason = (
            f"the constraints cannot be met near q0 (max |Φ| = {violation:.3g} after "
            f"{steps} steps): the mechanism cannot be assembled there"
        )
    else:
        force = np.abs(np.asarray(unbalanced(model, eq.q, eq.t, eq.structure.independent)))
        where = coordinate_labels(model)[int(np.argmax(force))]
        reason = (
            f"after {steps} of at most {max_steps} steps a generalised force of "
            f"{residual:.3g} (on {where}) is still not balanced by the constraints "
            f"(accepted: {FORCE_RTOL * scale:.3g}): nothing holds the mechanism against its "
            "loads in some direction (an unbounded fall, a free body, a spring that "
            "never balances them)"
        )
    raise ModelError(
        f"equilibrium: no static equilibrium near q0: {reason}. Add a support or a "
        "spring, start nearer an equilibrium, or pass throw=False to inspect the last "
        "iterate",
        source="equilibrium",
    )
