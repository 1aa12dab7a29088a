"""Joint reactions with their uniqueness flags.

The total generalised reaction f = Cᵀ λ = F − M q̈ is always unique. The reaction
of pair X, f_X = C_Xᵀ λ_X, is unique only when the solvability analysis says so;
otherwise the numbers are those of the chosen method, and the flag says so.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._assembly import constraint_matrix
from ._dynamics import AbstractRedundancyMethod, NullSpace, solve_terms
from ._model import Model
from ._qr import DECISION_RTOL, pivoted_qr
from ._solvability import UNIQUENESS_RTOL, disjoint_groups, membership, solvability_by_qr
from ._stabilisation import Baumgarte
from ._types import Scalar


class Reactions(eqx.Module):
    """Reactions at one state (fields batch under `jax.vmap`).

    - `unique`: per pair, whether a rigid model determines its reaction.
    - `multipliers`: λ, shape `(m + h,)`, as chosen by `method` (non-unique rows
      depend on the method).
    - `wrench`: per pair, the force and moment the pair exerts on every moving
      body, at the body's centre of mass, global components: shape
      `(npairs, nb, 3)` with [F_x, F_y, M_z] in [N, N, N m]; equal to −C_Xᵀ λ_X.
    - `anchor`: per pair, the joint point on each of its bodies (global, [m];
      zero for bodies the pair does not touch), shape `(npairs, nb, 2)`.
    - `joint_moment`: the pair's moment on each body about its `anchor` [N m]:
      M_z − (anchor − r_body) × F. For a revolute joint it vanishes; for a knife
      edge the force is the lateral force along the global normal R n, of signed
      size −λ.
    - `total`: the total generalised reaction f = F − M q̈ (= Cᵀ λ), shape `(nq,)`.
    - `qdd`: accelerations.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    unique: Bool[Array, " npairs"]
    multipliers: Float[Array, " nc"]
    wrench: Float[Array, "npairs nb 3"]
    anchor: Float[Array, "npairs nb 2"]
    joint_moment: Float[Array, "npairs nb"]
    total: Float[Array, " nq"]
    qdd: Float[Array, " nq"]

    def pair(self, name: str) -> tuple[Float[Array, "nb 3"], Bool[Array, ""]]:
        """`(wrench, unique)` of the pair called `name`."""
        k = self.names.index(name)
        return self.wrench[k], self.unique[k]

    def at_joint(
        self, name: str
    ) -> tuple[Float[Array, "nb 2"], Float[Array, " nb"], Bool[Array, ""]]:
        """`(force, moment about the joint point, unique)` of pair `name` on each body."""
        k = self.names.index(name)
        return self.wrench[k, :, :2], self.joint_moment[k], self.unique[k]


def _anchors(model: Model, q: Float[Array, " nq"]) -> Float[Array, "npairs nb 2"]:
    """Joint points of every pair on each of its bodies, scattered by pair."""
    nb, dof = model.bodies.count, model.bodies.dof
    Q = jnp.concatenate([q.reshape(nb, dof), model.bodies.ground_coordinates()[None]])
    pair_of_row = np.zeros(model.n_constraints, dtype=np.int32)
    for k, p in enumerate(model.pairs):
        pair_of_row[list(p.rows)] = k
    out = jnp.zeros((len(model.pairs), nb + 1, 2))
    for groups, offset in ((model.holonomic, 0), (model.pfaffian, model.n_holonomic)):
        for g in groups:
            points = jax.vmap(type(g).anchor)(g, Q[g.bodies])
            pairs = jnp.asarray(pair_of_row)[g.rows[:, 0] + offset]
            out = out.at[pairs[:, None], g.bodies].set(points)
    return out[:, :nb]


def reactions(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    method: AbstractRedundancyMethod = NullSpace(),
    stabilisation=None,
    rank: Int[ArrayLike, ""] | None = None,
    rtol: float = DECISION_RTOL,
    utol: float = UNIQUENESS_RTOL,
) -> Reactions:
    """Per-pair reactions at (q, q̇, t) by `method`, with their uniqueness flags.

    **Arguments:**

    - `model`, `q`, `qd`, `t`: mechanism and state [m, rad, s].
    - `method`: how redundant constraints are handled (default minimum norm).
    - `stabilisation`: the drift-control term used in the simulation, if any, so
      that the reactions match the simulated accelerations.
    - `rank`: the rank of C, if decided elsewhere (e.g. at the initial state).
    - `rtol`: relative rank tolerance used when `rank` is None. The default,
      `DECISION_RTOL` = 1e-8, is looser than the analysis's: along a simulated
      motion the state is off the constraint manifold by the integration error,
      which makes dependent rows independent by that much, and such rows must
      still count as dependent.
    - `utol`: uniqueness tolerance of the solvability test.

    **Returns:** a [`Reactions`][]. Works under `jax.jit`, `jax.vmap`, `jax.grad`.

    !!! example
        ```python
        r = rx.reactions(model, state.q, state.qd, state.t)
        wrench_D, unique_D = r.pair("D")
        ```
    """
    terms, qdd, lam, rank = solve_terms(
        model, q, qd, t, method=method, stabilisation=stabilisation, rank=rank, rtol=rtol
    )
    rows = tuple(p.rows for p in model.pairs)
    S = membership(model.n_constraints, rows)
    segments = disjoint_groups(model.n_constraints, rows)  # pairs share no row
    verdict = solvability_by_qr(terms.C, S, utol=utol, rank=rank, segments=segments)
    nb, dof = model.bodies.count, model.bodies.dof
    wrench = -jnp.einsum("gk,ka,k->ga", S, terms.C, lam).reshape(len(rows), nb, dof)
    anchor = _anchors(model, q)
    arm = anchor - q.reshape(nb, dof)[None, :, :2]
    joint_moment = wrench[..., 2] - (arm[..., 0] * wrench[..., 1] - arm[..., 1] * wrench[..., 0])
    return Reactions(
        names=model.pair_names,
        rows=rows,
        method=type(method).__name__,
        unique=verdict.unique,
        multipliers=lam,
        wrench=wrench,
        anchor=anchor,
        joint_moment=joint_moment,
        total=terms.F - terms.M @ qdd,
        qdd=qdd,
    )


@eqx.filter_jit
def reaction_history(
    model: Model,
    trajectory,
    *,
    method: AbstractRedundancyMethod = NullSpace(),
    stabilisation=Baumgarte(),
    rank: Int[ArrayLike, ""] | None = None,
    utol: float = UNIQUENESS_RTOL,
) -> Reactions:
    """[`reactions`][] at every saved state of `trajectory` (one compilation).

    The rank of C is decided once, at the first saved state (or given as `rank`),
    as `simulate` does: off the constraint manifold a fresh decision at every state
    could differ. `stabilisation` should be the one the trajectory was simulated
    with (`simulate`'s default is `Baumgarte()`), so that q̈ matches the motion.

    **Returns:** a [`Reactions`][] whose array fields carry a leading time axis.
    """
    if rank is None:
        C0 = constraint_matrix(model, trajectory.q[0], trajectory.ts[0])
        rank = pivoted_qr(C0, DECISION_RTOL).rank
    return jax.vmap(
        lambda q, qd, t: reactions(
            model, q, qd, t, method=method, stabilisation=stabilisation, rank=rank, utol=utol
        )
    )(trajectory.q, trajectory.qd, trajectory.ts)
