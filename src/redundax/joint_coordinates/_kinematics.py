"""Joint coordinates: a spanning tree of joints, their relative motions, and the
bodies' absolute coordinates as functions of the joint coordinates.

**Relative motion.** Every tree joint is one of the library's pairs, with a joint
frame on each body (`frame_i`, `frame_j`: rows e₀, e₁, e₂ in body components) at the
points `s_i`, `s_j`; in global components the frames are A = X_i F_iᵀ and
B = X_j F_jᵀ, and at the configuration the pair was built in they coincide. The
joint coordinates q_J describe body j's frame relative to body i's:

    B = A · R(q_J),    p_i − p_j = B · t(q_J)

with (R, t) per kind: a revolute turns about e₀ (R = R_x(q)), a prismatic slides
along e₀ (t = q e₀), a cylindrical does both, a universal turns about e₀ of body i
and then about e₁ of body j (R = R_x(q₀) R_y(q₁)), a spherical turns by the
rotation vector q (R = exp[q]×, singular only at |q| = 2π), a weld not at all. In
the plane (absolute coordinates x, y, φ) a revolute's coordinate is φ_j − φ_i, a
translational's the slide along the pair's sliding direction. A body that no
joint reaches from the ground gets a *free* joint (6 coordinates in space:
translation and rotation vector from its reference pose; 3 in the plane).

**Forward kinematics** (Featherstone's first preliminary pass) composes the
relative transforms from the ground outwards by pointer jumping: after k rounds
every body holds its pose relative to its 2ᵏ-th ancestor, so the sequential depth
is ⌈log₂ depth⌉ rounds of one vectorised composition each, for chains and trees
alike. Velocities and accelerations of the absolute coordinates are its
derivatives (`jax.jvp`); nothing is derived by hand.
"""

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from .._bodies import natural_from_pose
from .._math import rot2
from .._model import Model
from .._structure import spanning_forest

# Coordinates of each kind of tree joint, and their names (for reports and files).
COORDINATES: dict[str, tuple[str, ...]] = {
    "revolute": ("angle",),
    "translational": ("slide",),
    "weld": (),
    "free": ("x", "y", "angle"),
    "revolute-3d": ("angle",),
    "prismatic-3d": ("slide",),
    "cylindrical": ("angle", "slide"),
    "universal": ("angle e0", "angle e1"),
    "spherical": ("rotation x", "rotation y", "rotation z"),
    "weld-3d": (),
    "free-3d": ("x", "y", "z", "rotation x", "rotation y", "rotation z"),
}
PLANAR_KINDS = ("revolute", "translational", "weld")
SPATIAL_KINDS = ("revolute-3d", "prismatic-3d", "cylindrical", "universal", "spherical", "weld-3d")


# ------------------------------------------------------------------ rotations
def _rx(a):
    c, s = jnp.cos(a), jnp.sin(a)
    return jnp.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ry(b):
    c, s = jnp.cos(b), jnp.sin(b)
    return jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _skew(w):
    return jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def exp_rotation(w: Float[Array, " 3"]) -> Float[Array, "3 3"]:
    """exp([w]×) by Rodrigues' formula, with series near w = 0 so that value and
    derivatives are exact there."""
    theta2 = w @ w
    small = theta2 < 1e-8
    theta = jnp.sqrt(jnp.where(small, 1.0, theta2))
    a = jnp.where(small, 1.0 - theta2 / 6.0, jnp.sin(theta) / theta)
    b = jnp.where(small, 0.5 - theta2 / 24.0, (1.0 - jnp.cos(theta)) / (theta * theta))
    K = _skew(w)
    return jnp.eye(3) + a * K + b * (K @ K)


def log_rotation(R: Float[Array, "3 3"]) -> Float[Array, " 3"]:
    """The rotation vector w with exp([w]×) = R and |w| ≤ π."""
    cos = jnp.clip(0.5 * (jnp.trace(R) - 1.0), -1.0, 1.0)
    theta = jnp.arccos(cos)
    v = 0.5 * jnp.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])  # sin θ n
    small = theta < 1e-6
    near_pi = theta > math.pi - 1e-3
    sin = jnp.sin(theta)
    general = v * theta / jnp.where(small | near_pi, 1.0, sin)
    # Near π, sin θ → 0: the axis from the symmetric part, R + I = 2 cos²… (n nᵀ terms).
    S = 0.5 * (R + R.T) - cos * jnp.eye(3)  # = (1 − cos θ) n nᵀ
    k = jnp.argmax(jnp.diagonal(S))
    n = S[k] / jnp.sqrt(jnp.maximum(S[k, k], 1e-300))
    n = jnp.where(n @ v < 0.0, -n, n)
    return jnp.where(small, v, jnp.where(near_pi, theta * n, general))


# ------------------------------------------------------------------ the tree joints
class TreeJoints(eqx.Module):
    """The tree joints of one kind, stacked (k of them).

    Their geometry is read from the model at every evaluation
    (`TreeJoints.geometry`), so a parameter changed in the model (a joint
    point, an axis) changes the kinematics too: one source of truth. `group` is the
    index of the pairs' stacked group in `model.holonomic` and `member` their
    members in it. A free joint (kind "free", "free-3d") has no pair; it keeps its
    body's reference pose in `reference_position` and `reference_rotation`
    (rotation matrix, or angle in the plane).

    `parent_is_i`: whether body i of the pair is the parent (nearer the ground) of
    the two. `child`, `parent`: body indices (the ground is `nb`). `coordinates`:
    the joints' coordinates' positions in q, shape `(k, n)` with n per kind.
    """

    kind: str = eqx.field(static=True)
    pairs: tuple[int, ...] = eqx.field(static=True)
    group: int = eqx.field(static=True)
    member: Int[Array, " k"]
    reference_position: Float[Array, "k dim"]
    reference_rotation: Float[Array, "k ..."]
    parent_is_i: Bool[Array, " k"]
    child: Int[Array, " k"]
    parent: Int[Array, " k"]
    coordinates: Int[Array, "k n"]

    @property
    def planar(self) -> bool:
        return self.kind in PLANAR_KINDS or self.kind == "free"

    def geometry(self, model: Model):
        """`(s_i, s_j, frame_i, frame_j, slide)` of the k joints from `model`: the
        joint points in their bodies, the joint frames (rows e₀, e₁, e₂ in body
        components; in the plane, the angle body i's frame is turned by), and the
        planar sliding direction in body j's frame."""
        k, dim = self.member.shape[0], 2 if self.planar else 3
        if self.group < 0:
            zeros = jnp.zeros((k, dim))
            frame_j = jnp.zeros(k) if self.planar else jnp.broadcast_to(jnp.eye(3), (k, 3, 3))
            return self.reference_position, zeros, self.reference_rotation, frame_j, zeros
        g = model.holonomic[self.group]
        s_i, s_j = g.s_i[self.member], g.s_j[self.member]
        if not self.planar:
            return s_i, s_j, g.frame_i[self.member], g.frame_j[self.member], jnp.zeros((k, 3))
        zero = jnp.zeros(k)
        if self.kind == "revolute":
            return s_i, s_j, zero, zero, jnp.zeros((k, 2))
        angle = g.angle[self.member]
        if self.kind == "weld":
            return s_i, s_j, angle, zero, jnp.zeros((k, 2))
        n = g.normal[self.member]
        slide = jnp.stack([-n[:, 1], n[:, 0]], axis=1) / jnp.linalg.norm(n, axis=1)[:, None]
        return s_i, s_j, angle, zero, slide  # translational


def _planar_motion(kind: str, q, slide):
    """(ρ, t): body j's frame turned by ρ from body i's, and p_i − p_j = R(φ_B) t."""
    if kind == "revolute":
        return q[0], jnp.zeros(2)
    if kind == "translational":
        return jnp.zeros(()), q[0] * slide
    return jnp.zeros(()), jnp.zeros(2)  # weld


def _spatial_motion(kind: str, q):
    """(R, t) with B = A R and p_i − p_j = B t."""
    e0 = jnp.array([1.0, 0.0, 0.0])
    if kind == "revolute-3d":
        return _rx(q[0]), jnp.zeros(3)
    if kind == "prismatic-3d":
        return jnp.eye(3), q[0] * e0
    if kind == "cylindrical":
        return _rx(q[0]), q[1] * e0
    if kind == "universal":
        return _rx(q[0]) @ _ry(q[1]), jnp.zeros(3)
    if kind == "spherical":
        return exp_rotation(q), jnp.zeros(3)
    return jnp.eye(3), jnp.zeros(3)  # weld-3d


def _relative_planar(kind, s_i, s_j, f_i, f_j, slide, parent_is_i, q):
    """The child's pose in the parent's frame: (angle δ, position t_PC)."""
    if kind == "free":
        return f_i + q[2], s_i + q[:2]
    rho, t = _planar_motion(kind, q, slide)
    # Parent i:  φ_j = φ_i − f_i + ρ + f_j,  r_j = r_i + R_i (s_i − R(ρ − f_i)(t + R(f_j) s_j)).
    d_i = -f_i + rho + f_j
    t_i = s_i - rot2(rho - f_i) @ (t + rot2(f_j) @ s_j)
    # Parent j:  φ_i = φ_j − f_j − ρ + f_i,  r_i = r_j + R_j (s_j + R(−f_j) t − R(δ) s_i).
    d_j = -f_j - rho + f_i
    t_j = s_j + rot2(-f_j) @ t - rot2(d_j) @ s_i
    return jnp.where(parent_is_i, d_i, d_j), jnp.where(parent_is_i, t_i, t_j)


def _relative_spatial(kind, s_i, s_j, F_i, F_j, parent_is_i, q):
    """The child's pose in the parent's frame: (rotation R_PC, position t_PC)."""
    if kind == "free-3d":
        return exp_rotation(q[3:]) @ F_i, s_i + q[:3]
    R, t = _spatial_motion(kind, q)
    # Parent i:  X_j = X_i F_iᵀ R F_j,  r_j = r_i + X_i (s_i − F_iᵀ R (t + F_j s_j)).
    R_i = F_i.T @ R @ F_j
    t_i = s_i - F_i.T @ R @ (t + F_j @ s_j)
    # Parent j:  X_i = X_j F_jᵀ Rᵀ F_i,  r_i = r_j + X_j (s_j + F_jᵀ t) − X_i s_i.
    R_j = F_j.T @ R.T @ F_i
    t_j = s_j + F_j.T @ t - R_j @ s_i
    return jnp.where(parent_is_i, R_i, R_j), jnp.where(parent_is_i, t_i, t_j)


def relative_transforms(group: TreeJoints, model: Model, q: Float[Array, " nq"]):
    """Each joint's child pose in its parent's frame at the joint coordinates `q`."""
    qs = q[group.coordinates]
    s_i, s_j, f_i, f_j, slide = group.geometry(model)
    if group.planar:
        fn = lambda *a: _relative_planar(group.kind, *a)  # noqa: E731
        return jax.vmap(fn)(s_i, s_j, f_i, f_j, slide, group.parent_is_i, qs)
    fn = lambda *a: _relative_spatial(group.kind, *a)  # noqa: E731
    return jax.vmap(fn)(s_i, s_j, f_i, f_j, group.parent_is_i, qs)


def _compose(planar: bool, a, b):
    """Poses a ∘ b (b given in a's frame), body by body."""
    (Ra, ra), (Rb, rb) = a, b
    if planar:
        return Ra + Rb, ra + jnp.einsum("bij,bj->bi", jax.vmap(rot2)(Ra), rb)
    return jnp.einsum("bij,bjk->bik", Ra, Rb), ra + jnp.einsum("bij,bj->bi", Ra, rb)


def _pose_of(planar: bool, x: Float[Array, "nb dof"]):
    """Poses (rotation or angle, position) of bodies from their absolute coordinates."""
    if planar:
        return x[:, 2], x[:, :2]
    return jnp.swapaxes(x[:, 3:].reshape(-1, 3, 3), 1, 2), x[:, :3]


def _coordinates_of(planar: bool, pose) -> Float[Array, "nb dof"]:
    R, r = pose
    if planar:
        return jnp.concatenate([r, R[:, None]], axis=1)
    return jax.vmap(natural_from_pose)(r, R)


def _child_coordinates(group: TreeJoints, x_parent, q_joint, fields):
    """x_C = g_J(x_P, q_J): one joint's child coordinates from its parent's
    coordinates and its own joint coordinates (the local map whose derivatives give
    the joint rates)."""
    planar = group.planar
    s_i, s_j, f_i, f_j, slide, parent_is_i = fields
    if planar:
        rel = _relative_planar(group.kind, s_i, s_j, f_i, f_j, slide, parent_is_i, q_joint)
    else:
        rel = _relative_spatial(group.kind, s_i, s_j, f_i, f_j, parent_is_i, q_joint)
    parent = _pose_of(planar, x_parent[None])
    child = _compose(planar, parent, (rel[0][None], rel[1][None]))
    return _coordinates_of(planar, child)[0]


def _fields(group: TreeJoints, model: Model):
    return (*group.geometry(model), group.parent_is_i)


def _lstsq(J, r):
    """min ‖J x − r‖ for a J of full column rank (a joint's few coordinates)."""
    return jnp.linalg.solve(J.T @ J, J.T @ r)


def joint_rates(
    group: TreeJoints,
    model: Model,
    q: Float[Array, " nq"],
    x: Float[Array, "nb1 dof"],
    xd: Float[Array, "nb1 dof"],
):
    """q̇ of the group's joints from the absolute velocities (ground row last, zero):
    q̇_J = argmin ‖∂g/∂q_J q̇_J − (ẋ_C − ∂g/∂x_P ẋ_P)‖, exact on the manifold."""

    def one(xP, xPd, xCd, qJ, *fields):
        g = lambda a, b: _child_coordinates(group, a, b, fields)  # noqa: E731
        transported = jax.jvp(lambda a: g(a, qJ), (xP,), (xPd,))[1]
        return _lstsq(jax.jacfwd(g, argnums=1)(xP, qJ), xCd - transported)

    qs = q[group.coordinates]
    return jax.vmap(one)(
        x[group.parent], xd[group.parent], xd[group.child], qs, *_fields(group, model)
    )


def joint_accelerations(
    group: TreeJoints,
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    x: Float[Array, "nb1 dof"],
    xd: Float[Array, "nb1 dof"],
    xdd: Float[Array, "nb1 dof"],
):
    """q̈ of the group's joints from the absolute accelerations: ẍ_C = ∂g/∂x_P ẍ_P +
    ∂g/∂q_J q̈_J + h, h the second derivative of g along (ẋ_P, q̇_J)."""

    def one(xP, xPd, xPdd, xCdd, qJ, qJd, *fields):
        g = lambda a, b: _child_coordinates(group, a, b, fields)  # noqa: E731
        along = lambda s: g(xP + s * xPd, qJ + s * qJd)  # noqa: E731
        h = jax.jvp(lambda s: jax.jvp(along, (s,), (1.0,))[1], (0.0,), (1.0,))[1]
        transported = jax.jvp(lambda a: g(a, qJ), (xP,), (xPdd,))[1]
        return _lstsq(jax.jacfwd(g, argnums=1)(xP, qJ), xCdd - transported - h)

    qs, qds = q[group.coordinates], qd[group.coordinates]
    return jax.vmap(one)(
        x[group.parent], xd[group.parent], xdd[group.parent], xdd[group.child], qs, qds,
        *_fields(group, model),
    )  # fmt: skip


ROTATION_VECTORS = {"spherical": slice(0, 3), "free-3d": slice(3, 6)}
"""The joint kinds whose rotation is a rotation vector θ, and its coordinates."""

RECHART = 4.0 * math.pi / 3.0
"""|θ| beyond which a rotation vector is re-charted to θ (1 − 2π/|θ|) (the same
rotation, |θ'| < 2π/3). The map θ̇ ↦ ω is singular at |θ| = 2π; re-charting long
before keeps its condition number below 3.3, and the gap to the new length (2π/3)
keeps it from switching back and forth."""


def _rechart_one(theta, theta_dot):
    norm = jnp.sqrt(theta @ theta)
    flip = norm > RECHART
    new = jnp.where(flip, theta * (1.0 - 2.0 * math.pi / jnp.where(flip, norm, 1.0)), theta)
    # The same rotation and the same angular velocity: Ṙ = ∂R/∂θ' θ̇'.
    R_dot = jax.jvp(exp_rotation, (theta,), (theta_dot,))[1]
    J = jax.jacfwd(exp_rotation)(new).reshape(9, 3)
    return new, jnp.where(flip, _lstsq(J, R_dot.reshape(9)), theta_dot)


def rechart_rotation_vectors(joints: Sequence[TreeJoints], q, qd):
    """`(q, q̇)` with every rotation vector longer than `RECHART` replaced by
    the shorter one of the same rotation, its rate by the one of the same angular
    velocity (the state is unchanged; only its chart)."""
    for group in joints:
        slots = ROTATION_VECTORS.get(group.kind)
        if slots is None:
            continue
        index = group.coordinates[:, slots]
        theta, theta_dot = jax.vmap(_rechart_one)(q[index], qd[index])
        q, qd = q.at[index].set(theta), qd.at[index].set(theta_dot)
    return q, qd


def has_rotation_vectors(joints: Sequence[TreeJoints]) -> bool:
    """Whether any tree joint is parametrised by a rotation vector."""
    return any(group.kind in ROTATION_VECTORS for group in joints)


def forward_kinematics(
    joints: Sequence[TreeJoints],
    model: Model,
    ancestors: Int[Array, " nb1"],
    rounds: int,
    planar: bool,
    q: Float[Array, " nq"],
) -> Float[Array, "nb1 dof"]:
    """The bodies' absolute coordinates (ground last) at the joint coordinates `q`,
    by pointer jumping over the tree (`rounds` = ⌈log₂ of the deepest path⌉)."""
    nb1 = ancestors.shape[0]
    if planar:
        R, r = jnp.zeros(nb1), jnp.zeros((nb1, 2))
    else:
        R, r = jnp.broadcast_to(jnp.eye(3), (nb1, 3, 3)), jnp.zeros((nb1, 3))
    for group in joints:
        Rg, rg = relative_transforms(group, model, q)
        R, r = R.at[group.child].set(Rg), r.at[group.child].set(rg)
    anc = ancestors
    for _ in range(rounds):
        R, r = _compose(planar, (R[anc], r[anc]), (R, r))
        anc = anc[anc]
    return _coordinates_of(planar, (R, r))


def inverse_kinematics(
    group: TreeJoints, model: Model, x: Float[Array, "nb1 dof"]
) -> Float[Array, "k n"]:
    """The group's joint coordinates at the absolute coordinates `x` (ground row
    last) of a configuration the tree joints hold (angles in (−π, π])."""
    planar = group.planar
    body_i = jnp.where(group.parent_is_i, group.parent, group.child)
    body_j = jnp.where(group.parent_is_i, group.child, group.parent)
    Ri, ri = _pose_of(planar, x[body_i])
    Rj, rj = _pose_of(planar, x[body_j])
    Rc, rc = _pose_of(planar, x[group.child])
    kind = group.kind
    s_i, s_j, frame_i, frame_j, slide = group.geometry(model)
    if planar:
        if kind == "free":
            return jnp.concatenate([rc - s_i, (Rc - frame_i)[:, None]], axis=1)
        rho = Rj - Ri + frame_i - frame_j
        pi = ri + jnp.einsum("bij,bj->bi", jax.vmap(rot2)(Ri), s_i)
        pj = rj + jnp.einsum("bij,bj->bi", jax.vmap(rot2)(Rj), s_j)
        t = jnp.einsum("bji,bj->bi", jax.vmap(rot2)(Rj - frame_j), pi - pj)
        if kind == "revolute":
            return rho[:, None]
        if kind == "translational":
            return jnp.einsum("bi,bi->b", t, slide)[:, None]
        return jnp.zeros((rho.shape[0], 0))
    if kind == "free-3d":
        rel = jnp.einsum("bij,bkj->bik", Rc, frame_i)
        return jnp.concatenate([rc - s_i, jax.vmap(log_rotation)(rel)], axis=1)
    A = jnp.einsum("bij,bkj->bik", Ri, frame_i)
    B = jnp.einsum("bij,bkj->bik", Rj, frame_j)
    Rrel = jnp.einsum("bji,bjk->bik", A, B)
    pi = ri + jnp.einsum("bij,bj->bi", Ri, s_i)
    pj = rj + jnp.einsum("bij,bj->bi", Rj, s_j)
    t = jnp.einsum("bji,bj->bi", B, pi - pj)
    angle = jnp.arctan2(Rrel[:, 2, 1], Rrel[:, 1, 1])
    if kind == "revolute-3d":
        return angle[:, None]
    if kind == "prismatic-3d":
        return t[:, :1]
    if kind == "cylindrical":
        return jnp.stack([angle, t[:, 0]], axis=1)
    if kind == "universal":
        return jnp.stack([angle, jnp.arctan2(Rrel[:, 0, 2], Rrel[:, 0, 0])], axis=1)
    if kind == "spherical":
        return jax.vmap(log_rotation)(Rrel)
    return jnp.zeros((angle.shape[0], 0))


# ------------------------------------------------------------------ building the tree
def spanning_tree(model: Model, tree: Sequence[str] | None = None):
    """The tree joints (pair indices, parents first) and the bodies they do not
    reach (which get free joints), as `(edges, roots)` with `edges` a list of
    `(pair, parent_body, child_body)` in breadth-first order.

    Default: breadth-first from the ground over the pairs that are joints of a kind
    with joint coordinates, in the model's pair order (as [`redundax.analysis.topology`][]);
    with `tree`, only the named pairs, which must form a tree."""
    nb = model.bodies.count
    kinds = PLANAR_KINDS if model.dim == 2 else SPATIAL_KINDS
    index = {p.name: k for k, p in enumerate(model.pairs)}
    if tree is None:
        candidates = [
            k for k, p in enumerate(model.pairs) if p.kind in kinds and len(set(p.bodies)) == 2
        ]
    else:
        problems = []
        candidates = []
        for name in tree:
            if name not in index:
                problems.append(f"no pair named {name!r}")
                continue
            pair = model.pairs[index[name]]
            if pair.kind not in kinds:
                problems.append(
                    f"pair {name!r} is a {pair.kind}, which has no joint coordinates "
                    f"(tree joints: {', '.join(kinds)})"
                )
            candidates.append(index[name])
        if problems:
            raise ValueError("tree: " + "; ".join(problems))
    adjacency: dict[int, list[tuple[int, int]]] = {b: [] for b in range(nb + 1)}
    for k in candidates:
        i, j = (model.body_index(b) for b in model.pairs[k].bodies)
        adjacency[i].append((k, j))
        adjacency[j].append((k, i))
    forest, roots = spanning_forest(nb, adjacency)
    # A floating part's root gets a free joint (pair −1) from the ground, before
    # the joints that hang from it.
    edges: list[tuple[int, int, int]] = []
    rooted = set()
    for k, b, other in forest:
        for r in roots:
            if r not in rooted and b == r:
                edges.append((-1, nb, r))
                rooted.add(r)
        edges.append((k, b, other))
    edges += [(-1, nb, r) for r in roots if r not in rooted]
    if tree is not None:
        used = {k for k, _, _ in edges}
        closing = [model.pairs[k].name for k in candidates if k not in used]
        if closing:
            raise ValueError(
                f"tree: the pairs {', '.join(map(repr, closing))} close loops with the other "
                "named pairs; a spanning tree has none (leave them out: they become cut joints)"
            )
    return edges, roots
