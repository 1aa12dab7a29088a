"""The equations of motion of a joint-coordinate model, from the absolute model's own
terms by autodiff: per body in twists (for the divide-and-conquer algorithm) and
dense in joint coordinates (the reference solve).

**Twists.** A body's twist V = (v, ω) is the velocity of its frame origin and its
angular velocity (global components); planar: (ẋ, ẏ, φ̇). Its absolute
coordinates move as ẋ_i = E_i V_i and ẍ_i = E_i A_i + ė_i (A the twist's rate,
ė_i = ∂(E_i V_i)/∂x_i · ẋ_i). Projected by E_iᵀ, the absolute equations
M_i ẍ_i + C_iᵀ λ = F_i become I_i A_i + G_iᵀ λ = b_i with

    I_i = E_iᵀ M_i E_i,   b_i = E_iᵀ (F_i − M_i ė_i),   G_i = C_i E_i,   γ = Γ − Σ C_i ė_i

(the rigid-body rows of natural coordinates drop out: D_i E_i = 0). Rows keep the
absolute model's meaning, so a multiplier is the same reaction component in both
coordinate systems.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._assembly import (
    acceleration_rhs,
    constraint_matrix,
    constraint_rows,
    generalized_forces,
    position_residual,
    velocity_bias,
)
from .._bodies import angular_velocity, natural_velocity
from .._model import Model
from .._qr import DECISION_RTOL, pivoted_qr
from .._types import Scalar
from ._model import JointModel


class RowPlan(eqx.Module):
    """The rows of C a joint-coordinate solve carries (every pair row; not the
    rigid-body rows of natural coordinates), with their two bodies (−1: ground)."""

    rows: tuple[int, ...] = eqx.field(static=True)
    body_a: tuple[int, ...] = eqx.field(static=True)
    body_b: tuple[int, ...] = eqx.field(static=True)
    pair_of_row: tuple[int, ...] = eqx.field(static=True)


def row_plan(model: Model) -> RowPlan:
    """`RowPlan` of `model` (host side).

    **Raises:** `ValueError` naming a pair that acts on more than two bodies (the
    divide-and-conquer rows join two bodies)."""
    nb = model.bodies.count
    # Names to indices once (`model.body_index` per name is O(nb), and a method
    # of an `eqx.Module` costs a wrapper per call): linear in the pairs.
    index = {name: i for i, name in enumerate(model.bodies.names)}
    index["ground"] = nb
    rows, body_a, body_b, pair_of_row = [], [], [], []
    for k, pair in enumerate(model.pairs):
        bodies = [index[b] if b in index else model.body_index(b) for b in pair.bodies]
        if len(bodies) > 2:
            raise ValueError(
                f"pair {pair.name!r} acts on {len(bodies)} bodies; joint coordinates take "
                "pairs between two bodies"
            )
        a = bodies[0] if bodies[0] != nb else -1
        b = bodies[1] if len(bodies) > 1 and bodies[1] != nb else -1
        for r in pair.rows:
            rows.append(r)
            body_a.append(a)
            body_b.append(b)
            pair_of_row.append(k)
    order = np.argsort(rows, kind="stable")
    pick = lambda v: tuple(int(v[i]) for i in order)  # noqa: E731
    return RowPlan(
        rows=pick(rows), body_a=pick(body_a), body_b=pick(body_b), pair_of_row=pick(pair_of_row)
    )


class BodyTerms(eqx.Module):
    """The equations of motion at one state, per body in twists and per row.

    - `x`, `xd`: absolute coordinates and velocities, ground last, `(nb + 1, dof)`.
    - `E`: ẋ_i = E_i V_i, `(nb, dof, d)`; `edot`: ė_i, `(nb, dof)`.
    - `inertia` `(nb, d, d)`, `bias` `(nb, d)`: I_i and b_i.
    - `G_a`, `G_b` `(R, d)`, `gamma` `(R,)`: the rows of `RowPlan` in twists.
    - `phi`, `velocity_error` `(R,)`: Φ (zero for Pfaffian rows) and C ẋ + b of
      those rows (the drift a loop's rows accumulate; the tree's rows have none).
    """

    x: Float[Array, "nb1 dof"]
    xd: Float[Array, "nb1 dof"]
    E: Float[Array, "nb dof d"]
    edot: Float[Array, "nb dof"]
    inertia: Float[Array, "nb d d"]
    bias: Float[Array, "nb d"]
    G_a: Float[Array, "R d"]
    G_b: Float[Array, "R d"]
    gamma: Float[Array, " R"]
    phi: Float[Array, " R"]
    velocity_error: Float[Array, " R"]


def _twist_map(planar: bool, p, V):
    """ẋ = E(p) V for one body."""
    if planar:
        return V
    return natural_velocity(p, V[:3], V[3:])


def _twist(planar: bool, p, pd):
    if planar:
        return pd
    return jnp.concatenate([pd[:3], angular_velocity(p, pd)])


def body_terms(
    jm: JointModel,
    plan: RowPlan,
    q: Float[Array, " nj"],
    qd: Float[Array, " nj"],
    t: Scalar,
) -> BodyTerms:
    """`BodyTerms` at the joint-coordinate state (q, q̇, t), by autodiff of the
    forward kinematics and of the absolute model's terms (all O(n))."""
    model, planar = jm.model, jm.planar
    nb, dof = model.bodies.count, model.bodies.dof
    X, XD = jax.jvp(jm.bodies_coordinates, (q,), (qd,))
    x, xd = X[:-1].reshape(-1), XD[:-1].reshape(-1)
    t = jnp.asarray(t, dtype=float)

    def per_body(p, pd):
        V = _twist(planar, p, pd)
        E = jax.jacfwd(lambda v: _twist_map(planar, p, v))(V)
        edot = jax.jvp(lambda pp: _twist_map(planar, pp, V), (p,), (pd,))[1]
        return E, edot

    E, edot = jax.vmap(per_body)(X[:-1], XD[:-1])
    M = model.bodies.mass_blocks()
    F = generalized_forces(model, x, xd, t).reshape(nb, dof)
    inertia = jnp.einsum("bki,bkl,blj->bij", E, M, E)
    bias = jnp.einsum("bki,bk->bi", E, F - jnp.einsum("bkl,bl->bk", M, edot))
    R, B = constraint_rows(model, x, t)
    rows = np.asarray(plan.rows, dtype=int)
    R, B = R[rows], B[rows]
    E_g = jnp.concatenate([E, jnp.zeros((1, dof, E.shape[-1]))])
    edot_g = jnp.concatenate([edot, jnp.zeros((1, dof))])
    G = jnp.einsum("rpk,rpkd->rpd", R, E_g[B])
    gamma = acceleration_rhs(model, x, xd, t)[rows] - jnp.einsum("rpk,rpk->r", R, edot_g[B])
    # Slot 0 is the pair's first body, slot 1 its second (or padding for one-body
    # pairs, whose rows then have body_b = −1 and a zero G_b).
    G_b = G[:, 1] if G.shape[1] > 1 else jnp.zeros_like(G[:, 0])
    phi = jnp.concatenate([position_residual(model, x, t), jnp.zeros(model.n_pfaffian)])[rows]
    velocity_error = jnp.einsum("rpk,rpk->r", R, XD[B]) + velocity_bias(model, x, t)[rows]
    return BodyTerms(
        x=X,
        xd=XD,
        E=E,
        edot=edot,
        inertia=inertia,
        bias=bias,
        G_a=G[:, 0],
        G_b=G_b,
        gamma=gamma,
        phi=phi,
        velocity_error=velocity_error,
    )


# One program per model for the host-side decisions and analyses (eagerly, each
# operation of the autodiff would be compiled on its own).
jitted_body_terms = eqx.filter_jit(body_terms)


# ------------------------------------------------------------------ the dense reference
class JointSpaceTerms(eqx.Module):
    """M(q) q̈ + C_lᵀ λ = F, C_l q̈ = γ_l in joint coordinates (dense), the rows C_l
    being `jm.closure_rows` of the absolute C."""

    M: Float[Array, "nj nj"]
    F: Float[Array, " nj"]
    C: Float[Array, "nl nj"]
    gamma: Float[Array, " nl"]


def joint_space_terms(
    jm: JointModel, q: Float[Array, " nj"], qd: Float[Array, " nj"], t: Scalar
) -> JointSpaceTerms:
    """[`JointSpaceTerms`][redundax.joint_coordinates.JointSpaceTerms] by autodiff of the forward
    kinematics: with J = ∂x/∂q and
    ẍ₀ = ∂²x/∂q²[q̇, q̇], M = Jᵀ M_x J, F = Jᵀ (F_x − M_x ẍ₀), C_l = C_x J,
    γ_l = Γ_x − C_x ẍ₀. Dense, O(n²) memory and O(n³) to solve: the reference the
    divide-and-conquer algorithm is tested and timed against."""
    model = jm.model
    t = jnp.asarray(t, dtype=float)
    fk = jm.absolute_coordinates
    x, xd = jax.jvp(fk, (q,), (qd,))
    J = jax.jacfwd(fk)(q)
    xdd0 = jax.jvp(lambda s: jax.jvp(fk, (q + s * qd,), (qd,))[1], (0.0,), (1.0,))[1]
    Mx = jax.scipy.linalg.block_diag(*model.bodies.mass_blocks())
    rows = np.asarray(jm.closure_rows, dtype=int)
    Cx = constraint_matrix(model, x, t)[rows]
    return JointSpaceTerms(
        M=J.T @ Mx @ J,
        F=J.T @ (generalized_forces(model, x, xd, t) - Mx @ xdd0),
        C=Cx @ J,
        gamma=acceleration_rhs(model, x, xd, t)[rows] - Cx @ xdd0,
    )


def dense_joint_accelerations(
    terms: JointSpaceTerms, rank: Int[Array, ""] | int | None = None
) -> Float[Array, " nj"]:
    """q̈ of [`JointSpaceTerms`][redundax.joint_coordinates.JointSpaceTerms] by the null-space
    method on a pivoted QR of C_lᵀ
    (`rank`: decided elsewhere; default: numerically, relative tolerance 1e-8)."""
    C, M = terms.C, terms.M
    if C.shape[0] == 0:
        return jnp.linalg.solve(M, terms.F)
    qr = pivoted_qr(C.T, rtol=DECISION_RTOL, rank=rank)
    r = qr.rank if rank is None else rank
    n = M.shape[0]
    k = jnp.arange(n)
    Y = jnp.where(k[None, :] < r, qr.q, 0.0)  # range of C_lᵀ
    Z = jnp.where(k[None, :] >= r, qr.q, 0.0)  # null space of C_l
    # C_l[perm] = Rᵀ Qᵀ; with q̈ = Q w, the first r pivoted rows are independent:
    # R[:r, :r]ᵀ w[:r] = γ[perm][:r].
    rr = min(n, C.shape[0])
    keep = jnp.arange(rr) < r
    R1 = jnp.where(keep[:, None] & keep[None, :], qr.r[:rr, :rr], jnp.eye(rr))
    g = jnp.where(keep, terms.gamma[qr.perm][:rr], 0.0)
    y = jax.scipy.linalg.solve_triangular(R1.T, g, lower=True)
    qdd_p = Y[:, :rr] @ y
    A = Z.T @ M @ Z + jnp.diag(jnp.where(k < r, 1.0, 0.0))
    z = jnp.linalg.solve(A, Z.T @ (terms.F - M @ qdd_p))
    return qdd_p + Z @ z
