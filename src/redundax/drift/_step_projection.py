"""Projection onto the constraint manifold after every integrator step.

The standard projection method (Hairer, Lubich & Wanner, *Geometric Numerical
Integration*, §IV.4; Eich 1993): after each step of the underlying Runge–Kutta
method the end state is put back on Φ(q, t) = 0, C q̇ + b = 0 by the
mass-weighted least-norm correction, and the integration goes on from there. The
order of the method is kept, and the drift no longer accumulates, so no
stiff stabilising terms are needed: Baumgarte terms at α = β = 10 /s make the
adaptive controller follow the decay of the drift they cause (Bricard's linkage,
10 s at rtol = 1e-5 with Dopri8: 102 steps), while with a projection at every step
the step size is set by the motion alone (38 steps).

The correction is solved by the same linear algebra as the accelerations: the
all-rows Schur complement ([`schur_acceleration`][redundax.methods.schur_acceleration])
for dense terms, the block-sparse factorisation ([`BlockSparse`][redundax.methods.BlockSparse])
when the method assembles [`LocalTerms`][redundax.equations.LocalTerms]; no pivoting, no
rank, and dependent rows are handled as in q̈.

With a `tolerance` τ a step end is corrected only where its residual exceeds τ
(positions and velocities each on their own residual), as MBSSIM does (Kraus,
Winckler & Bock 2001, §9, Fig. 5): the state may then drift up to τ between
corrections. Kraus et al. found the stricter τ the shorter the run; what it does
here is measured by `experiments/six_bar_projection.py`.
"""

import abc
import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._assembly import (
    constraint_matrix,
    mass_matrix,
    position_residual,
    velocity_bias,
)
from .._equations import LocalTerms, local_terms
from .._types import Scalar
from .._wrapped_solver import AbstractDelegatingSolver
from ..methods import AbstractNullSpaceMethod, AbstractRedundancyMethod, BlockSparse, Elimination
from ..methods._kernels import null_space_acceleration, schur_acceleration, schur_solve
from ._base import AbstractDriftControl
from ._baumgarte import Baumgarte
from ._projection import check_tolerance


def _rows(terms, m: int):
    """The terms with the rows of C after the first `m` (Pfaffian rows) set to zero:
    a position correction answers to the holonomic rows only."""
    if isinstance(terms, LocalTerms):
        return dataclasses.replace(terms, R=terms.R.at[m:].set(0.0))
    return dataclasses.replace(terms, C=terms.C.at[m:].set(0.0))


class AbstractStepEnd(eqx.Module):
    """What [`ProjectedSteps`][redundax.drift.ProjectedSteps] does at the end of every step:
    `project_state(args,
    t, y)` returns the state the integration goes on from (absolute coordinates:
    [`StepProjection`][redundax.drift.StepProjection]; joint coordinates: the DCA's projection and
    the
    re-charting of rotation vectors)."""

    @abc.abstractmethod
    def project_state(self, args, t: Scalar, y):
        """`y` put back where the integration goes on from, at time `t`."""


class StepProjection(AbstractDriftControl, AbstractStepEnd):
    """Drift control by projection onto the constraint manifold after every step
    of the integrator (the standard projection method; module docstring).

    After each step, positions are corrected by `iterations` Newton steps
    q ← q − Δ, with Δ the mass-weighted least-norm solution of Φ_q Δ = Φ (the
    Pfaffian rows take no part), then velocities by one step q̇ ← q̇ − Δ with
    C Δ = C q̇ + b. Each is one solve by the path the method computes q̈ with
    (`path`): the all-rows Schur complement or the pivoted QR at the structure's
    rank (dense terms), or the block-sparse factorisation. For
    Runge–Kutta methods that reuse the last stage of a step as the first of the
    next (FSAL, e.g. Tsit5), that stage is evaluated again at the projected state.

    - `iterations`: Newton steps on the positions per integrator step (default
      1: a step drifts off by about its local error δ, and one Newton step leaves
      O(δ²), removed again after the next step, so nothing accumulates; Bricard
      at rtol = 5e-6, elimination: P3 within 1.82e-6 m of the reference with 1
      or with 2, 41 steps either way).
    - `baumgarte`: Baumgarte terms in Γ between the projections (default
      α = β = 1 /s, mild: they slow the drift inside a step, which keeps the
      saved states, interpolated by the integrator between projected step ends,
      closer to the manifold); None for none.
    - `tolerance` [m, rad, m/s]: when given, a correction is made only where the
      largest residual it answers to exceeds it (max |Φ| before each Newton step
      on the positions, max |C q̇ + b| before the one on the velocities; the
      meaning of [`Projection`][redundax.drift.Projection]'s `tolerance`), and a
      step end within it goes on as integrated (for FSAL methods with their last
      stage reused); so step ends stay within τ (or are put back to round-off),
      while saved states may drift by τ plus the local error. None (default):
      every step end is corrected. Pass a JAX array (`jnp.asarray(1e-6)`) to run
      every τ with one compiled program (a Python float is a constant of the
      program). With a tolerance the validity criterion holds step ends to the
      residual of unprojected states (`redundax._validity.UNPROJECTED_TOL`, 1e-3
      relative to the configuration's size), since they are no longer all
      projected.

    The saved states are the integrator's dense output, so their constraint
    residual is of the order of the local error, not round-off. Differentiable
    (a fixed number of iterations; with a `tolerance`, piecewise: the decision to
    correct carries no derivative) and usable under `jit`/`vmap`/`grad`.
    """

    iterations: int = eqx.field(static=True, default=1)
    baumgarte: Baumgarte | None = Baumgarte(1.0, 1.0)
    path: str | None = eqx.field(static=True, default=None)
    """How the corrections are solved: "block" (the block-sparse factorisation),
    "schur" (all-rows Schur complement), "qr" (pivoted QR at the structure's rank),
    "rows" (the Schur complement of the independent rows `rows`, as an
    [`Elimination`][redundax.methods.Elimination] solves q̈); None: chosen by `prepare`
    from the method and structure `simulate` runs with, from static facts only (the
    method's own path when it has one, else the structure's static
    `Structure.schur_path`; with neither, the structure's traced verdict chooses at
    run time)."""

    rows: Int[Array, " r"] | None = None
    """The rows the "rows" path solves with (an [`Elimination`][redundax.methods.Elimination]'s
    kept rows, set by `prepare`)."""

    pivots: str | None = eqx.field(static=True, default=None)
    """The "block" path's pivot metric (see [`BlockSparse`][redundax.methods.BlockSparse]),
    the method's (set by `prepare`)."""

    tolerance: Scalar | None = None
    """The residual [m, rad, m/s] above which a step end is corrected (None:
    every step end is; see the class docstring)."""

    def __check_init__(self):
        if self.path not in (None, "block", "schur", "qr", "rows"):
            raise ValueError(
                f"StepProjection field 'path': expected None, 'block', 'schur', 'qr' or "
                f"'rows', got {self.path!r}"
            )
        if (self.path == "rows") != (self.rows is not None):
            raise ValueError(
                "StepProjection fields 'path' and 'rows': path 'rows' needs the rows "
                "(and only it takes them)"
            )
        if not isinstance(self.iterations, int) or self.iterations < 0:
            raise ValueError(
                f"StepProjection field 'iterations': expected an integer >= 0, "
                f"got {self.iterations!r}"
            )
        check_tolerance("StepProjection", self.tolerance)

    @property
    def projects_steps(self) -> bool:  # pyright: ignore[reportIncompatibleVariableOverride]
        """Whether every step end is projected (a static fact). With a `tolerance` only
        those beyond it are, and the validity criterion holds step ends to the
        residual of unprojected states (or to the tolerance, if larger:
        `residual_bound`): near a singular pose a correction that starts from a
        residual of τ may end above the projected tolerance (the 6-bar at its
        straight-leg pose, τ = 1e-6: 1.4e-6 after the correction, where every step
        end corrected stays below 1e-6)."""
        return self.tolerance is None

    def residual_bound(self):
        return self.tolerance

    def gamma(self, terms) -> Float[Array, " nc"]:
        return terms.gamma if self.baumgarte is None else self.baumgarte.gamma(terms)

    def prepare(self, method, structure) -> "StepProjection":
        if self.path is not None:
            return self
        if isinstance(method, BlockSparse) or getattr(method, "block", False):
            return dataclasses.replace(self, path="block", pivots=method.pivots)
        # Static facts only: the method's own fixed path, else the structure's.
        if isinstance(method, Elimination) and method.spans_holonomic:
            return dataclasses.replace(self, path="rows", rows=method.keep)
        schur = structure.schur_path
        if isinstance(method, AbstractNullSpaceMethod) and method.schur is not None:
            schur = method.schur
        if schur is None:
            return self  # a traced verdict (structure decided inside a transformation)
        return dataclasses.replace(self, path="schur" if schur else "qr")

    def _correction(self, model, structure, q, qd, t, holonomic: bool):
        """Δ of least M-norm with Φ_q Δ = Φ (`holonomic`) or C Δ = C q̇ + b; zero
        where the residual Φ or C q̇ + b is within the `tolerance`."""
        residual, solve = self._solver(model, structure, q, qd, t, holonomic)
        if self.tolerance is None:
            return solve()
        # A mask, as in `Projection`: the correction is computed and discarded where
        # the residual is within the tolerance. A `lax.cond` that skips it was
        # measured slower on CPU (A02 in 3-D joints, 69 steps: +25 % where every
        # step end is corrected, nothing gained where none is: one correction is two
        # solves, a Dopri8 step 13-14 evaluations of the equations of motion).
        above = jnp.max(jnp.abs(residual)) > self.tolerance
        return jnp.where(above, solve(), 0.0)

    def _solver(self, model, structure, q, qd, t, holonomic: bool):
        """`(residual, solve)`: the residual Φ (`holonomic`) or C q̇ + b, and the
        function of nothing that returns the correction Δ answering to it.

        Only what the correction needs is assembled: C and Φ, or C and b (not Γ
        nor the forces of [`redundax.equations.dynamics_terms`][])."""
        m, nc = model.n_holonomic, model.n_constraints
        if self.path == "block":
            terms = local_terms(model, q, qd, t)
            if holonomic:
                terms, target = _rows(terms, m), jnp.concatenate([terms.phi, jnp.zeros(nc - m)])
            else:
                target = terms.velocity_error
            unforced = dataclasses.replace(terms, F=jnp.zeros_like(terms.F))

            def by_blocks():
                return BlockSparse(pivots=self.pivots).solve(unforced, target, structure).qdd

            return target, by_blocks
        C = constraint_matrix(model, q, t)
        M, block = mass_matrix(model), model.bodies.dof
        inverse = model.bodies.inverse_mass_blocks()
        zero = jnp.zeros_like(q)
        if holonomic:
            target = position_residual(model, q, t)
        else:
            target = C @ qd + velocity_bias(model, q, t)
        if self.path == "rows":
            # The eliminated rows' C and target are zeroed and their μ held at zero;
            # the kept rows have full row rank: one Cholesky, no regularisation.
            active = jnp.zeros(nc, bool).at[self.rows].set(True)
            if holonomic:
                active = active & (jnp.arange(nc) < m)
                target = jnp.concatenate([target, jnp.zeros(nc - m)])

            def by_rows():
                # With F = 0 the solve's "q̈" is M⁻¹ Cᵀ (C M⁻¹ Cᵀ)⁻¹ target = Δ.
                delta, _ = schur_solve(C, M, zero, target, block, inverse, active)
                return delta

            return target, by_rows
        if holonomic:
            C, rank = C[:m], structure.rank_holonomic
        else:
            rank = structure.rank

        def by_schur():
            return schur_acceleration(C, M, zero, target, block, mass_inverse=inverse)

        def by_qr():
            return null_space_acceleration(C, M, zero, target, structure.rtol, rank)

        def by_verdict():
            # Not fixed by `prepare`: the structure was decided inside a transformation.
            return jax.lax.cond(structure.schur, by_schur, by_qr)

        return target, {"schur": by_schur, "qr": by_qr}.get(self.path, by_verdict)

    def project_state(self, args, t: Scalar, y):
        """`(q, q̇)` of `y` put back on the manifold at time `t`, with the model and
        structure of `simulate`'s `args`."""
        return _project_state(self, args, t, y)

    def _project_state(self, args, t: Scalar, y):
        model, structure, _, _ = args
        q, qd = y
        if model.n_constraints == 0:
            return y
        zero = jnp.zeros_like(qd)
        for _ in range(self.iterations if model.n_holonomic else 0):
            q = q - self._correction(model, structure, q, zero, t, holonomic=True)
        qd = qd - self._correction(model, structure, q, qd, t, holonomic=False)
        return q, qd

    def wrap(self, solver: diffrax.AbstractSolver) -> diffrax.AbstractSolver:
        return ProjectedSteps(solver, self)


@eqx.filter_jit
def _project_state(projection: StepProjection, args, t, y):
    # A jitted function is traced once per argument shapes: Diffrax calls the step
    # (and, under `grad`, its linearisation) several times while tracing a solve.
    return projection._project_state(args, t, y)


class ProjectedSteps(AbstractDelegatingSolver):
    """A Diffrax solver whose every step ends with `projection.project_state`
    (the error estimate and the dense output are the inner solver's)."""

    solver: diffrax.AbstractSolver
    projection: AbstractStepEnd

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        y1, error, dense, state, result = self.solver.step(
            terms, t0, t1, y0, args, solver_state, made_jump
        )
        end = self.projection.project_state(args, t1, y1)
        if isinstance(self.solver, diffrax.AbstractRungeKutta) and state is not None:
            # FSAL: the stored last stage belongs to the unprojected state; it is
            # evaluated again where the step end moved (with a tolerance, a step end
            # within it does not, and the stage is still the step end's).
            pairs = zip(jax.tree.leaves(end), jax.tree.leaves(y1), strict=True)
            state = (jnp.any(jnp.stack([jnp.any(a != b) for a, b in pairs])), state[1])
        return end, error, dense, state, result


def default_drift_control(method: AbstractRedundancyMethod) -> AbstractDriftControl:
    """The default drift control of `simulate`:
    [`StepProjection`][redundax.drift.StepProjection]`()`, a
    projection onto the constraint manifold after every integrator step (with
    Baumgarte terms at α = β = 1 /s between), for every method but those whose
    equations carry their own drift terms (`method.stabilises_itself`: the penalty
    method), which get [`Baumgarte`][redundax.drift.Baumgarte]`()` (ignored by them).

    Why the projection: Baumgarte terms alone cannot keep a closed chain on its
    branch through a singular configuration. IFToMM A02 with ten parallelograms
    (`models.n_four_bar(10)`), 10 s through about twenty flat poses: with
    `Baumgarte()` B0 ends 2.0 m off the exact motion with 10 % of the energy gained
    in jumps at the flat poses; with `StepProjection()` 1.1e-6 m off, energy kept to
    2.7e-7, in 336 steps instead of 904 (the projection also spares the step-size
    control from following the drift). The mobile robot and Bricard take 66 and 94
    steps instead of 160 and 230.
    """
    if getattr(method, "stabilises_itself", False):
        return Baumgarte()
    return StepProjection()
