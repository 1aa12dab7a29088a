"""What the user writes: bodies, pairs and loads by name, and the Mechanism that
validates them and stacks them into a [`redundax.Model`][].

Specs are plain frozen dataclasses of names and numbers; all checking happens in
[`Mechanism.build`][redundax.Mechanism.build], which collects *every* problem into one `ValueError`
naming the offending body, pair and field.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._bodies import (
    PlanarBodies,
    SpatialBodies,
    mass_facts,
    natural_from_pose,
    natural_velocity,
)
from ._force_specs import FORCE_SPECS, Bushing
from ._math import device
from ._model import Loads, Markers, Model, Pair, State
from ._motion import AbstractMotion
from ._pairs import RigidBodyConstraint
from ._spatial_body import SpatialBody, check_inertia, check_rotation
from ._spec_fields import Problems, motion_field
from .joints._custom import CustomHolonomic, CustomPfaffian
from .joints._planar import (
    KnifeEdge,
    Revolute,
    RevoluteDriver,
    Translational,
    TranslationalDriver,
    Weld,
)
from .joints._spatial import SPATIAL_SPECS, Universal, check_universal

GROUND = "ground"
Vector = Sequence[float] | Any


@dataclasses.dataclass(frozen=True)
class Body:
    """A planar rigid body; its frame is at its centre of mass.

    **Arguments:**

    - `name`: unique name ("ground" is reserved for the fixed frame).
    - `mass`: mass [kg], > 0.
    - `inertia`: central moment of inertia about the plane normal [kg m²], > 0.
    - `position`, `angle`: initial pose of the body frame [m], [rad].
    - `velocity`, `angular_velocity`: initial velocity [m/s], [rad/s].
    """

    name: str
    mass: float
    inertia: float
    position: Vector = (0.0, 0.0)
    angle: float = 0.0
    velocity: Vector = (0.0, 0.0)
    angular_velocity: float = 0.0


@dataclasses.dataclass(frozen=True)
class Load:
    """A constant global `force` [N] at body point `point` [m] (body frame) and a
    constant `torque` [N m]: a number in the plane, a global 3-vector in space.
    Omitted fields are zero."""

    body: str
    force: Vector | None = None
    point: Vector | None = None
    torque: Vector | float | None = None


@dataclasses.dataclass(frozen=True)
class Marker:
    """A named body point (body frame [m], default the centre of mass) whose
    global position is tracked."""

    name: str
    body: str
    point: Vector | None = None


HOLONOMIC_SPECS = (
    Revolute,
    Translational,
    Weld,
    TranslationalDriver,
    RevoluteDriver,
    CustomHolonomic,
)
PFAFFIAN_SPECS = (KnifeEdge, CustomPfaffian)


def device_int(values) -> jax.Array:
    """Integers (indices) as an int32 JAX array, with no XLA program compiled."""
    return device(np.asarray(values, dtype=np.int32))


def _pair_bodies(spec) -> tuple[str, ...]:
    """The body names a pair connects."""
    if isinstance(spec, (CustomHolonomic, CustomPfaffian)):
        return tuple(spec.bodies)
    if isinstance(spec, KnifeEdge):
        return (spec.body,)
    return (spec.body_i, spec.body_j)


def _rows(vectors: list, width: int = 2):
    """Stack vectors into a `(k, width)` array, `(0, width)` when there are none."""
    return np.stack([np.asarray(v) for v in vectors]) if vectors else np.zeros((0, width))


def _stack(members: list):
    return jax.tree.map(lambda *xs: device(np.stack([np.asarray(x) for x in xs])), *members)


def _group_key(member) -> tuple:
    leaves, treedef = jax.tree.flatten(member)
    return (type(member), treedef, tuple(jnp.shape(x) for x in leaves))


def _group(members: list) -> tuple:
    """Stack members of identical type and structure; order of first appearance."""
    groups: dict[tuple, list] = {}
    for m in members:
        groups.setdefault(_group_key(m), []).append(m)
    return tuple(_stack(ms) for ms in groups.values())


def _group_positions(members: list) -> list[tuple[int, int]]:
    """`(group, member)` of each of `members` in the groups `_group` makes of them."""
    keys: dict[tuple, int] = {}
    counts: list[int] = []
    out = []
    for m in members:
        g = keys.setdefault(_group_key(m), len(keys))
        if g == len(counts):
            counts.append(0)
        out.append((g, counts[g]))
        counts[g] += 1
    return out


class _Context:
    """What a pair or force spec needs from the mechanism to build its member."""

    def __init__(
        self, p: Problems, names: list[str], poses: dict, dim: int = 3, angles: dict | None = None
    ):
        self.p, self.names, self.poses, self.dim = p, names, poses, dim
        self.angles = {} if angles is None else angles
        self.joints: dict = {}  # pair name -> (spec, group, member, (rows, bodies)), set by build
        self.lookup = {n: k for k, n in enumerate(names)}
        self.lookup[GROUND] = len(names)

    def known(self, *names) -> bool:
        """Whether every one of `names` is a body of the mechanism or the ground
        (an unknown name is reported once, by `body`)."""
        return all(isinstance(n, str) and n in self.lookup for n in names)

    def index(self, spec, fields):
        out, given = [], []
        for f in fields:
            value = getattr(spec, f)
            for body in (value,) if isinstance(value, str) else tuple(value):
                given.append(body)
                out.append(self.body(f"pair {spec.name!r} field {f!r}", body))
        checkable = bool(given) and self.known(*given)  # unknown names: reported above
        if checkable and len(out) == 2 and out[0] == out[1] and fields == ("body_i", "body_j"):
            self.p.add(f"pair {spec.name!r}: body_i and body_j are the same body {spec.body_i!r}")
        elif checkable and all(b == GROUND for b in given):
            self.p.add(
                f"pair {spec.name!r}: attached to the ground alone ({', '.join(fields)} = "
                f"{GROUND!r}), which does not move: it would constrain nothing"
            )
        return device(np.asarray(out, dtype=np.int32))

    __call__ = index

    def pair_bodies(self, spec, k: int):
        """Indices of `body_i`, `body_j` of force element `k` (not the same body)."""
        out = [self.body(f"force {k} field {f!r}", getattr(spec, f)) for f in ("body_i", "body_j")]
        if out[0] == out[1] and self.known(spec.body_i, spec.body_j):
            self.p.add(f"force {k}: body_i and body_j are the same body {spec.body_i!r}")
        return device(np.asarray(out, dtype=np.int32))

    def body(self, owner: str, name) -> int:
        if not isinstance(name, str) or name not in self.lookup:
            self.p.add(
                f"{owner}: unknown body {name!r} (known: {', '.join(self.names + [GROUND])})"
            )
        return self.lookup.get(name, len(self.names)) if isinstance(name, str) else len(self.names)

    def pose(self, name):
        """(position, rotation) of a body at the initial configuration (spatial;
        planar: position (2,), rotation (2, 2)); the ground's is the identity."""
        identity = (np.zeros(self.dim), np.eye(self.dim))
        return self.poses.get(name, identity) if isinstance(name, str) else identity

    def initial_point(self, name, s):
        """Global position [m] of the body point `s` (body frame) at the initial
        configuration."""
        r, R = self.pose(name)
        return r + R @ np.asarray(s)

    def initial_angle(self, name):
        """Angle [rad] of a planar body at the initial configuration (ground: 0)."""
        return self.angles.get(name, np.zeros(())) if isinstance(name, str) else np.zeros(())

    def rotation(self, value, where: str):
        return check_rotation(self.p, value, where)

    def motion(self, spec) -> AbstractMotion:
        return motion_field(self.p, spec.motion, f"pair {spec.name!r} field 'motion'")


def _planar_poses(bodies) -> tuple[dict, dict]:
    """Initial poses {name: (position, rotation)} and angles {name: φ} of planar
    bodies, for the defaults of force elements; an invalid pose reads as zero (it is
    reported by `initial_state`)."""
    poses, angles = {}, {}
    for b in bodies:
        try:
            r = np.asarray(b.position, dtype=float)
            angle = float(b.angle)
        except (TypeError, ValueError):
            r, angle = np.zeros(2), 0.0
        if r.shape != (2,) or not np.all(np.isfinite(r)) or not np.isfinite(angle):
            r, angle = np.zeros(2), 0.0
        c, s = np.cos(angle), np.sin(angle)
        poses[b.name] = (r, np.array([[c, -s], [s, c]]))  # rot2 on the host
        angles[b.name] = np.asarray(angle)
    return poses, angles


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """A mechanism described by names: bodies, pairs, loads, tracked points.

    Planar when its bodies are [`Body`][redundax.Body]s, spatial when they are
    [`SpatialBody`][redundax.SpatialBody]s (then its pairs are the spatial joints:
    [`Revolute3D`][redundax.joints.Revolute3D],
    [`Spherical`][redundax.joints.Spherical], ...; the bodies are modelled in natural coordinates).

    **Arguments:**

    - `bodies`: the moving bodies (the ground is implicit and called "ground").
    - `pairs`: kinematic pairs, holonomic and Pfaffian; rows of C follow this
      order, holonomic pairs first, then (spatial) the six rigid-body rows of each
      body, then Pfaffian pairs.
    - `gravity`: gravitational acceleration [m/s²], length 2 or 3 (default zero).
    - `loads`: constant applied forces and torques.
    - `markers`: tracked points.
    - `forces`: force elements: [`SpringDamper`][redundax.forces.SpringDamper],
      [`RotationalSpringDamper`][redundax.forces.RotationalSpringDamper],
      [`Bushing`][redundax.forces.Bushing] (spatial),
      [`TimeDependentLoad`][redundax.forces.TimeDependentLoad],
      [`CustomForce`][redundax.forces.CustomForce]; errors
      name them by their index in this sequence ("force 2 field 'stiffness'").

    !!! example
        ```python
        mech = rx.Mechanism(
            bodies=[rx.Body("crank", mass=1.0, inertia=0.1, position=(0.5, 0.0))],
            pairs=[rx.joints.Revolute("O", "crank", "ground", point_i=(-0.5, 0.0))],
            gravity=(0.0, -9.81),
        )
        model, state = mech.build(), mech.initial_state()
        ```
    """

    bodies: Sequence[Any]
    pairs: Sequence[Any]
    gravity: Vector | None = None
    loads: Sequence[Load] = ()
    markers: Sequence[Marker] = ()
    forces: Sequence[Any] = ()

    @property
    def dim(self) -> int:
        """3 if the bodies are spatial, else 2."""
        return 3 if any(isinstance(b, SpatialBody) for b in self.bodies) else 2

    def _check_bodies(self, p: Problems) -> None:
        dim = self.dim
        names = [getattr(b, "name", None) for b in self.bodies]
        if not names:
            p.add("bodies: a mechanism needs at least one moving body")
        seen: set[str] = set()
        for b, name in zip(self.bodies, names, strict=True):
            if not isinstance(b, (Body, SpatialBody)):
                p.add(f"bodies: expected redundax.Body or redundax.SpatialBody, got {b!r}")
                continue
            if isinstance(b, Body) != (dim == 2):
                p.add(
                    f"body {name!r}: planar Body and SpatialBody cannot be mixed in one mechanism"
                )
            if name == GROUND:
                p.add(f"body {name!r}: the name 'ground' is reserved for the fixed frame")
            if name in seen:
                p.add(f"body {name!r}: duplicate body name")
            seen.add(name)

    def _bodies(self, p: Problems):
        """The bodies module and the initial poses (spatial: position, rotation)."""
        names = tuple(b.name for b in self.bodies)
        mass = np.stack(
            [p.scalar(b.mass, f"body {b.name!r} field 'mass'", positive=True) for b in self.bodies]
            or [np.zeros(())]
        )
        if self.dim == 2:
            inertia = np.stack(
                [
                    p.scalar(b.inertia, f"body {b.name!r} field 'inertia'", positive=True)
                    for b in self.bodies
                ]
                or [np.zeros(())]
            )
            return PlanarBodies(mass=device(mass), inertia=device(inertia), names=names), {}
        inertia = np.stack(
            [check_inertia(p, b.inertia, f"body {b.name!r} field 'inertia'") for b in self.bodies]
        )
        poses = {
            b.name: (
                np.asarray(p.vector(b.position, 3, f"body {b.name!r} field 'position'")),
                check_rotation(p, b.rotation, f"body {b.name!r} field 'rotation'"),
            )
            for b in self.bodies
        }
        bodies = SpatialBodies(
            mass=device(mass),
            com=device(np.zeros((len(names), 3))),
            inertia=device(inertia),
            names=names,
        )
        return bodies, poses

    def build(self) -> Model:
        """Validate everything and stack the pairs by type into a `Model`.

        **Raises:** `ValueError` listing every problem found: duplicate or unknown
        names, wrong vector lengths, non-positive masses or inertias, unknown pair
        types, planar pairs in a spatial mechanism and vice versa.
        """
        p = Problems()
        self._check_bodies(p)
        p.raise_if_any("mechanism")
        self._initial_vectors(p)
        dim = self.dim
        bodies, poses = self._bodies(p)
        names = list(bodies.names)
        nb = len(names)
        if dim == 2:
            poses, angles = _planar_poses(self.bodies)
            ctx = _Context(p, names, poses, dim, angles)
        else:
            ctx = _Context(p, names, poses, dim)
        holonomic_specs = HOLONOMIC_SPECS if dim == 2 else SPATIAL_SPECS + (CustomHolonomic,)
        pfaffian_specs = PFAFFIAN_SPECS if dim == 2 else (CustomPfaffian,)
        for spec in self.pairs:
            if isinstance(spec, holonomic_specs + pfaffian_specs):
                continue
            if isinstance(spec, HOLONOMIC_SPECS + PFAFFIAN_SPECS + SPATIAL_SPECS):
                other = "spatial" if dim == 2 else "planar"
                p.add(
                    f"pair {getattr(spec, 'name', '?')!r}: a {other} pair "
                    f"({type(spec).__name__}) in a {'planar' if dim == 2 else 'spatial'} "
                    "mechanism"
                )
            else:
                p.add(f"pairs: unknown pair type {type(spec).__name__!r} ({spec!r})")
        for spec in self.pairs:
            if isinstance(spec, Universal):
                check_universal(p, spec)

        hol, pf, pairs = [], [], []
        pair_names: set[str] = set()
        m = h = 0
        ordered = [s for s in self.pairs if isinstance(s, holonomic_specs)] + [
            s for s in self.pairs if isinstance(s, pfaffian_specs)
        ]
        for spec in ordered:
            if spec.name in pair_names:
                p.add(f"pair {spec.name!r}: duplicate pair name")
            pair_names.add(spec.name)
            size = int(spec.size)
            if isinstance(spec, holonomic_specs):
                rows, pfaffian = np.arange(m, m + size, dtype=np.int32), False
                m += size
                hol.append(spec._member(p, ctx, device(rows)))
            else:
                rows, pfaffian = np.arange(h, h + size, dtype=np.int32), True
                h += size
                pf.append(spec._member(p, ctx, device(rows)))
            rows = tuple(int(r) for r in rows)
            pairs.append((spec, pfaffian, rows))
        built = list(pairs)
        n_internal = bodies.internal_rows * nb
        internal = [
            RigidBodyConstraint(
                bodies=device(np.asarray([b], dtype=np.int32)),
                rows=device(np.arange(m + 6 * b, m + 6 * (b + 1), dtype=np.int32)),
            )
            for b in range(nb)
            if n_internal
        ]
        m_all = m + n_internal
        pairs = tuple(
            Pair(
                spec.name,
                spec.kind,
                tuple(m_all + r if pfaffian else r for r in rows),
                _pair_bodies(spec),
                tuple(spec.components),
            )
            for spec, pfaffian, rows in pairs
        )

        gravity = (
            device(np.zeros(dim))
            if self.gravity is None
            else p.vector(self.gravity, dim, "mechanism field 'gravity'")
        )
        with np.errstate(over="ignore", invalid="ignore"):
            weights = np.asarray(bodies.mass)[:, None] * np.abs(np.asarray(gravity))[None, :]
        for name, weight in zip(names, weights, strict=True):
            if not np.all(np.isfinite(weight)):
                p.add(
                    f"body {name!r} field 'mass': its weight m·|g| overflows float64 (mass "
                    f"{float(np.asarray(bodies.mass)[names.index(name)]):g} kg)"
                )
        zeros = (0.0,) * dim

        def vec(value, where, length=dim):
            return p.vector((0.0,) * length if value is None else value, length, where)

        torque_len = 1 if dim == 2 else 3
        for k, ld in enumerate(self.loads):
            body = getattr(ld, "body", None)
            if body == GROUND:
                p.add(f"load {k} field 'body': the ground does not move; a load on it does nothing")
            if getattr(ld, "force", None) is None and getattr(ld, "torque", None) is None:
                p.add(f"load {k} (body {body!r}): neither force nor torque given")
        loads = Loads(
            bodies=device_int(
                [ctx.body(f"load {k} field 'body'", ld.body) for k, ld in enumerate(self.loads)]
            ),
            points=device(
                _rows(
                    [vec(ld.point, f"load {k} field 'point'") for k, ld in enumerate(self.loads)],
                    dim,
                )
            ),
            forces=device(
                _rows(
                    [vec(ld.force, f"load {k} field 'force'") for k, ld in enumerate(self.loads)],
                    dim,
                )
            ),
            torques=device(
                _rows(
                    [
                        vec(
                            None if ld.torque is None else np.reshape(ld.torque, -1),
                            f"load {k} field 'torque'",
                            torque_len,
                        )
                        for k, ld in enumerate(self.loads)
                    ],
                    torque_len,
                ).reshape((-1,) if dim == 2 else (-1, 3))
            ),
        )
        marker_names = tuple(mk.name for mk in self.markers)
        if len(set(marker_names)) != len(marker_names):
            p.add("markers: duplicate marker names")
        markers = Markers(
            bodies=device_int(
                [ctx.body(f"marker {mk.name!r} field 'body'", mk.body) for mk in self.markers]
            ),
            points=device(
                _rows(
                    [
                        vec(
                            mk.point if mk.point is not None else zeros,
                            f"marker {mk.name!r} field 'point'",
                        )
                        for mk in self.markers
                    ],
                    dim,
                )
            ),
            names=marker_names,
        )
        holonomic_specs_built = [spec for spec, pfaffian, _ in built if not pfaffian]
        ctx.joints = {
            spec.name: (spec, g, j, (member.rows, member.bodies))
            for spec, member, (g, j) in zip(
                holonomic_specs_built, hol, _group_positions(hol), strict=True
            )
        }
        forces, force_index = self._forces(p, ctx, dim)
        p.raise_if_any("mechanism")
        return Model(
            bodies=bodies,
            holonomic=_group(hol) + _group(internal),
            pfaffian=_group(pf),
            gravity=gravity,
            loads=loads,
            markers=markers,
            pairs=pairs,
            n_holonomic=m_all,
            n_pfaffian=h,
            n_internal=n_internal,
            forces=forces,
            force_index=force_index,
            mass_facts=mass_facts(bodies),
        )

    def _forces(self, p: Problems, ctx: _Context, dim: int):
        """The force elements stacked by type, and where each one went."""
        members = []
        for k, spec in enumerate(self.forces):
            if not isinstance(spec, FORCE_SPECS):
                p.add(
                    f"force {k}: unknown force element {type(spec).__name__!r} ({spec!r}); "
                    f"known: {', '.join(c.__name__ for c in FORCE_SPECS)}"
                )
            elif isinstance(spec, Bushing) and dim == 2:
                p.add(
                    f"force {k}: a Bushing is spatial; in a planar mechanism use a SpringDamper "
                    "and a RotationalSpringDamper"
                )
            else:
                member = spec._member(p, ctx, k, dim)
                if member is not None:  # None: its problems were reported
                    members.append((k, member))
        keys: dict[tuple, list] = {}
        for k, m in members:
            keys.setdefault(_group_key(m), []).append((k, m))
        groups, index = [], {}
        for g, entries in enumerate(keys.values()):
            groups.append(_stack([m for _, m in entries]))
            for j, (k, _) in enumerate(entries):
                index[k] = (g, j)
        return tuple(groups), tuple(index[k] for k in sorted(index))

    def initial_state(self) -> State:
        """The initial state from the bodies' poses and velocities, at t = 0."""
        p = Problems()
        q, qd = self._initial_vectors(p)
        p.raise_if_any("initial state")
        q, qd = (np.concatenate([np.atleast_1d(np.asarray(x)) for x in v]) for v in (q, qd))
        return State(np.asarray(0.0), device(q), device(qd))

    def _initial_vectors(self, p: Problems) -> tuple[list, list]:
        """Each body's coordinates and velocities (lists of arrays), every invalid
        pose or velocity reported to `p` (by `build` too, so that it validates
        everything)."""
        q, qd = [], []
        for b in self.bodies:
            where = f"body {b.name!r} field"
            if isinstance(b, SpatialBody):
                # NumPy throughout (no XLA program compiled while building).
                r = np.asarray(p.vector(b.position, 3, f"{where} 'position'"))
                R = check_rotation(p, b.rotation, f"{where} 'rotation'")
                pose = natural_from_pose(r, R)
                q.append(pose)
                qd.append(
                    natural_velocity(
                        pose,
                        np.asarray(p.vector(b.velocity, 3, f"{where} 'velocity'")),
                        np.asarray(p.vector(b.angular_velocity, 3, f"{where} 'angular_velocity'")),
                    )
                )
                continue
            q.append(p.vector(b.position, 2, f"{where} 'position'"))
            q.append(p.scalar(b.angle, f"{where} 'angle'"))
            qd.append(p.vector(b.velocity, 2, f"{where} 'velocity'"))
            qd.append(p.scalar(b.angular_velocity, f"{where} 'angular_velocity'"))
        return q, qd
