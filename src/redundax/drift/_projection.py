"""Projection onto the constraint manifold at every saved time: the
mass-weighted least-norm correction of González et al. (2011), Eqs. 2–3."""

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._assembly import constraint_matrix, mass_matrix, position_residual, velocity_bias
from .._bodies import mass_facts
from .._errors import ModelError
from .._model import Model
from .._qr import DECISION_RTOL, pivoted_qr
from .._types import Scalar
from .._validation import given_numbers, known
from ._base import AbstractDriftControl, NoDriftControl
from ._baumgarte import Baumgarte


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


def check_tolerance(owner: str, tolerance) -> None:
    """Refuse a projection tolerance (field `tolerance` of the drift control
    `owner`) that is not None or one finite number > 0 [m, rad, m/s]. A traced
    value is left to whoever made the trace (who checked the nominal one).

    **Raises:** `TypeError` for a value that is not a number (a string, a bool);
    `ValueError` for an array of another shape than `()`, or a number that is
    negative, zero, NaN or infinite."""
    if tolerance is None or isinstance(tolerance, jax.core.Tracer):
        return
    fix = (
        "expected None (always correct) or one finite number > 0 [m, rad, m/s], "
        "e.g. 1e-6 or jnp.asarray(1e-6)"
    )
    if isinstance(tolerance, bool | str) or np.asarray(tolerance).dtype.kind not in "fiu":
        raise TypeError(
            f"{owner} field 'tolerance': {fix}; got {tolerance!r} ({type(tolerance).__name__})"
        )
    tol = given_numbers(tolerance)
    if tol is None or tol.ndim != 0 or not (np.isfinite(tol) and tol > 0.0):
        raise ValueError(f"{owner} field 'tolerance': {fix}; got {tolerance!r}")


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
    integrated; None (default): every iteration corrects. A JAX array (e.g.
    `jnp.asarray(1e-6)`) serves every value with one compiled program (a Python
    float is a constant of the program).
    """

    projects: ClassVar[bool] = True
    iterations: int = eqx.field(static=True, default=4)
    baumgarte: Baumgarte | None = Baumgarte()
    tolerance: Scalar | None = None

    def __check_init__(self):
        if isinstance(self.iterations, bool) or not (
            isinstance(self.iterations, int) and self.iterations >= 1
        ):
            raise ValueError(
                f"Projection field 'iterations': expected an integer ≥ 1, got {self.iterations!r}"
            )
        check_tolerance("Projection", self.tolerance)

    def _correction(self, residual, step):
        """`step` (a function of nothing) where the residual is above the tolerance."""
        if self.tolerance is None:
            return step()
        return jnp.where(jnp.max(jnp.abs(residual)) > self.tolerance, step(), 0.0)

    def residual_bound(self):
        return self.tolerance

    def gamma(self, terms) -> Float[Array, " nc"]:
        return terms.gamma if self.baumgarte is None else self.baumgarte.gamma(terms)

    def check_mass(self, model: Model, what: str) -> None:
        """[`ModelError`][redundax.ModelError] naming the bodies whose block of M
        is singular (a lamina: I_z = I_x + I_y): this projection weights by M⁻¹,
        which would be NaN. From the masses themselves where they are concrete,
        else from the model's static mass facts (so also under a trace). `what`
        names the caller's field."""
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
