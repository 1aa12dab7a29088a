"""Assembly of Φ, C = [Φ_q; Ψ], b, Γ, M and F from the stacked pairs and force elements.

Every derivative comes from autodiff of the members' local residuals
(`jax.jacfwd` / `jax.jvp`), evaluated with `jax.vmap` over each stacked type and
scattered into the global arrays by the members' `rows` and `bodies` indices.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._errors import ModelError
from ._forces import AbstractForceElement, JointFrictionElement
from ._model import Model
from ._pairs import AbstractHolonomic, AbstractPfaffian
from ._precision import precise
from ._types import Scalar


def _with_ground(model: Model, q: Float[Array, " nq"], ground: Float[Array, " dof"]):
    dof = model.bodies.dof
    return jnp.concatenate([q.reshape(-1, dof), ground[None]], axis=0)


def _coords(model: Model, q, qd=None):
    Q = _with_ground(model, q, model.bodies.ground_coordinates())
    if qd is None:
        return Q
    return Q, _with_ground(model, qd, jnp.zeros(model.bodies.dof))


def _residual(member: AbstractHolonomic, qb, t):
    return member.residual(qb, t)


def _velocity_residual(member: AbstractPfaffian, qb, qdb):
    return member.velocity_residual(qb, qdb)


def _scatter_rows(n_rows: int, groups, values) -> Float[Array, " rows"]:
    out = jnp.zeros(n_rows)
    for group, v in zip(groups, values, strict=True):
        out = out.at[group.rows].set(v)
    return out


def _rows_of_pairs(model: Model, Q, QD, holonomic, pfaffian) -> Float[Array, " nc"]:
    """[holonomic rows; Pfaffian rows]: `holonomic(pair, qb, qdb)` and `pfaffian(pair,
    qb, qdb)` (one pair's rows from its bodies' coordinates and velocities), mapped
    over each stacked type and put in row order."""
    hol = [jax.vmap(holonomic)(g, Q[g.bodies], QD[g.bodies]) for g in model.holonomic]
    pf = [jax.vmap(pfaffian)(g, Q[g.bodies], QD[g.bodies]) for g in model.pfaffian]
    return jnp.concatenate(
        [
            _scatter_rows(model.n_holonomic, model.holonomic, hol),
            _scatter_rows(model.n_pfaffian, model.pfaffian, pf),
        ]
    )


def _in_row_order(n_rows: int, rows: list, values: list):
    """The groups' `values` (one entry per row, groups' rows concatenated) put in row
    order by one gather: the groups partition the rows, so where each row sits in
    the concatenation is a scatter of one integer per row, instead of scattering
    every number of every row (XLA:CPU scatters element by element: 2.3 ms of a
    3.6 ms assembly for 24,588 coordinates)."""
    rows = [r.reshape(-1) for r in rows]
    assert sum(r.shape[0] for r in rows) == n_rows  # the groups partition the rows
    position = jnp.zeros(n_rows, dtype=int).at[jnp.concatenate(rows)].set(jnp.arange(n_rows))
    return jnp.concatenate(values)[position]


def _dense_jacobian(model: Model, n_rows: int, groups, jacobians) -> Float[Array, "rows nq"]:
    """The dense rows of the groups' local Jacobians J (k, size, nbp, dof), in row
    order. Each body block goes to its columns by comparing the body's index with
    every body (a select XLA fuses into one loop, which `vmap` vectorises) instead
    of a scatter into zeros, which was most of the assembly of a small mechanism
    under `vmap` (mobile robot, batch 256)."""
    nb, dof = model.bodies.count, model.bodies.dof
    if not groups:
        return jnp.zeros((n_rows, nb * dof))
    dense = []
    for group, J in zip(groups, jacobians, strict=True):
        k, size = J.shape[:2]
        mine = group.bodies[:, :, None] == jnp.arange(nb)[None, None, :]  # ground: none
        blocks = jnp.sum(jnp.where(mine[:, None, :, :, None], J[:, :, :, None, :], 0.0), axis=2)
        dense.append(blocks.reshape(k * size, nb * dof))
    return _in_row_order(n_rows, [g.rows for g in groups], dense)


def position_residual(model: Model, q: Float[Array, " nq"], t: Scalar = 0.0) -> Float[Array, " m"]:
    """Holonomic constraint residual Φ(q, t).

    **Arguments:**

    - `model`: the mechanism.
    - `q`: generalised coordinates, shape `(nq,)`, in [m, rad].
    - `t`: time [s].

    **Returns:** Φ, shape `(m,)`, rows in declaration order.
    """
    return _position_residual(model, q, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _position_residual(model: Model, q, t):
    # Jitted, as `_constraint_matrix`.
    Q = _coords(model, q)
    vals = [jax.vmap(_residual, in_axes=(0, 0, None))(g, Q[g.bodies], t) for g in model.holonomic]
    return _scatter_rows(model.n_holonomic, model.holonomic, vals)


def velocity_residual(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar = 0.0
) -> Float[Array, " nc"]:
    """Velocity-level residual C(q, t) q̇ + b(q, t), shape `(m + h,)`.

    One `jax.jvp` per pair instead of C: the holonomic rows are d/ds Φ(q + s q̇, t + s)
    at s = 0 (= Φ_q q̇ + Φ_t), the Pfaffian rows Ψ q̇, the derivative of each pair's
    velocity residual in q̇ along q̇. Equal to `constraint_matrix(...) @ qd +
    velocity_bias(...)` to round-off (tested) at a third of the cost (Bricard 2.5
    against 6.8 µs, the mobile robot 0.9 against 2.6 µs, inside a compiled loop),
    which matters where it is evaluated at every saved state
    (`Trajectory.velocity_violation`: Bricard's 101 saved states 0.68 → 0.26 ms)."""
    return _velocity_residual_jvp(model, q, qd, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _velocity_residual_jvp(model: Model, q, qd, t):
    # Jitted, as `_constraint_matrix`.
    Q, QD = _coords(model, q, qd)

    def holonomic(g, qb, qdb):
        def path(s):
            return g.residual(qb + s * qdb, t + s)

        return jax.jvp(path, (jnp.zeros(()),), (jnp.ones(()),))[1]

    def pfaffian(g, qb, qdb):
        # Ψ q̇ as the pfaffian_matrix's Jacobian at q̇ = 0 applied to q̇.
        zero = jnp.zeros_like(qdb)
        return jax.jvp(lambda v: g.velocity_residual(qb, v), (zero,), (qdb,))[1]

    return _rows_of_pairs(model, Q, QD, holonomic, pfaffian)


def holonomic_jacobian(
    model: Model, q: Float[Array, " nq"], t: Scalar = 0.0
) -> Float[Array, "m nq"]:
    """Φ_q(q, t), shape `(m, nq)`, by `jax.jacfwd` of each pair's local residual."""
    Q = _coords(model, q)
    jacs = [
        jax.vmap(jax.jacfwd(_residual, argnums=1), in_axes=(0, 0, None))(g, Q[g.bodies], t)
        for g in model.holonomic
    ]
    return _dense_jacobian(model, model.n_holonomic, model.holonomic, jacs)


def pfaffian_matrix(model: Model, q: Float[Array, " nq"]) -> Float[Array, "h nq"]:
    """Ψ(q), shape `(h, nq)`: the Jacobian of the velocity residuals in q̇."""
    Q = _coords(model, q)
    jacs = [
        jax.vmap(jax.jacfwd(_velocity_residual, argnums=2))(
            g, Q[g.bodies], jnp.zeros_like(Q[g.bodies])
        )
        for g in model.pfaffian
    ]
    return _dense_jacobian(model, model.n_pfaffian, model.pfaffian, jacs)


def constraint_matrix(
    model: Model, q: Float[Array, " nq"], t: Scalar = 0.0
) -> Float[Array, "nc nq"]:
    """Constraint matrix C = [Φ_q; Ψ] (Wojtyra & Frączek 2013, Eq. 5).

    **Arguments:**

    - `model`: the mechanism.
    - `q`: generalised coordinates, shape `(nq,)`, in [m, rad].
    - `t`: time [s] (rheonomic pairs only).

    **Returns:** C, shape `(m + h, nq)`.

    !!! example
        ```python
        C = redundax.equations.constraint_matrix(model, state.q, state.t)
        ```
    """
    return _constraint_matrix(model, q, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _constraint_matrix(model: Model, q, t):
    # Jitted: a program traces it once per model structure however often it calls
    # it (the dynamics, the projection, the monitors); XLA inlines the call.
    return jnp.concatenate([holonomic_jacobian(model, q, t), pfaffian_matrix(model, q)])


def velocity_bias(model: Model, q: Float[Array, " nq"], t: Scalar = 0.0) -> Float[Array, " nc"]:
    """b = [Φ_t; 0], so that the velocity constraints read C q̇ + b = 0."""
    return _velocity_bias(model, q, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _velocity_bias(model: Model, q, t):
    # Jitted, as `_constraint_matrix`.
    Q = _coords(model, q)

    def phi_t(g, qb):
        return jax.jvp(lambda tt: g.residual(qb, tt), (t,), (jnp.ones_like(t),))[1]

    vals = [jax.vmap(phi_t)(g, Q[g.bodies]) for g in model.holonomic]
    return jnp.concatenate(
        [_scatter_rows(model.n_holonomic, model.holonomic, vals), jnp.zeros(model.n_pfaffian)]
    )


def acceleration_rhs(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar = 0.0
) -> Float[Array, " nc"]:
    """Γ, so that the acceleration constraints read C q̈ = Γ (Eq. 9).

    Holonomic rows: Γ = −d²/ds² Φ(q + s q̇, t + s) at s = 0, which equals
    −[(Φ_q q̇)_q q̇ + 2 Φ_qt q̇ + Φ_tt]. Pfaffian rows: Γ = −d/ds Ψ(q + s q̇) q̇ at
    s = 0, i.e. −(Ψ q̇)_q q̇. Both by nested `jax.jvp`.
    """
    return _acceleration_rhs(model, q, qd, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _acceleration_rhs(model: Model, q, qd, t):
    # Jitted, as `_constraint_matrix`.
    Q, QD = _coords(model, q, qd)

    def gamma_holonomic(g, qb, qdb):
        def path(s):
            return g.residual(qb + s * qdb, t + s)

        def first(s):
            return jax.jvp(path, (s,), (jnp.ones_like(s),))[1]

        return -jax.jvp(first, (jnp.zeros(()),), (jnp.ones(()),))[1]

    def gamma_pfaffian(g, qb, qdb):
        def path(s):
            return g.velocity_residual(qb + s * qdb, qdb)

        return -jax.jvp(path, (jnp.zeros(()),), (jnp.ones(()),))[1]

    return _rows_of_pairs(model, Q, QD, gamma_holonomic, gamma_pfaffian)


def mass_matrix(model: Model, q: Float[Array, " nq"] | None = None) -> Float[Array, "nq nq"]:
    """Mass matrix M (constant for absolute and natural coordinates), shape `(nq, nq)`."""
    del q
    blocks = model.bodies.mass_blocks()
    nb, dof = blocks.shape[0], blocks.shape[1]
    return jnp.einsum("bkl,bc->bkcl", blocks, jnp.eye(nb)).reshape(nb * dof, nb * dof)


def _load_points(model: Model, Q) -> Float[Array, "nl dim"]:
    B, L = model.bodies, model.loads
    return jax.vmap(B.point)(Q[L.bodies], L.points)


def _work(model: Model, q: Float[Array, " nq"]) -> Float[Array, ""]:
    """Potential of the conservative loads, V = −W: gravity at the centres of mass,
    constant global forces at body points, and (planar only) constant torques."""
    B = model.bodies
    Q = _coords(model, q)
    com = jax.vmap(B.point)(Q[:-1], B.centre_of_mass())
    gravity = jnp.sum(B.mass[:, None] * com * model.gravity[None, :])
    W = gravity + jnp.sum(_load_points(model, Q) * model.loads.forces)
    if B.dim == 2:
        W = W + jnp.sum(Q[model.loads.bodies, 2] * model.loads.torques)
    return W


def _torque_power(model: Model, q, qd) -> Float[Array, ""]:
    """Power τ · ω of constant global torques on spatial bodies (not a potential)."""
    B, L = model.bodies, model.loads
    Q, QD = _coords(model, q, qd)
    omega = jax.vmap(B.angular_velocity)(Q[L.bodies], QD[L.bodies])
    return jnp.sum(omega * L.torques)


def _element_force(element: AbstractForceElement, B, qb, qdb, t):
    return element.generalized_force(B, qb, qdb, t)


def _element_energy(element: AbstractForceElement, B, qb):
    return element.potential_energy(B, qb)


def _force_elements(model: Model, q, qd, t) -> Float[Array, " nq"]:
    """Generalised forces of the force elements, by `jax.vmap` over each stacked
    type, added into the coordinates of their bodies (the ground's dropped)."""
    B = model.bodies
    Q, QD = _coords(model, q, qd)
    out = jnp.zeros_like(Q)
    for g in model.forces:
        if isinstance(g, JointFrictionElement):  # needs the reactions: `_friction.py`
            continue
        F = jax.vmap(_element_force, in_axes=(0, None, 0, 0, None))(
            g, B, Q[g.bodies], QD[g.bodies], t
        )
        out = out.at[g.bodies].add(F)
    return out[:-1].reshape(-1)


def generalized_forces(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"] | None = None, t: Scalar = 0.0
) -> Float[Array, " nq"]:
    """Generalised applied forces F(q, q̇, t).

    Gravity, constant global point forces and torques, by `jax.grad` of their
    virtual work (`jax.grad` of their power in q̇ for torques on spatial bodies);
    then the force elements (`model.forces`: spring-dampers, bushings,
    time-dependent loads, user forces), each Jᵀ f by `jax.vjp` (`_forces.py`). No
    velocity-dependent inertia terms arise: the mass matrix is constant in absolute
    planar and in natural coordinates. Joint friction
    ([`redundax.forces.JointFriction`][]) is not part of F: it depends on the
    reactions, and the equations of motion add it where they solve for them.

    **Arguments:**

    - `model`: the mechanism.
    - `q`, `qd`: coordinates [m, rad] and velocities [m/s, rad/s], shape `(nq,)`;
      `qd` None means at rest (dampers then exert nothing).
    - `t`: time [s] (time-dependent loads and user forces).

    **Returns:** F, shape `(nq,)` [N, N m].
    """
    qd = jnp.zeros_like(q) if qd is None else qd
    return _generalized_forces(model, q, qd, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _generalized_forces(model: Model, q, qd, t):
    # Jitted, as `_constraint_matrix`.
    F = jax.grad(_work, argnums=1)(model, q)
    if model.dim == 3:
        F = F + jax.grad(_torque_power, argnums=2)(model, q, qd)
    if model.forces:
        F = F + _force_elements(model, q, qd, t)
    return F


def potential_energy(model: Model, q: Float[Array, " nq"]) -> Float[Array, ""]:
    """Potential energy V [J]: −W of gravity and the constant loads, plus the energy
    stored in the force elements (spring-dampers' and bushings' stiffness and
    preload). Constant torques on spatial bodies, dampers, time-dependent loads and
    user forces do work that no potential describes: they are left out, and a model
    with them is not conservative."""
    return _potential_energy(model, q)


@eqx.filter_jit
def _potential_energy(model: Model, q):
    # Jitted, as `_constraint_matrix`.
    V = -_work(model, q)
    if model.forces:
        B = model.bodies
        Q = _coords(model, q)
        for g in model.forces:
            V = V + jnp.sum(jax.vmap(_element_energy, in_axes=(0, None, 0))(g, B, Q[g.bodies]))
    return V


def kinetic_energy(model: Model, qd: Float[Array, " nq"]) -> Float[Array, ""]:
    """Kinetic energy ½ q̇ᵀ M q̇ [J]."""
    return 0.5 * qd @ mass_matrix(model) @ qd


def marker_positions(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nm dim"]:
    """Global positions of the model's tracked points, shape `(nm, dim)` [m]."""
    return _marker_positions(model, q)


@eqx.filter_jit
def _marker_positions(model: Model, q):
    # Jitted, as `_constraint_matrix`.
    Q = _coords(model, q)
    return jax.vmap(model.bodies.point)(Q[model.markers.bodies], model.markers.points)


def body_poses(
    model: Model, q: Float[Array, " nq"]
) -> tuple[Float[Array, "nb dim"], Float[Array, "nb dim dim"]]:
    """Centres of mass [m] and rotation matrices (body to global) of every body,
    whatever the coordinates: `(positions (nb, dim), rotations (nb, dim, dim))`."""
    B = model.bodies
    P = q.reshape(B.count, B.dof)
    return jax.vmap(B.point)(P, B.centre_of_mass()), jax.vmap(B.rotation)(P)


def body_velocities(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"]
) -> tuple[Float[Array, "nb dim"], Float[Array, "nb w"]]:
    """Velocities of the centres of mass [m/s] and angular velocities [rad/s]:
    shapes `(nb, dim)` and `(nb, 1)` in the plane, `(nb, 3)` (global) in space."""
    B = model.bodies
    P, PD = q.reshape(B.count, B.dof), qd.reshape(B.count, B.dof)
    v = jax.vmap(lambda p, pd, c: jax.jvp(lambda x: B.point(x, c), (p,), (pd,))[1])(
        P, PD, B.centre_of_mass()
    )
    return v, jax.vmap(B.angular_velocity)(P, PD)


@eqx.filter_jit
def _residuals(model: Model, q, qd, t):
    return position_residual(model, q, t), velocity_residual(model, q, qd, t)


CONSISTENCY_TOL = precise(1e-8, 1e-5)
"""Default tolerance on |Φ| [m, rad] and |C q̇ + b| [m/s, rad/s] for an initial state."""


def check_consistency(model: Model, state, tol: float = CONSISTENCY_TOL) -> None:
    """Raise `ValueError` if `state` violates the constraints by more than `tol`.

    The message names every violated pair with its largest position and velocity
    residual. Call it outside `jit` (it reads concrete values).

    **Raises:** `ValueError` naming the pairs violated.
    """
    phi, vel = _residuals(model, state.q, state.qd, state.t)
    raise_if_inconsistent(model, phi, vel, tol)


def raise_if_inconsistent(model: Model, phi, vel, tol: float = CONSISTENCY_TOL) -> None:
    """The host-side half of [`check_consistency`][redundax.equations.check_consistency], given Φ
    and C q̇ + b."""
    phi, vel = np.asarray(phi), np.asarray(vel)
    k = model.bodies.internal_rows
    start = model.n_holonomic - model.n_internal
    owners = [(f"pair {p.name!r}", p.rows) for p in model.pairs] + [
        (
            f"body {name!r} (rigid-body constraints: its axes must stay orthonormal)",
            tuple(range(start + b * k, start + (b + 1) * k)),
        )
        for b, name in enumerate(model.bodies.names)
        if k
    ]
    problems = []
    for owner, rows in owners:
        rows = np.asarray(rows)
        pos = rows[rows < model.n_holonomic]
        p_err = float(np.max(np.abs(phi[pos]))) if pos.size else 0.0
        v_err = float(np.max(np.abs(vel[rows])))
        if not (p_err <= tol and v_err <= tol):
            problems.append(
                f"{owner}: position residual {p_err:.3g}, velocity residual "
                f"{v_err:.3g} (tolerance {tol:g})"
            )
    if problems:
        raise ModelError(
            "inconsistent initial configuration: the state violates the constraints of "
            f"{len(problems)} pair(s) or bodies:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + "\nfix the bodies' positions/angles/velocities, or project the state onto the "
            "constraints first",
            problems,
            "check_consistency",
        )


def constraint_rows(
    model: Model, q: Float[Array, " nq"], t: Scalar = 0.0
) -> tuple[Float[Array, "nc P dof"], Int[Array, "nc P"]]:
    """C row by row in local form, without the dense (m + h) × nq matrix: `R[r, j]`
    is the derivative of row r (Φ_q or Ψ) in the coordinates of body `B[r, j]`, for
    the P bodies of the row's pair (P: the most bodies of any pair; unused slots
    and the ground have index `nb` and may hold anything). The same autodiff as
    [`constraint_matrix`][redundax.equations.constraint_matrix], O(nc) memory: C[r, B[r, j]] = R[r,
    j]."""
    Q = _coords(model, q)
    nb, dof = model.bodies.count, model.bodies.dof
    parts = [
        (0, g, jax.vmap(jax.jacfwd(_residual, argnums=1), in_axes=(0, 0, None))(g, Q[g.bodies], t))
        for g in model.holonomic
    ] + [
        (
            model.n_holonomic,
            g,
            jax.vmap(jax.jacfwd(_velocity_residual, argnums=2))(
                g, Q[g.bodies], jnp.zeros_like(Q[g.bodies])
            ),
        )
        for g in model.pfaffian
    ]
    P = max((g.bodies.shape[-1] for _, g, _ in parts), default=1)
    nc = model.n_constraints
    if not parts:
        return jnp.zeros((0, P, dof)), jnp.zeros((0, P), dtype=int)
    Rs, Bs, rows = [], [], []
    for offset, g, J in parts:
        k, size, nbp = J.shape[0], J.shape[1], J.shape[2]
        Rs.append(jnp.pad(J, ((0, 0), (0, 0), (0, P - nbp), (0, 0))).reshape(k * size, P, dof))
        bodies = jnp.pad(g.bodies, ((0, 0), (0, P - nbp)), constant_values=nb)
        Bs.append(jnp.broadcast_to(bodies[:, None, :], (k, size, P)).reshape(k * size, P))
        rows.append(g.rows + offset)
    return _in_row_order(nc, rows, Rs), _in_row_order(nc, rows, Bs)
