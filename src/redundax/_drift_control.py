"""Drift control, one object per strategy (as Diffrax has one object per step-size
controller): Baumgarte terms in Γ, projection onto the constraint manifold
(González et al. 2011, Eqs. 2–3; DESIGN.md §2), both, or neither.

A drift control answers two questions `simulate` asks:

- `gamma(terms)`: the right-hand side Γ of C q̈ = Γ the accelerations are solved
  with (the constraints' own Γ, or Γ with stabilising terms added);
- `project(model, q, qd, t, ranks)`: the state put back on the manifold at each
  saved time, or None when the strategy does not project (`projects` says which,
  statically, so that `simulate` chooses its integration loop while tracing);
- `wrap(solver)`: the integrator, possibly wrapped (a projection after every step:
  [`StepProjection`][redundax.drift.StepProjection], in `_step_projection.py`).

Reactions along a motion need the same Γ as the motion
([`reaction_history`][redundax.reaction_history]
reads `Trajectory.drift_control`).
"""

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._assembly import constraint_matrix, mass_matrix, position_residual, velocity_bias
from ._model import Model
from ._qr import DECISION_RTOL, pivoted_qr
from ._types import Scalar
from ._validation import given_numbers


class AbstractDriftControl(eqx.Module):
    """How a simulation keeps its state on the constraint manifold.

    Subclasses override `gamma` (terms added to Γ) and/or set `projects = True` and
    override `project` (a correction at each saved time)."""

    projects: ClassVar[bool] = False
    """Whether it projects the state at every saved time."""

    projects_steps: ClassVar[bool] = False
    """Whether it projects the state at the end of every integrator step (the
    validity criterion then holds step ends to the projection's tolerance)."""

    def gamma(self, terms) -> Float[Array, " nc"]:
        """Γ the accelerations are solved with, from the `Terms` of the equations
        of motion (default: the constraints' own Γ)."""
        return terms.gamma

    def project(self, model: Model, q, qd, t, ranks=None):
        """`(q, q̇)` put back on the manifold (default: unchanged)."""
        return q, qd

    def prepare(self, method, structure) -> "AbstractDriftControl":
        """This drift control with its choices fixed for `method` and `structure`
        (called by `simulate` on the host; default: itself)."""
        return self

    def wrap(self, solver):
        """The Diffrax solver `simulate` integrates with, built on `solver` (default:
        `solver` itself; [`StepProjection`][redundax.drift.StepProjection] projects after
        every step)."""
        return solver


class NoDriftControl(AbstractDriftControl):
    """No drift control: the constraints' own Γ and no projection. The residuals
    then grow with the integration error (use for checks, not for long runs)."""


class Baumgarte(AbstractDriftControl):
    """Γ ← Γ − 2α (C q̇ + b) − β² [Φ; 0].

    `alpha` [1/s] damps velocity drift (holonomic and Pfaffian rows), `beta` [1/s]
    position drift (holonomic rows). α = β gives critical damping of the drift.
    `simulate`'s default drift control is `Baumgarte()` (α = β = 10 /s).
    """

    alpha: float = 10.0
    beta: float = 10.0

    def __check_init__(self):
        """Refuse gains (given as numbers, not traced) that are negative, not
        finite, or so large that 2α or β² overflows (the terms are then inf or NaN
        at the first evaluation)."""
        for name, term in (("alpha", "2α"), ("beta", "β²")):
            value = getattr(self, name)
            if isinstance(value, jax.core.Tracer):
                continue
            x = np.asarray(value, dtype=float)
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = 2.0 * x if name == "alpha" else x * x
            if not (np.all(x >= 0.0) and np.all(np.isfinite(scaled))):
                raise ValueError(
                    f"Baumgarte: {name} must be zero or positive with {term} a finite "
                    f"number, got {value!r}"
                )

    def gamma(self, terms) -> Float[Array, " nc"]:
        """Stabilised Γ from the `Terms` of the equations of motion."""
        velocity_error = terms.velocity_error
        nc, m = velocity_error.shape[0], terms.phi.shape[0]
        phi = jnp.concatenate([terms.phi, jnp.zeros(nc - m)])
        return terms.gamma - 2.0 * self.alpha * velocity_error - self.beta**2 * phi


def _pinv_parts(S, rank):
    """`(apply, project)`: v ↦ S⁺ v and v ↦ S S⁺ v for the symmetric positive
    semi-definite S at `rank` (its `rank` largest eigenvalues kept), applied to a
    vector through S's eigenvectors (no S⁺ is formed: with a tiny eigenvalue kept,
    a formed S⁺ has huge entries whose product with v cancels)."""
    w, U = jnp.linalg.eigh(S)  # ascending
    keep = jnp.arange(w.shape[0]) >= w.shape[0] - rank
    w_inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)

    def apply(v):
        return U @ (w_inv * (U.T @ v))

    def project(v):
        return U @ (jnp.where(keep, 1.0, 0.0) * (U.T @ v))

    return apply, project


@jax.custom_jvp
def symmetric_pinv_solve(S: Float[Array, "k k"], r: Float[Array, " k"], rank) -> Float[Array, " k"]:
    """x = S⁺ r for the symmetric positive semi-definite S at `rank` (its `rank`
    largest eigenvalues kept), by a symmetric eigensolver.

    Its derivative is the one of the pseudoinverse at fixed rank (Golub & Pereyra
    1973): dS⁺ = −S⁺ dS S⁺ + S⁺² dS P + P dS S⁺², P = I − S S⁺ — not the
    derivative of the eigendecomposition, which has 1/(w_i − w_j) terms and is NaN
    where eigenvalues repeat (a 3-fold symmetric mechanism, identical links, the
    p zero eigenvalues of a redundant one). JAX differentiates `jnp.linalg.pinv` the
    same way; the rank here is the structure's, not a cut-off."""
    apply, _ = _pinv_parts(S, rank)
    return apply(r)


@symmetric_pinv_solve.defjvp
def _symmetric_pinv_solve_jvp(primals, tangents):
    S, r, rank = primals
    dS, dr, _ = tangents
    apply, project = _pinv_parts(S, rank)
    x = apply(r)
    dS = 0.5 * (dS + dS.T)
    tail = dS @ apply(x)  # dS S⁺² r
    dx = (
        apply(dr - dS @ x)  # S⁺ dr − S⁺ dS S⁺ r
        + apply(apply(dS @ (r - project(r))))  # S⁺² dS P r
        + tail
        - project(tail)  # P dS S⁺² r
    )
    return x, dx


def weighted_pinv_step(M, A, residual, rank):
    """Δ = L⁻¹ (A L⁻¹)⁺ residual with M = Lᵀ L: the mass-weighted least-norm
    correction (W = L⁻¹ (A L⁻¹)⁺ of González et al.).

    Computed as M⁻¹ Aᵀ S⁺ residual with S = A M⁻¹ Aᵀ = (A L⁻¹)(A L⁻¹)ᵀ, whose
    pseudoinverse keeps the `rank` largest eigenvalues (`symmetric_pinv_solve`:
    several times cheaper than an SVD of A L⁻¹, and differentiable where
    eigenvalues repeat): near the manifold, dependent rows of A are independent
    only by tiny amounts, which must not be inverted."""
    MiAt = jnp.linalg.solve(M, A.T)
    S = A @ MiAt
    S = 0.5 * (S + S.T)
    return MiAt @ symmetric_pinv_solve(S, residual, rank)


class Projection(AbstractDriftControl):
    """Project q onto Φ(q, t) = 0 (fixed-point iteration q ← q − W Φ) and then q̇
    onto C q̇ + b = 0 (q̇ ← q̇ − W (C q̇ + b), holonomic and Pfaffian rows), with
    W = L⁻¹ (A L⁻¹)⁺, M = Lᵀ L (González et al. 2011, Eqs. 2–3).

    As a drift control of `simulate` it projects at every saved time and adds
    `baumgarte`'s terms to Γ between them (default `Baumgarte()`; None for the
    projection alone). Called directly, `Projection()(model, q, qd, t)` projects
    one state (e.g. `simulate(initial=rx.ProjectInitial(...))`).

    `iterations` is a fixed count (so the projection is differentiable); the
    ranks of Φ_q and C are taken at the configuration being projected unless
    given (`simulate` passes the ranks of its structure). `tolerance` [m, rad,
    m/s]: when given, a correction is applied only while the largest residual
    (max |Φ| for positions, max |C q̇ + b| for velocities) exceeds it, as in the
    projection of Kraus et al. (2001, Fig. 5), and the state is otherwise left as
    integrated; None (default): every iteration corrects.
    """

    projects: ClassVar[bool] = True
    iterations: int = eqx.field(static=True, default=4)
    baumgarte: Baumgarte | None = Baumgarte()
    tolerance: float | None = None

    def __check_init__(self):
        if isinstance(self.iterations, bool) or not (
            isinstance(self.iterations, int) and self.iterations >= 1
        ):
            raise ValueError(
                f"Projection field 'iterations': expected an integer ≥ 1, got {self.iterations!r}"
            )
        tol = None if self.tolerance is None else given_numbers(self.tolerance)
        if tol is not None and not (tol.ndim == 0 and tol > 0.0):
            raise ValueError(
                f"Projection field 'tolerance': expected None or a number > 0 [m, rad, m/s], "
                f"got {self.tolerance!r}"
            )

    def _correction(self, residual, step):
        """`step` (a function of nothing) where the residual is above the tolerance."""
        if self.tolerance is None:
            return step()
        return jnp.where(jnp.max(jnp.abs(residual)) > self.tolerance, step(), 0.0)

    def gamma(self, terms) -> Float[Array, " nc"]:
        return terms.gamma if self.baumgarte is None else self.baumgarte.gamma(terms)

    def check_mass(self, model: Model, what: str) -> None:
        """[`ModelError`][redundax.ModelError] naming the bodies whose block of M
        is singular (a lamina: I_z = I_x + I_y): this projection weights by M⁻¹,
        which would be NaN. From the masses themselves where they are concrete,
        else from the model's static mass facts (so also under a trace). `what`
        names the caller's field."""
        from ._bodies import mass_facts
        from ._errors import ModelError
        from ._validation import known

        facts = mass_facts(model.bodies) if known(model.bodies) else model.mass_facts
        if facts is None:
            return
        singular = np.flatnonzero(~np.asarray(facts.definite, dtype=bool))
        if singular.size:
            problems = [
                f"body {model.bodies.names[k]!r}: its block of the mass matrix is singular "
                f"(principal moments with I_z = I_x + I_y: a lamina)"
                for k in singular
            ]
            raise ModelError(
                f"{what}: rx.drift.Projection weights its correction by M⁻¹, but M is singular:\n"
                + "\n".join(f"  - {p}" for p in problems)
                + "\nuse drift_control=rx.drift.StepProjection() (the default, which solves "
                "without M⁻¹ for such a mechanism) and start from a consistent state, or "
                "give the bodies some thickness (I_z < I_x + I_y)",
                problems,
                what,
            )

    def project(self, model: Model, q, qd, t, ranks=None):
        return self(model, q, qd, t, ranks)

    def positions(
        self, model: Model, q: Float[Array, " nq"], t: Scalar, rank=None
    ) -> Float[Array, " nq"]:
        m = model.n_holonomic
        if m == 0:
            return q
        M = mass_matrix(model, q)
        if rank is None:
            rank = pivoted_qr(constraint_matrix(model, q, t)[:m], DECISION_RTOL).rank

        def step(_, q):
            A = constraint_matrix(model, q, t)[:m]
            phi = position_residual(model, q, t)
            return q - self._correction(phi, lambda: weighted_pinv_step(M, A, phi, rank))

        return jax.lax.fori_loop(0, self.iterations, step, q)

    def velocities(
        self, model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar, rank=None
    ) -> Float[Array, " nq"]:
        if model.n_constraints == 0:
            return qd
        C = constraint_matrix(model, q, t)
        if rank is None:
            rank = pivoted_qr(C, DECISION_RTOL).rank
        residual = C @ qd + velocity_bias(model, q, t)
        M = mass_matrix(model, q)
        return qd - self._correction(residual, lambda: weighted_pinv_step(M, C, residual, rank))

    def __call__(self, model: Model, q, qd, t, ranks=None):
        """Project positions, then velocities. `ranks` = (rank Φ_q, rank C) or None."""
        rank_q, rank_c = (None, None) if ranks is None else ranks
        q = self.positions(model, q, t, rank_q)
        return q, self.velocities(model, q, qd, t, rank_c)


def drift_control_of(
    stabilisation: Baumgarte | None, projection: AbstractDriftControl | None
) -> AbstractDriftControl:
    """The drift control that Baumgarte terms `stabilisation` and a `projection` at
    every saved time (each possibly None) stand for: the mapping of `simulate`'s
    former `stabilisation=` / `projection=` keywords and of a configuration's
    `stabilisation` / `projection` keys."""
    if projection is not None:
        return dataclasses.replace(projection, baumgarte=stabilisation)
    return NoDriftControl() if stabilisation is None else stabilisation


class _AsSimulated:
    """The default `drift_control` of the functions of a trajectory: the drift
    control the trajectory was simulated with (`Trajectory.drift_control`)."""

    def __repr__(self) -> str:
        return "AS_SIMULATED"


AS_SIMULATED = _AsSimulated()


def as_simulated(drift_control, trajectory):
    """`trajectory.drift_control` where `drift_control` is
    [`AS_SIMULATED`][redundax.drift.AS_SIMULATED], else
    `drift_control` (a drift control, or None for Γ itself)."""
    return trajectory.drift_control if drift_control is AS_SIMULATED else drift_control
