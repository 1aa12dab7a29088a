"""The equations of motion linearised about a state, in independent coordinates.

Small motions about a state (q, q̇, t) of a holonomic mechanism, in coordinates ξ
along Z, an orthonormal basis of the null space of C, obey

    M_r ξ̈ + D_r ξ̇ + K_r ξ = 0,   M_r = Zᵀ M Z.

K_r and D_r come from a chart of the constraint manifold, q(ξ) = q + Z ξ + Y η(ξ) (Y
spanning the range of Cᵀ, η by Newton steps so that Φ = 0), in which the equations
of motion hold no multiplier: Jᵀ M J ξ̈ = Jᵀ (F − M J̇ ξ̇), J = ∂q/∂ξ; both matrices
are its autodiff (`linearization`). At rest K_r equals Zᵀ (Σ λ_k ∇²Φ_k − ∂F/∂q) Z:
the applied forces' stiffness and the geometric stiffness of the constraints, through
which the curvature of the manifold enters (a pendulum's restoring stiffness under
gravity is all geometric). Where C keeps its rank along the manifold (every regular
configuration), a self-stress N μ adds nothing to it: differentiating Nᵀ C = 0 along
the manifold gives Σ μ_k Zᵀ ∇²Φ_k Z = 0. So redundancy changes no frequency: the
answer does not depend on which of the non-unique multipliers a method would choose,
and the chart never chooses any.

About an equilibrium (q̇ = 0, q̈ = 0) the modes are the small oscillations, the same
in any coordinates. About a moving state of a trajectory the linearisation is exact
to first order in a perturbation of the state at that instant, in the chart's
coordinates ξ = Zᵀ (q − q₀); there K_r and D_r depend on the coordinates (a change
of coordinates φ = f(ξ) adds f‴ ξ̇² terms: a swinging pendulum's K_r/M_r in ξ exceeds
the one in its angle by L² ω² / (1 + L²), tests/test_statics.py), and the
eigenvalues describe the local growth or decay at that instant in those coordinates,
not a periodic solution.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._assembly import constraint_matrix, generalized_forces, mass_matrix, position_residual
from .._errors import ModelError
from .._friction import refuse_friction
from .._model import Model
from .._precision import precise
from .._qr import pivoted_qr
from .._structure import Structure, decide
from .._types import Scalar
from .._validation import check_vector

SYMMETRY_RTOL = precise(1e-8, 1e-4)
"""Largest |K_r − K_rᵀ| relative to |K_r| for which the stiffness counts as
symmetric (conservative loads); above it
[`Linearization.modes`][redundax.statics.Linearization.modes] refuses (a follower
load: the undamped modes are not real)."""

STABILITY_RTOL = precise(1e-9, 1e-5)
"""An eigenvalue ω² of (K_r, M_r) counts as positive above this fraction of the
largest |ω²| (below: neutral or unstable)."""


def coordinate_labels(model: Model) -> tuple[str, ...]:
    """`body.x`, `body.y`, `body.angle` per planar body; `body.r_x`, …, `body.w_z`
    per spatial body (natural coordinates): one label per entry of q."""
    if model.dim == 2:
        parts = ("x", "y", "angle")
    else:
        parts = tuple(f"{v}_{a}" for v in "ruvw" for a in "xyz")
    return tuple(f"{name}.{p}" for name in model.bodies.names for p in parts)


def refuse_pfaffian(model: Model, what: str) -> None:
    """A [`ModelError`][redundax.ModelError] naming the Pfaffian pairs: statics and modes here are
    those of holonomic mechanisms."""
    pfaffian = [p.name for p in model.pairs if p.rows and p.rows[0] >= model.n_holonomic]
    if pfaffian:
        raise ModelError(
            f"{what}: the mechanism has nonholonomic (Pfaffian) constraints "
            f"({', '.join(repr(n) for n in pfaffian)}): their velocities are not the "
            "derivatives of free coordinates, so the second-order modes and the energy "
            "argument for stability used here do not apply; remove them (e.g. model the "
            "wheels' contact by a joint) for a static analysis",
            [f"pair {n!r}: Pfaffian" for n in pfaffian],
            what,
        )


class Modes(eqx.Module):
    """Undamped modes of a [`Linearization`][redundax.statics.Linearization], lowest first.

    - `frequencies_hz`: natural frequencies ω/2π [Hz]; an unstable mode
      (ω² < 0) has the negative value −√(−ω²)/2π (its growth rate over 2π).
    - `omega_squared`: the eigenvalues ω² of K_r φ = ω² M_r φ [1/s²].
    - `damping_ratios`: ζ = φᵀ D_r φ / (2 ω) with φ mass-normalised (the exact ratio
      for one degree of freedom and for proportional damping; 0 where ω ≤ 0).
    - `shapes`: each mode in the model's coordinates, Z φ scaled to a largest entry
      of +1, shape `(f, nq)`.
    - `labels` (static): the coordinate of each column of `shapes`.
    """

    frequencies_hz: Float[Array, " f"]
    omega_squared: Float[Array, " f"]
    damping_ratios: Float[Array, " f"]
    shapes: Float[Array, "f nq"]
    labels: tuple[str, ...] = eqx.field(static=True)


class Linearization(eqx.Module):
    """M_r ξ̈ + D_r ξ̇ + K_r ξ = 0 about a state, with q = q₀ + Z ξ (module docstring).

    - `q`, `qd`, `t`: the state.
    - `basis`: Z, orthonormal columns spanning the null space of C, shape `(nq, f)`
      (f = n − rank C: the mobility; the coordinates ξ are along them).
    - `mass`, `stiffness`, `damping`: M_r, K_r, D_r, shape `(f, f)`.
    - `labels` (static): the coordinate names of q.
    """

    q: Float[Array, " nq"]
    qd: Float[Array, " nq"]
    t: Float[Array, ""]
    basis: Float[Array, "nq f"]
    mass: Float[Array, "f f"]
    stiffness: Float[Array, "f f"]
    damping: Float[Array, "f f"]
    labels: tuple[str, ...] = eqx.field(static=True)

    @property
    def mobility(self) -> int:
        """f, the number of independent coordinates."""
        return self.basis.shape[-1]

    def asymmetry(self) -> Float[Array, ""]:
        """|K_r − K_rᵀ| / |K_r| (Frobenius): 0 for conservative loads."""
        return _asymmetry(self.stiffness)

    def modes(self) -> Modes:
        """The undamped modes (K_r φ = ω² M_r φ, K_r symmetric), lowest first.

        **Raises:** [`ModelError`][redundax.ModelError] where K_r is concrete and not symmetric
        within `SYMMETRY_RTOL` (a follower load): its modes are complex; the
        state-space matrix of [`state_matrix`][redundax.statics.Linearization.state_matrix]
        has them."""
        if not isinstance(self.stiffness, jax.core.Tracer):
            asym = float(_asymmetry(self.stiffness))
            if asym > SYMMETRY_RTOL:
                raise ModelError(
                    f"modes: the reduced stiffness is not symmetric (|K - Kᵀ|/|K| = {asym:.2g}): "
                    "a load follows the motion (non-conservative), so the undamped modes are "
                    "not real; use Linearization.state_matrix() and its eigenvalues",
                    source="modes",
                )
        return _modes(self)

    def stable(self) -> Array:
        """Whether every ω² is positive (the stiffness positive definite on the null
        space of C): a strict minimum of the potential where the loads are
        conservative. A neutral direction (ω² ≈ 0) is not stable."""
        w = _omega_squared(self)
        scale = jnp.maximum(jnp.max(jnp.abs(w), initial=0.0), jnp.finfo(w.dtype).tiny)
        return jnp.all(w > STABILITY_RTOL * scale)

    def state_matrix(self) -> Float[Array, "2f 2f"]:
        """A of ẋ = A x, x = (ξ, ξ̇): its eigenvalues are the damped modes' s = −ζω ± iω√(1−ζ²)
        (also for non-symmetric stiffness and non-proportional damping)."""
        f = self.mobility
        Minv = jnp.linalg.inv(self.mass)
        top = jnp.concatenate([jnp.zeros((f, f)), jnp.eye(f)], axis=1)
        bottom = jnp.concatenate([-Minv @ self.stiffness, -Minv @ self.damping], axis=1)
        return jnp.concatenate([top, bottom], axis=0)


@jax.jit
def _asymmetry(K):
    return jnp.linalg.norm(K - K.T) / jnp.maximum(jnp.linalg.norm(K), jnp.finfo(K.dtype).tiny)


def _omega_squared(lin: Linearization) -> Float[Array, " f"]:
    L = jnp.linalg.cholesky(lin.mass)
    K = 0.5 * (lin.stiffness + lin.stiffness.T)
    A = jax.scipy.linalg.solve_triangular(L, K, lower=True)
    A = jax.scipy.linalg.solve_triangular(L, A.T, lower=True)
    return jnp.linalg.eigvalsh(0.5 * (A + A.T))


@eqx.filter_jit
def _modes(lin: Linearization) -> Modes:
    L = jnp.linalg.cholesky(lin.mass)
    K = 0.5 * (lin.stiffness + lin.stiffness.T)
    A = jax.scipy.linalg.solve_triangular(L, K, lower=True)
    A = jax.scipy.linalg.solve_triangular(L, A.T, lower=True)
    w, U = jnp.linalg.eigh(0.5 * (A + A.T))  # ascending
    phi = jax.scipy.linalg.solve_triangular(L.T, U, lower=False)  # φᵀ M_r φ = I
    omega = jnp.sqrt(jnp.abs(w))
    positive = w > 0.0
    modal_damping = jnp.einsum("ik,ij,jk->k", phi, lin.damping, phi)
    zeta = jnp.where(positive, modal_damping / (2.0 * jnp.where(positive, omega, 1.0)), 0.0)
    shapes = (lin.basis @ phi).T
    k = jnp.argmax(jnp.abs(shapes), axis=1)
    largest = jnp.take_along_axis(shapes, k[:, None], axis=1)
    shapes = shapes / jnp.where(largest == 0.0, 1.0, largest)
    return Modes(
        frequencies_hz=jnp.where(positive, omega, -omega) / (2.0 * jnp.pi),
        omega_squared=w,
        damping_ratios=zeta,
        shapes=shapes,
        labels=lin.labels,
    )


def linearize(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"] | None = None,
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
) -> Linearization:
    """The equations of motion linearised about (q, q̇, t) in independent coordinates.

    **Arguments:**

    - `model`: a holonomic mechanism; `q`, `qd` (default at rest): a state on its
      constraints; `t`: time [s].
    - `structure`: the rank of C and its independent rows (default:
      [`decide`][redundax.decide] at (q, t)). The mobility f = n − rank is the size of the
      result, so under `jax.jit`, `jax.vmap` or `jax.grad` pass a structure decided
      outside the transformation (a traced rank cannot size an array).

    **Returns:** a [`Linearization`][redundax.statics.Linearization]; `.modes()` gives the
    natural frequencies, damping ratios and mode shapes, `.stable()` whether the
    state is a stable equilibrium.

    **Raises:** [`ModelError`][redundax.ModelError] for a mechanism with Pfaffian rows, or a
    structure whose rank is traced.

    !!! example
        ```python
        eq = rx.equilibrium(model, q0)
        modes = rx.statics.linearize(model, eq.q).modes()
        print(modes.frequencies_hz)
        ```
    """
    refuse_pfaffian(model, "linearize")
    refuse_friction(
        model,
        "linearize",
        "the regularised friction's stiction band is a viscous damper "
        "(μ L / v_t) whose load comes from the reactions, not part of the linearisation",
    )
    check_vector(q, model.n_coordinates, "q", "linearize")
    q = jnp.asarray(q, dtype=float)
    at_rest = qd is None
    qd = jnp.zeros_like(q) if qd is None else jnp.asarray(qd, dtype=float)
    check_vector(qd, model.n_coordinates, "qd", "linearize")
    t = jnp.asarray(t, dtype=float)
    if structure is None:
        structure = decide(model, q, t)
    rank = static_rank(structure, "linearize")
    return _linearize(model, q, qd, t, structure, rank, at_rest)


@eqx.filter_jit
def _linearize(model, q, qd, t, structure, rank: int, at_rest: bool) -> Linearization:
    return linearization(model, q, qd, t, structure, rank, at_rest)


def static_rank(structure: Structure, what: str) -> int:
    try:
        return int(np.asarray(structure.rank))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        raise ModelError(
            f"{what}: the structure's rank is traced (the structure was decided inside "
            "jax.jit, jax.vmap or jax.grad), but the mobility sizes the result: decide "
            "it outside the transformation (structure=rx.decide(model, q)) and pass it",
            source=what,
        ) from None


CHART_NEWTON_STEPS = 3
"""Newton steps of the chart η(ξ) (module docstring): it is evaluated at ξ = 0, on the
manifold, where each step makes one more derivative exact (the third derivative of Φ
enters the stiffness at a moving state)."""


def linearization(model, q, qd, t, structure, rank: int, at_rest: bool = False) -> Linearization:
    """The [`Linearization`][redundax.statics.Linearization] about (q, q̇, t) (traced inside a
    caller's program; `rank`, the rank of C, and `at_rest` (q̇ = 0 known), static).

    In the chart q(ξ) = q₀ + Z ξ + Y η(ξ) of the constraint manifold (Y spanning the
    range of Cᵀ, η by Newton steps so that Φ(q(ξ)) = 0), velocities are q̇ = J(ξ) ξ̇
    with J = ∂q/∂ξ, and the reduced equations of motion are
    Jᵀ M J ξ̈ = Jᵀ (F(q, J ξ̇, t) − M J̇ ξ̇): no multiplier appears, and all of it is
    autodiff of the chart. Linearised about ξ = 0, ξ̇ = Zᵀ q̇: M_r = Zᵀ M Z (J(0) = Z),
    K_r = −M_r ∂ξ̈/∂ξ, D_r = −M_r ∂ξ̈/∂ξ̇. At rest this is the module docstring's
    M_r, K_r (geometric stiffness included, through the chart's curvature); at a moving
    state it adds the velocity terms the turning chart brings, exactly."""
    del structure
    C0 = constraint_matrix(model, q, t)
    basis = pivoted_qr(C0.T, rank=rank).q
    Y, Z = basis[:, :rank], basis[:, rank:]

    def position(xi):
        def newton(eta, _):
            point = q + Z @ xi + Y @ eta
            A = constraint_matrix(model, point, t) @ Y
            phi = position_residual(model, point, t)
            return eta - jnp.linalg.solve(A.T @ A, A.T @ phi), None

        eta, _ = jax.lax.scan(newton, jnp.zeros(rank), None, length=CHART_NEWTON_STEPS)
        return q + Z @ xi + Y @ eta

    def chart_jacobian(xi):
        return jax.jacfwd(position)(xi)

    def reduced_acceleration(xi, xid):
        J = chart_jacobian(xi)
        point = position(xi)
        bias = jax.jvp(lambda x: chart_jacobian(x) @ xid, (xi,), (xid,))[1]  # J̇ ξ̇
        M = mass_matrix(model, point)
        F = generalized_forces(model, point, J @ xid, t)
        return jnp.linalg.solve(J.T @ M @ J, J.T @ (F - M @ bias))

    xi0 = jnp.zeros(Z.shape[1])
    Mr = Z.T @ mass_matrix(model, q) @ Z
    if at_rest:
        # ξ̇ = 0: J̇ ξ̇ and its derivative in ξ̇ vanish (quadratic in ξ̇), so ξ̈ needs no
        # third derivative of Φ: a program about half the size, the same numbers.
        def resting_acceleration(xi):
            J = chart_jacobian(xi)
            point = position(xi)
            F = generalized_forces(model, point, jnp.zeros_like(q), t)
            return jnp.linalg.solve(J.T @ mass_matrix(model, point) @ J, J.T @ F)

        stiffness = -Mr @ jax.jacfwd(resting_acceleration)(xi0)
        F_qd = jax.jacfwd(lambda v: generalized_forces(model, q, v, t))(jnp.zeros_like(q))
        damping = -Z.T @ F_qd @ Z
    else:
        xid0 = Z.T @ qd
        stiffness = -Mr @ jax.jacfwd(reduced_acceleration, argnums=0)(xi0, xid0)
        damping = -Mr @ jax.jacfwd(reduced_acceleration, argnums=1)(xi0, xid0)
    return Linearization(
        q=q,
        qd=qd,
        t=t,
        basis=Z,
        mass=Mr,
        stiffness=stiffness,
        damping=damping,
        labels=coordinate_labels(model),
    )
