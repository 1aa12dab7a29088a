"""Joint reactions with their uniqueness flags.

The total generalised reaction f = Cᵀ λ = F − M q̈ is always unique. The reaction
of pair X, f_X = C_Xᵀ λ_X, is unique only when the solvability analysis says so;
otherwise the numbers are those of the chosen method, and the flag says so.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from ._errors import ModelError
from ._model import Model
from ._pairs import RigidBodyConstraint
from ._solve import solve_terms
from ._structure import Structure, decide, membership
from ._types import Scalar
from ._validation import check_vector
from .drift._base import AS_SIMULATED, as_simulated
from .methods import AbstractRedundancyMethod, NullSpace, specialise


class Reactions(eqx.Module):
    """Reactions at one state (fields batch under `jax.vmap`).

    Planar models: `dim` = 2, wrenches [F_x, F_y, M_z]. Spatial models: `dim` = 3,
    wrenches [F_x, F_y, F_z, M_x, M_y, M_z] (global components).

    - `unique`: per pair, whether a rigid model determines its reaction (the
      [`Structure`][redundax.Structure]'s `stable_unique`: decided once, for the whole motion).
    - `multipliers`: λ, shape `(m + h,)`, as chosen by `method` (non-unique rows
      depend on the method).
    - `component_unique`: per row of C, whether that reaction component (−λ_k, see
      [`Pair`][redundax.Pair]) is unique (the structure's `stable_row_unique`).
    - `wrench`: per pair, the force and moment the pair exerts on every moving
      body, at the body's centre of mass, global components: shape
      `(npairs, nb, 3)` planar, `(npairs, nb, 6)` spatial [N, N m]. Planar: equal to
      −C_Xᵀ λ_X; spatial: Tᵀ (−C_Xᵀ λ_X) with T the map from the centre-of-mass
      velocity and angular velocity to the natural-coordinate velocities.
    - `anchor`: per pair, the joint point on each of its bodies (global, [m];
      zero for bodies the pair does not touch), shape `(npairs, nb, dim)`.
    - `joint_moment`: the pair's moment on each body about its `anchor` [N m]:
      M − (anchor − r_com) × F; shape `(npairs, nb)` planar (M_z), `(npairs, nb, 3)`
      spatial. For a revolute joint it vanishes (planar) or is the bending moment
      (spatial); for a knife edge the force is the lateral force along the global
      normal R n, of signed size −λ.
    - `total`: the total generalised reaction f = F − M q̈ (= Cᵀ λ), shape `(nq,)`.
    - `qdd`: accelerations.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    labels: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    dim: int = eqx.field(static=True)
    unique: Bool[Array, " npairs"]
    multipliers: Float[Array, " nc"]
    component_unique: Bool[Array, " nc"]
    wrench: Float[Array, "npairs nb ws"]
    anchor: Float[Array, "npairs nb dim"]
    joint_moment: Float[Array, "npairs nb ..."]
    total: Float[Array, " nq"]
    qdd: Float[Array, " nq"]

    def _pair_index(self, name: str) -> tuple:
        """The index of pair `name` along the pair axis, after the leading (time or
        batch) axes of a history ([`reaction_history`][redundax.reaction_history]) or a `vmap`ped
        result."""
        try:
            k = self.names.index(name)
        except ValueError:
            raise KeyError(
                f"no pair named {name!r}; known pairs: {', '.join(self.names)}"
            ) from None
        return (slice(None),) * (self.unique.ndim - 1) + (k,)

    def pair(self, name: str) -> tuple[Float[Array, "*b nb ws"], Bool[Array, "*b"]]:
        """`(wrench, unique)` of the pair called `name` (with the leading time or
        batch axes of a history or a batch). Raises `KeyError` naming the known
        pairs."""
        k = self._pair_index(name)
        return self.wrench[k], self.unique[k]

    def at_joint(
        self, name: str
    ) -> tuple[Float[Array, "..."], Float[Array, "..."], Bool[Array, "..."]]:
        """`(force, moment about the joint point, unique)` of pair `name` on each body
        (with the leading axes of a history or a batch)."""
        k = self._pair_index(name)
        return self.wrench[k][..., : self.dim], self.joint_moment[k], self.unique[k]

    def components(self, name: str) -> dict[str, tuple[Float[Array, "..."], Bool[Array, "..."]]]:
        """`{label: (value, unique)}` for each reaction component of pair `name`:
        value −λ_k, the force along / moment about the named joint axis acting on
        the pair's first body (see the pair classes for the frames)."""
        k = self._pair_index(name)[-1]
        return {
            label: (-self.multipliers[..., r], self.component_unique[..., r])
            for label, r in zip(self.labels[k], self.rows[k], strict=True)
        }


def pair_anchors(model: Model, q: Float[Array, " nq"]) -> Float[Array, "npairs nb dim"]:
    """Joint points of every pair on each of its bodies, scattered by pair."""
    nb, dof = model.bodies.count, model.bodies.dof
    Q = jnp.concatenate([q.reshape(nb, dof), model.bodies.ground_coordinates()[None]])
    pair_of_row = np.full(model.n_constraints, -1, dtype=np.int32)
    for k, p in enumerate(model.pairs):
        pair_of_row[list(p.rows)] = k
    out = jnp.zeros((len(model.pairs), nb + 1, model.dim))
    for groups, offset in ((model.holonomic, 0), (model.pfaffian, model.n_holonomic)):
        for g in groups:
            if isinstance(g, RigidBodyConstraint):  # internal rows, not a pair
                continue
            points = jax.vmap(type(g).anchor)(g, Q[g.bodies])
            pairs = jnp.asarray(pair_of_row)[g.rows[:, 0] + offset]
            out = out.at[pairs[:, None], g.bodies].set(points)
    return out[:, :nb]


def pair_wrenches(model: Model, q, generalised) -> Float[Array, "npairs nb ws"]:
    """Wrenches at the centres of mass from per-body generalised forces."""
    B = model.bodies
    if B.dim == 2:
        return generalised  # T = I: [F_x, F_y, M_z] at the frame (the centre of mass)
    T = jax.vmap(B.wrench_basis)(q.reshape(B.count, B.dof), B.centre_of_mass())
    return jnp.einsum("pbd,bdw->pbw", generalised, T)


def _moments_about(model: Model, q, wrench, anchor):
    """Moment of each wrench about the anchor: M − (anchor − r_com) × F."""
    B = model.bodies
    com = jax.vmap(B.point)(q.reshape(B.count, B.dof), B.centre_of_mass())
    arm = anchor - com[None]
    F, M = wrench[..., : B.dim], wrench[..., B.dim :]
    if B.dim == 2:
        return M[..., 0] - (arm[..., 0] * F[..., 1] - arm[..., 1] * F[..., 0])
    return M - jnp.cross(arm, F)


def reactions(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    drift_control=None,
) -> Reactions:
    """Per-pair reactions at (q, q̇, t) by `method`, with their uniqueness flags.

    **Arguments:**

    - `model`, `q`, `qd`, `t`: mechanism and state [m, rad, s].
    - `structure`: the mechanism's [`Structure`][redundax.Structure] (the rank and the verdicts);
      default: [`decide`][redundax.decide] at (q, t). Along a motion pass the one it was simulated
      with (`trajectory.structure`).
    - `method`: how redundant constraints are handled (default minimum norm).
    - `drift_control`: the drift control used in the simulation (its Γ), if any,
      so that the reactions match the simulated accelerations.

    **Returns:** a [`Reactions`][redundax.Reactions]. Works under `jax.jit`, `jax.vmap`, `jax.grad`.

    !!! example
        ```python
        r = rx.reactions(model, state.q, state.qd, state.t)
        wrench_D, unique_D = r.pair("D")
        ```
    """
    check_vector(q, model.n_coordinates, "q", "reactions")
    check_vector(qd, model.n_coordinates, "qd", "reactions")
    if structure is None:
        structure = decide(model, q, t)
    return _reactions(model, q, qd, jnp.asarray(t, dtype=float), structure, method, drift_control)


# Jitted (t always an array): one program per mechanism and method, whether called
# eagerly state by state or traced inside a larger program.
@eqx.filter_jit
def _reactions(model, q, qd, t, structure, method, drift_control) -> Reactions:
    terms, qdd, lam = solve_terms(
        model, q, qd, t, structure=structure, method=method, drift_control=drift_control
    )
    n_pairs = len(model.pairs)
    return reactions_of(
        model,
        q,
        terms,
        qdd,
        lam,
        structure.stable_unique[..., :n_pairs],
        structure.stable_row_unique,
        type(method).__name__,
    )


def reactions_of(model: Model, q, terms, qdd, lam, unique, row_unique, method: str) -> Reactions:
    """The [`Reactions`][redundax.Reactions] of multipliers `lam` and accelerations `qdd` solved at
    q with `terms` ([`redundax.equations.dynamics_terms`][]: C, M, F), whatever solved them:
    the pairs' wrenches −C_Xᵀ λ_X at the centres of mass, their moments about the
    joint points, and the total reaction F − M q̈, with the verdicts given."""
    rows = tuple(p.rows for p in model.pairs)
    S = membership(model.n_constraints, rows)
    nb, dof = model.bodies.count, model.bodies.dof
    generalised = -jnp.einsum("gk,ka,k->ga", S, terms.C, lam).reshape(len(rows), nb, dof)
    wrench = pair_wrenches(model, q, generalised)
    anchor = pair_anchors(model, q)
    return Reactions(
        names=model.pair_names,
        rows=rows,
        labels=tuple(p.components for p in model.pairs),
        method=method,
        dim=model.dim,
        unique=unique,
        multipliers=lam,
        component_unique=row_unique,
        wrench=wrench,
        anchor=anchor,
        joint_moment=_moments_about(model, q, wrench, anchor),
        total=terms.F - terms.M @ qdd,
        qdd=qdd,
    )


MEMORY_BUDGET = 2**30
"""Working memory [bytes] [`reaction_history`][redundax.reaction_history] may use at once (1 GiB):
the saved states are solved in chunks of at most this much (`jax.lax.map` with a batch size),
so a long run of a large mechanism takes more time, not more memory."""


def state_bytes(model: Model) -> int:
    """An upper estimate of the working memory of the reactions at one state [bytes]:
    a few dense (n + m + h)² matrices (the system, its factors, the null-space
    basis), float64."""
    size = model.n_coordinates + model.n_constraints
    return 8 * 8 * size * size


def chunk_size(model: Model, n_states: int, memory_budget: int | None = None) -> int:
    """How many states [`reaction_history`][redundax.reaction_history] solves at once within
    `memory_budget` bytes (default `MEMORY_BUDGET`).

    **Raises:** `MemoryError` naming the budget when one state does not fit."""
    budget = MEMORY_BUDGET if memory_budget is None else int(memory_budget)
    per_state = state_bytes(model)
    if per_state > budget:
        raise MemoryError(
            f"the reactions at one state of this mechanism ({model.n_coordinates} "
            f"coordinates, {model.n_constraints} constraint rows) need about "
            f"{per_state / 2**20:.0f} MiB, more than the memory budget of "
            f"{budget / 2**20:.0f} MiB; raise the budget (memory_budget=, or "
            f"--memory-budget on the command line)"
        )
    return max(1, min(n_states, budget // per_state))


@eqx.filter_jit
def _history(model, trajectory, structure, method, drift_control, batch: int):
    def one(state):
        q, qd, t = state
        return reactions(
            model, q, qd, t, structure=structure, method=method, drift_control=drift_control
        )

    # `lax.map` in batches reshapes every output, and cannot reshape an empty one
    # (a mechanism without pairs has no wrenches): state by state then.
    empty = not model.pairs or model.n_constraints == 0
    states = (trajectory.q, trajectory.qd, trajectory.ts)
    return jax.lax.map(one, states, batch_size=None if empty else batch)


def reaction_history(
    model: Model,
    trajectory,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    drift_control=AS_SIMULATED,
    memory_budget: int | None = None,
) -> Reactions:
    """[`reactions`][redundax.reactions] at every saved state of `trajectory` (one compilation).

    The rank and the verdicts come from `structure`, by default the one the
    trajectory was simulated with (`trajectory.structure`, decided at its initial
    state): never decided again along the motion. Γ comes from `drift_control`, by
    default the drift control the trajectory was simulated with
    (`trajectory.drift_control`), so that q̈ matches the motion.

    The states are solved in chunks within `memory_budget` bytes of working memory
    (default `MEMORY_BUDGET`, 1 GiB; `chunk_size` says how many at once).

    **Returns:** a [`Reactions`][redundax.Reactions] whose array fields carry a leading time axis
    (the verdicts too, constant along it).

    **Raises:** `MemoryError` naming the budget when one state does not fit in it.
    """
    if np.shape(trajectory.q)[-1:] != (model.n_coordinates,):
        raise ModelError(
            f"reaction_history: the trajectory's states have {np.shape(trajectory.q)[-1]} "
            f"coordinates, the model {model.n_coordinates}: pass the model it was "
            "simulated with",
            source="reaction_history",
        )
    if structure is None:
        structure = trajectory.structure
    drift_control = as_simulated(drift_control, trajectory)
    batch = chunk_size(model, trajectory.ts.shape[0], memory_budget)
    method = specialise(method, structure, model)
    return _history(model, trajectory, structure, method, drift_control, batch)
