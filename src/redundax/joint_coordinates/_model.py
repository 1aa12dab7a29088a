"""A mechanism in joint coordinates: the spanning tree's joints and the rows the tree
does not hold (cut joints, drivers, Pfaffian constraints)."""

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._assembly import position_residual
from .._friction import refuse_friction
from .._model import Model, State, unkeyed
from .._precision import precise
from ._kinematics import (
    COORDINATES,
    TreeJoints,
    forward_kinematics,
    inverse_kinematics,
    joint_rates,
    spanning_tree,
)

TREE_TOLERANCE = precise(1e-8, 1e-5)
"""Largest residual [m, rad] of a tree joint's rows in a configuration converted to
joint coordinates (the conversion assumes the tree joints hold)."""


class JointModel(eqx.Module):
    """A mechanism in joint coordinates (seed 002; Featherstone 1999).

    Built by [`redundax.joint_coordinates.joint_model`][] from an absolute-coordinate
    [`Model`][redundax.Model]:
    the same bodies, pairs, forces and markers, with the pairs of a spanning tree
    replaced by joint coordinates. Every other row of C (the cut joints that close
    loops, drivers, Pfaffian constraints) remains a constraint.

    - `model`: the absolute-coordinate model (bodies, pairs, forces, markers),
      without its mass facts (`Model.mass_facts` None: the joint path never reads
      them, and models that differ only in their masses share its programs).
    - `joints`: the tree joints, stacked per kind (`TreeJoints`).
    - `ancestors`: per body (ground last, `nb`), its parent body in the tree.
    - `rounds`: pointer-jumping rounds of the forward kinematics (⌈log₂ depth⌉).
    - `tree`: per tree joint in coordinate order, its pair's index (−1: a free joint
      of a body the tree does not reach from the ground).
    - `tree_bodies`: per tree joint, `(parent, child)` body indices.
    - `coordinate_names`: "pair.coordinate" for each joint coordinate.
    - `closure_rows`: the rows of C (0-based) the tree does not hold.
    """

    model: Model
    joints: tuple[TreeJoints, ...]
    ancestors: Int[Array, " nb1"]
    rounds: int = eqx.field(static=True)
    tree: tuple[int, ...] = eqx.field(static=True)
    tree_bodies: tuple[tuple[int, int], ...] = eqx.field(static=True)
    coordinate_names: tuple[str, ...] = eqx.field(static=True)
    closure_rows: tuple[int, ...] = eqx.field(static=True)

    @property
    def n_coordinates(self) -> int:
        return len(self.coordinate_names)

    @property
    def planar(self) -> bool:
        return self.model.dim == 2

    @property
    def tree_pairs(self) -> tuple[int, ...]:
        """The pairs (indices) that are tree joints."""
        return tuple(k for k in self.tree if k >= 0)

    @property
    def cut_pairs(self) -> tuple[int, ...]:
        """The pairs (indices) whose rows the tree does not hold."""
        tree = set(self.tree_pairs)
        return tuple(k for k in range(len(self.model.pairs)) if k not in tree)

    def bodies_coordinates(self, q: Float[Array, " nj"]) -> Float[Array, "nb1 dof"]:
        """Absolute coordinates of every body, ground last (row `nb`)."""
        return forward_kinematics(
            self.joints, self.model, self.ancestors, self.rounds, self.planar, q
        )

    def absolute_coordinates(self, q: Float[Array, " nj"]) -> Float[Array, " nq"]:
        """The absolute coordinates (the model's q) at the joint coordinates `q`."""
        return self.bodies_coordinates(q)[:-1].reshape(-1)


def _edge_data(model: Model, x_ref: np.ndarray, pair: int, parent: int, child: int):
    """(kind, holonomic group, member, parent_is_i, reference pose) of one tree joint;
    only a free joint (no pair) keeps its body's reference pose."""
    planar = model.dim == 2
    if pair < 0:
        p = x_ref[child]
        if planar:
            return "free", -1, 0, True, (p[:2], p[2])
        return "free-3d", -1, 0, True, (p[:3], p[3:].reshape(3, 3).T)
    rows = model.pairs[pair].rows
    for g, group in enumerate(model.holonomic):
        hit = np.flatnonzero(np.asarray(group.rows)[:, 0] == rows[0])
        if hit.size:
            k = int(hit[0])
            body_i = int(np.asarray(group.bodies)[k, 0])
            none = (np.zeros(2), 0.0) if planar else (np.zeros(3), np.eye(3))
            return model.pairs[pair].kind, g, k, parent == body_i, none
    raise KeyError(model.pairs[pair].name)


def joint_model(
    model: Model, q: Float[Array, " nq"] | np.ndarray, *, tree: Sequence[str] | None = None
) -> JointModel:
    """The mechanism `model` in joint coordinates.

    **Arguments:**

    - `model`: an absolute-coordinate model ([`redundax.Mechanism.build`][]).
    - `q`: a configuration of `model` (its coordinates) that the tree joints hold;
      bodies no tree joint reaches from the ground get a free joint whose
      coordinates are zero here.
    - `tree`: the names of the pairs to use as tree joints (default: a spanning
      tree grown breadth-first from the ground over the joints with joint
      coordinates, in the model's pair order). Pairs left out are cut joints.

    **Returns:** a [`JointModel`][redundax.joint_coordinates.JointModel].

    **Raises:** `ValueError` naming the pair when `tree` names an unknown pair, a
    pair without joint coordinates (drivers, knife edges, custom pairs) or pairs
    that close a loop.

    !!! example
        ```python
        mech = rx.models.four_bar()
        model, state = mech.build(), mech.initial_state()
        jm = rx.joint_coordinates.joint_model(model, state.q)  # tree O, A, D; cut joint B
        jstate = rx.joint_coordinates.to_joint_state(jm, state)
        ```
    """
    refuse_friction(
        model,
        "joint_model",
        "the divide-and-conquer algorithm takes the applied forces as "
        "given, and joint friction needs the reactions",
    )
    nb, dof = model.bodies.count, model.bodies.dof
    x_ref = np.asarray(q, dtype=float).reshape(nb, dof)
    edges, _ = spanning_tree(model, tree)
    grouped: dict[str, list] = {}
    names: list[str] = []
    ancestors = np.full(nb + 1, nb)
    depth = np.zeros(nb + 1, dtype=int)
    offset = 0
    for pair, parent, child in edges:
        kind, group, member, parent_is_i, reference = _edge_data(model, x_ref, pair, parent, child)
        n = len(COORDINATES[kind])
        label = model.pairs[pair].name if pair >= 0 else f"free({model.bodies.names[child]})"
        names += [f"{label}.{c}" for c in COORDINATES[kind]]
        grouped.setdefault(kind, []).append(
            (pair, parent, child, group, member, parent_is_i, reference, range(offset, offset + n))
        )
        offset += n
        ancestors[child] = parent
        depth[child] = depth[parent] + 1 if parent != nb else 1
    joints = []
    for kind, members in grouped.items():
        joints.append(
            TreeJoints(
                kind=kind,
                pairs=tuple(m[0] for m in members),
                group=members[0][3],
                member=jnp.asarray([m[4] for m in members]),
                reference_position=jnp.asarray(np.stack([m[6][0] for m in members]), dtype=float),
                reference_rotation=jnp.asarray(np.stack([m[6][1] for m in members]), dtype=float),
                parent_is_i=jnp.asarray([m[5] for m in members]),
                child=jnp.asarray([m[2] for m in members]),
                parent=jnp.asarray([m[1] for m in members]),
                coordinates=jnp.asarray(
                    np.asarray([list(m[7]) for m in members], dtype=int).reshape(len(members), -1)
                ),
            )
        )
    deepest = int(depth.max()) if nb else 0
    rounds = math.ceil(math.log2(deepest)) if deepest > 1 else 0
    tree_pairs = {pair for pair, _, _ in edges if pair >= 0}
    internal = set(model.internal_rows)
    closure_rows = tuple(
        r
        for k, p in enumerate(model.pairs)
        if k not in tree_pairs
        for r in p.rows
        if r not in internal
    )
    return JointModel(
        model=unkeyed(model),
        joints=tuple(joints),
        ancestors=jnp.asarray(ancestors),
        rounds=rounds,
        tree=tuple(pair for pair, _, _ in edges),
        tree_bodies=tuple((parent, child) for _, parent, child in edges),
        coordinate_names=tuple(names),
        closure_rows=tuple(sorted(closure_rows)),
    )


def _with_ground(jm: JointModel, x: Float[Array, " nq"]) -> Float[Array, "nb1 dof"]:
    bodies = jm.model.bodies
    return jnp.concatenate([x.reshape(bodies.count, bodies.dof), bodies.ground_coordinates()[None]])


@eqx.filter_jit
def joint_coordinates(jm: JointModel, q: Float[Array, " nq"]) -> Float[Array, " nj"]:
    """The joint coordinates of the absolute configuration `q` (which the tree
    joints must hold; angles in (−π, π], rotation vectors of length ≤ π)."""
    x = _with_ground(jm, jnp.asarray(q, dtype=float))
    out = jnp.zeros(jm.n_coordinates)
    for group in jm.joints:
        out = out.at[group.coordinates].set(inverse_kinematics(group, jm.model, x))
    return out


@eqx.filter_jit
def joint_velocities(
    jm: JointModel, qj: Float[Array, " nj"], q: Float[Array, " nq"], qd: Float[Array, " nq"]
) -> Float[Array, " nj"]:
    """The joint rates at joint coordinates `qj` of the absolute velocities `qd`
    (at the same configuration `q`), joint by joint."""
    x = _with_ground(jm, jnp.asarray(q, dtype=float))
    xd = jnp.concatenate([jnp.asarray(qd, dtype=float).reshape(x.shape[0] - 1, -1), 0 * x[-1:]])
    out = jnp.zeros(jm.n_coordinates)
    for group in jm.joints:
        if group.coordinates.shape[1]:
            out = out.at[group.coordinates].set(joint_rates(group, jm.model, qj, x, xd))
    return out


def to_joint_state(jm: JointModel, state: State, tol: float = TREE_TOLERANCE) -> State:
    """An absolute-coordinate state of `jm.model` in joint coordinates.

    **Raises:** `ValueError` naming the tree joints whose rows the configuration
    violates by more than `tol` (joint coordinates cannot represent it).
    """
    phi = np.asarray(position_residual(jm.model, state.q, state.t))
    bad = [
        f"{jm.model.pairs[k].name} (|Φ| = {np.max(np.abs(phi[list(jm.model.pairs[k].rows)])):.2g})"
        for k in jm.tree_pairs
        if np.max(np.abs(phi[list(jm.model.pairs[k].rows)])) > tol
    ]
    if bad:
        raise ValueError(
            "the configuration violates tree joints, which joint coordinates hold exactly: "
            + ", ".join(bad)
            + "; assemble the mechanism first (redundax.drift.Projection)"
        )
    qj = joint_coordinates(jm, state.q)
    return State(state.t, qj, joint_velocities(jm, qj, state.q, state.qd))


@eqx.filter_jit
def to_absolute_state(jm: JointModel, state: State) -> State:
    """A joint-coordinate state as a state of the absolute-coordinate `jm.model`."""
    x, xd = jax.jvp(jm.absolute_coordinates, (state.q,), (state.qd,))
    return State(state.t, x, xd)
