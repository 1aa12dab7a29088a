"""What the user writes for force elements: frozen dataclasses by body names
([`SpringDamper`][redundax.forces.SpringDamper],
[`RotationalSpringDamper`][redundax.forces.RotationalSpringDamper],
[`Bushing`][redundax.forces.Bushing],
[`TimeDependentLoad`][redundax.forces.TimeDependentLoad],
[`CustomForce`][redundax.forces.CustomForce]), validated by
[`redundax.Mechanism.build`][] (every problem in one error, naming the element by
its index: "force 2 field 'stiffness'") and turned into the members of
`_forces.py`.

A spec's `_member(p, ctx, k, dim)` takes the problem collector and the build
context of `_spec.py` (body indices, initial poses), as the spatial joint specs do.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from ._forces import (
    FRICTION_KINDS,
    BushingElement,
    CustomForceElement,
    JointFrictionElement,
    RotationalSpringDamperElement,
    RotationalSpringDamperElement3D,
    SpringDamperElement,
    TimeDependentLoadElement,
)
from ._math import device
from ._motion import AbstractMotion
from ._pairs import joint_frame
from ._spec_fields import custom_params

Vector = Sequence[float] | Any
Matrix = Sequence[Sequence[float]] | Any


def _scalar(p, value, where: str):
    """A finite number, as a float64 array (not weakly typed: a parameter changed with
    `eqx.tree_at` to a float64 array then needs no new compilation)."""
    return device(np.float64(p.scalar(value, where)))


def _non_negative(p, value, where: str):
    x = _scalar(p, value, where)
    if np.isfinite(float(x)) and float(x) < 0.0:
        p.add(f"{where}: must be zero or positive, got {float(x)}")
    return x


def _non_negative_vector(p, value, length: int, where: str):
    v = p.vector(value, length, where)
    if np.all(np.isfinite(np.asarray(v))) and np.any(np.asarray(v) < 0.0):
        p.add(f"{where}: every component must be zero or positive, got {np.asarray(v).tolist()}")
    return v


def _nothing_to_do(p, where: str, values) -> None:
    if all(float(np.max(np.abs(np.asarray(v)))) == 0.0 for v in values):
        p.add(f"{where}: stiffness, damping and preload are all zero (the element does nothing)")


@dataclasses.dataclass(frozen=True)
class SpringDamper:
    """Point-to-point spring-damper between the point `point_i` of `body_i` and
    `point_j` of `body_j` (body frames [m]; default the centres of mass), planar or
    spatial; either body may be "ground".

    The tension T = k (l − l₀) + c l̇ + T₀ [N] acts along the line of the points
    and pulls them together when positive (l: their distance). The stiffness
    (with the preload) stores the energy ½ k (l − l₀)² + T₀ l, part of
    [`redundax.equations.potential_energy`][]; the damping dissipates.

    **Arguments:**

    - `body_i`, `body_j`: the two bodies (not the same one).
    - `stiffness`: k [N/m], ≥ 0.
    - `damping`: c [N s/m], ≥ 0.
    - `free_length`: l₀ [m], ≥ 0; default: the distance at the initial
      configuration (no force there but the preload).
    - `preload`: T₀ [N], the tension at l = l₀ (at rest).
    - `point_i`, `point_j`: the attachment points, body frames [m].

    Points that coincide at the initial configuration are an error unless l₀ = 0
    and T₀ = 0 (then the force −k (P_i − P_j) on body i is linear and defined
    everywhere); where they meet during a motion the force is zero. Stiffness,
    damping and preload may not all be zero.

    !!! example
        ```python
        rx.forces.SpringDamper("slider", "ground", stiffness=100.0, damping=0.5, free_length=0.2)
        ```
    """

    body_i: str
    body_j: str
    stiffness: float = 0.0
    damping: float = 0.0
    free_length: float | None = None
    preload: float = 0.0
    point_i: Vector | None = None
    point_j: Vector | None = None

    kind = "spring-damper"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        bodies = ctx.pair_bodies(self, k)
        zeros = (0.0,) * dim
        s_i = p.vector(zeros if self.point_i is None else self.point_i, dim, f"{where} 'point_i'")
        s_j = p.vector(zeros if self.point_j is None else self.point_j, dim, f"{where} 'point_j'")
        stiffness = _non_negative(p, self.stiffness, f"{where} 'stiffness'")
        damping = _non_negative(p, self.damping, f"{where} 'damping'")
        preload = _scalar(p, self.preload, f"{where} 'preload'")
        _nothing_to_do(p, f"force {k}", (stiffness, damping, preload))
        distance = float(
            np.linalg.norm(
                np.asarray(ctx.initial_point(self.body_i, s_i))
                - np.asarray(ctx.initial_point(self.body_j, s_j))
            )
        )
        if self.free_length is None:
            free_length = device(distance)
        else:
            free_length = _non_negative(p, self.free_length, f"{where} 'free_length'")
        if distance == 0.0 and (float(free_length) != 0.0 or float(preload) != 0.0):
            p.add(
                f"force {k}: the points coincide at the initial configuration, where the line "
                "of a spring with a free length or a preload has no direction; move a point, "
                "or give free_length = 0 and preload = 0"
            )
        return SpringDamperElement(
            bodies=bodies,
            s_i=s_i,
            s_j=s_j,
            stiffness=stiffness,
            damping=damping,
            free_length=free_length,
            preload=preload,
        )

    def conservative(self) -> bool:
        """Whether the element's force is −∂V/∂q of its stored energy (no damping)."""
        return not _positive(self.damping)


@dataclasses.dataclass(frozen=True)
class RotationalSpringDamper:
    """Rotational (torsion) spring-damper between `body_i` and `body_j` (either may
    be "ground"), e.g. in a revolute joint between them.

    θ is the rotation of body i relative to body j since the initial configuration
    [rad]: in the plane φ_i − φ_j minus its initial value (any number of turns); in
    space about `axis` (global components at the initial configuration, required),
    in (−π, π] (pair it with a joint that keeps the axis, a `Revolute3D`). The
    torque on body i is −[k (θ − θ₀) + c θ̇ + τ₀] (about `axis` in space), on body j
    its opposite; the stored energy ½ k (θ − θ₀)² + τ₀ θ is part of
    [`redundax.equations.potential_energy`][].

    **Arguments:**

    - `body_i`, `body_j`: the two bodies (not the same one).
    - `stiffness`: k [N m/rad], ≥ 0; `damping`: c [N m s/rad], ≥ 0.
    - `free_angle`: θ₀ [rad], default 0 (free at the initial configuration).
    - `preload`: τ₀ [N m], the torque at θ = θ₀.
    - `axis`: spatial mechanisms only.
    """

    body_i: str
    body_j: str
    stiffness: float = 0.0
    damping: float = 0.0
    free_angle: float = 0.0
    preload: float = 0.0
    axis: Vector | None = None

    kind = "rotational-spring-damper"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        bodies = ctx.pair_bodies(self, k)
        law = dict(
            stiffness=_non_negative(p, self.stiffness, f"{where} 'stiffness'"),
            damping=_non_negative(p, self.damping, f"{where} 'damping'"),
            free_angle=_scalar(p, self.free_angle, f"{where} 'free_angle'"),
            preload=_scalar(p, self.preload, f"{where} 'preload'"),
        )
        _nothing_to_do(p, f"force {k}", (law["stiffness"], law["damping"], law["preload"]))
        if dim == 2:
            if self.axis is not None:
                p.add(f"{where} 'axis': spatial mechanisms only (the plane's normal is the axis)")
            reference = ctx.initial_angle(self.body_i) - ctx.initial_angle(self.body_j)
            return RotationalSpringDamperElement(bodies=bodies, reference=device(reference), **law)
        G = _axis_frame(p, self.axis, f"{where} 'axis'")
        (_, R_i), (_, R_j) = ctx.pose(self.body_i), ctx.pose(self.body_j)
        return RotationalSpringDamperElement3D(
            bodies=bodies, frame_i=device(G @ R_i), frame_j=device(G @ R_j), **law
        )

    def conservative(self) -> bool:
        """Whether the element's force is −∂V/∂q of its stored energy (no damping)."""
        return not _positive(self.damping)


IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@dataclasses.dataclass(frozen=True)
class Bushing:
    """A 6-D linear bushing (spatial mechanisms) between `body_i` and `body_j`
    (either may be "ground"): a frame at `point` with axes `axes` is fixed on each
    body at the initial configuration, where the bushing is undeformed.

    The deflection, in the axes of the body-i frame, is the translation d [m] of
    the body-j frame's origin and the small-rotation measure ψ = vee(½ (R − Rᵀ))
    of the rotation R of the body-j frame relative to the body-i frame (ψ = sin θ n
    for a rotation θ about n: the rotation vector to first order). The load on body
    j is −(K d + C ḋ) and the moment −(K_r ψ + C_r ψ̇) (in those axes; its opposite
    on body i), with diagonal K, C, K_r, C_r; the energy ½ dᵀ K d + ½ ψᵀ K_r ψ is
    part of [`redundax.equations.potential_energy`][].

    **Arguments:**

    - `body_i`, `body_j`: the two bodies (not the same one).
    - `point`: the frames' origin, global [m] at the initial configuration.
    - `stiffness`: K, 3 numbers ≥ 0 [N/m] along the axes.
    - `rotational_stiffness`: K_r, 3 numbers ≥ 0 [N m/rad] about the axes.
    - `damping`, `rotational_damping`: C [N s/m], C_r [N m s/rad], 3 numbers ≥ 0
      each (default zero).
    - `axes`: rotation matrix whose columns are the bushing axes in global
      components at the initial configuration (default: the global axes).
    """

    body_i: str
    body_j: str
    point: Vector
    stiffness: Vector = (0.0, 0.0, 0.0)
    rotational_stiffness: Vector = (0.0, 0.0, 0.0)
    damping: Vector = (0.0, 0.0, 0.0)
    rotational_damping: Vector = (0.0, 0.0, 0.0)
    axes: Matrix = IDENTITY

    kind = "bushing"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        bodies = ctx.pair_bodies(self, k)
        law = {
            key: _non_negative_vector(p, getattr(self, key), 3, f"{where} {key!r}")
            for key in ("stiffness", "rotational_stiffness", "damping", "rotational_damping")
        }
        _nothing_to_do(p, f"force {k}", law.values())
        x = np.asarray(p.vector(self.point, 3, f"{where} 'point'"))
        A = ctx.rotation(self.axes, f"{where} 'axes'")
        (r_i, R_i), (r_j, R_j) = ctx.pose(self.body_i), ctx.pose(self.body_j)
        return BushingElement(
            bodies=bodies,
            s_i=device(R_i.T @ (x - r_i)),
            s_j=device(R_j.T @ (x - r_j)),
            frame_i=device(A.T @ R_i),
            frame_j=device(A.T @ R_j),
            **law,
        )

    def conservative(self) -> bool:
        """Whether the element's force is −∂V/∂q of its stored energy (no damping)."""
        return not (_positive(self.damping) or _positive(self.rotational_damping))


@dataclasses.dataclass(frozen=True)
class TimeDependentLoad:
    """A load that varies in time: the global `force` [N] at the body point `point`
    (body frame [m], default the centre of mass) and the `torque` [N m] (a number
    in the plane, a global 3-vector in space), both multiplied by the profile s(t)
    = `profile(t)`, any [`redundax.motions.AbstractMotion`][] (`Constant`, `Polynomial`,
    `SmoothSteps`, `Function`). Omitted force and torque are zero. A constant load
    is a [`redundax.Load`][].

    !!! example
        ```python
        rx.forces.TimeDependentLoad("crank", torque=0.5, profile=rx.motions.Polynomial([0.0, 2.0]))
        # τ = t N m
        ```
    """

    body: str
    profile: AbstractMotion
    force: Vector | None = None
    point: Vector | None = None
    torque: Vector | float | None = None

    kind = "time-dependent-load"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        w = 1 if dim == 2 else 3
        zeros = (0.0,) * dim
        if not isinstance(self.profile, AbstractMotion):
            p.add(
                f"{where} 'profile': expected a redundax motion (Constant, Polynomial, "
                f"SmoothSteps, Function), got {self.profile!r}"
            )
        return TimeDependentLoadElement(
            bodies=jnp.asarray([ctx.body(f"{where} 'body'", self.body)], dtype=jnp.int32),
            point=p.vector(zeros if self.point is None else self.point, dim, f"{where} 'point'"),
            force=p.vector(zeros if self.force is None else self.force, dim, f"{where} 'force'"),
            torque=p.vector(
                (0.0,) * w if self.torque is None else np.reshape(self.torque, -1),
                w,
                f"{where} 'torque'",
            ),
            profile=self.profile if isinstance(self.profile, AbstractMotion) else _UNIT,
        )

    def conservative(self) -> bool:
        """False: its work is not in [`redundax.equations.potential_energy`][]."""
        return False


@dataclasses.dataclass(frozen=True)
class CustomForce:
    """Any other force law, in Python: `force(params, qb, qdb, t)` returns, for each
    body of `bodies`, the global force [N] at its centre of mass and the torque
    [N m] on it, shape `(len(bodies), 3)` in the plane ([Fx, Fy, Mz]) and
    `(len(bodies), 6)` in space ([Fx, Fy, Fz, Mx, My, Mz], global components).

    `qb`, `qdb` stack the coordinates and velocities of `bodies`: [x, y, φ] per
    planar body; [r, u, v, w] per spatial body (r the centre of mass, u, v, w the
    body axes in global components). "ground" may be listed (its force is
    ignored). Write it with `jax.numpy` (it is traced, differentiated and
    vmapped); `params` is any pytree of numbers (differentiable). Its generalised
    forces come from autodiff of the bodies' velocities, like every element's.

    !!! example
        ```python
        def drag(params, qb, qdb, t):  # linear drag on one planar body
            return -params["c"] * qdb  # [Fx, Fy, Mz] = -c [vx, vy, ω]
        rx.forces.CustomForce(("body",), drag, params={"c": 0.1})
        ```
    """

    bodies: tuple[str, ...]
    force: Callable[..., Any]
    params: Any = None

    kind = "custom-force"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        names = (self.bodies,) if isinstance(self.bodies, str) else tuple(self.bodies)
        if not names:
            p.add(f"{where} 'bodies': list at least one body")
        if not callable(self.force):
            p.add(f"{where} 'force': expected a function (params, qb, qdb, t), got {self.force!r}")
        return CustomForceElement(
            bodies=jnp.asarray([ctx.body(f"{where} 'bodies'", b) for b in names], dtype=jnp.int32),
            fn=self.force,
            params=custom_params(self.params),
        )

    def conservative(self) -> bool:
        """False: its work is not in [`redundax.equations.potential_energy`][]."""
        return False


class _Unit(AbstractMotion):
    """s(t) = 1: the stand-in profile of an invalid spec (never simulated)."""

    def __call__(self, t):
        del t
        return jnp.ones(())

    def breakpoints(self):
        return jnp.zeros((0,))


_UNIT = _Unit()

FRICTION_INPUTS: dict[str, dict[str, tuple[int, ...]]] = {
    "revolute": {"radial force": (0, 1)},
    "translational": {"normal force": (0,), "moment": (1,)},
    "revolute-3d": {"axial force": (0,), "radial force": (1, 2), "bending moment": (3, 4)},
    "prismatic-3d": {"normal force": (0, 1), "torque": (2,), "bending moment": (3, 4)},
}
"""Per joint kind, the load inputs a [`JointFriction`][redundax.forces.JointFriction]
may read, each the positions (within the joint's rows) of the reaction components
whose magnitude ‖·‖ it is: the planar pin's radial force ‖(force x, force y)‖; the
spatial revolute's axial force, radial force ‖(transverse e1, e2)‖ and bending moment
‖(bending e1, e2)‖; the translational joint's normal force and moment; the spatial
prismatic's normal force ‖(transverse e1, e2)‖, torque about its axis and bending
moment ‖(moment e1, e2)‖."""


@dataclasses.dataclass(frozen=True)
class JointFriction:
    """Friction in the joint of a pair, from the reactions that joint carries.

    A regularised Coulomb law: the friction torque (revolute joints) or force
    (translational and prismatic joints) opposes the joint's slip rate v,

        f = μ L tanh(v / v_t),        L = L₀ + Σ_k a_k |c_k|,

    with the load L built from named reaction components c_k of the joint itself
    (the `inputs`, each with its lever arm a_k) and a preload L₀. With no inputs,
    the friction is load-independent (μ L₀). |v| < v_t is the stiction band, where
    the regularised law acts as a stiff viscous damper (μ L / v_t).

    The inputs, per joint (`FRICTION_INPUTS`), and the units of their arms:

    | joint | input | arm |
    |---|---|---|
    | revolute (planar) | `"radial force"` ‖(force x, force y)‖ | m (pin radius) |
    | revolute-3d | `"radial force"`, `"axial force"` | m (pin radius, friction arm) |
    | revolute-3d | `"bending moment"` | 1 (pin radius / bending arm) |
    | translational (planar) | `"normal force"` | 1 |
    | translational (planar) | `"moment"` | 1/m (1 / bending arm) |
    | prismatic-3d | `"normal force"` | 1 |
    | prismatic-3d | `"torque"`, `"bending moment"` | 1/m |

    A rigid model of a redundant mechanism may not determine a component: then
    friction that reads it is undefined, and a simulation refuses it before it
    starts, naming the joint and the component (the structure's verdicts), unless
    the method is [`redundax.methods.Compliant`][], whose joint stiffnesses
    determine every component.

    **Arguments:**

    - `pair`: the name of a revolute, translational, revolute-3d or prismatic-3d pair.
    - `coefficient`: μ, ≥ 0.
    - `inputs`: `{input: arm}`, arms ≥ 0 (default: none, load-independent friction).
    - `preload`: L₀ [N m for revolute joints, N otherwise], ≥ 0.
    - `transition_velocity`: v_t [rad/s or m/s], > 0 (default 1e-3).

    !!! example
        ```python
        rx.forces.JointFriction("A", coefficient=0.1, inputs={"radial force": 0.01})
        ```
    """

    pair: str
    coefficient: float
    inputs: Any = dataclasses.field(default_factory=dict)
    preload: float = 0.0
    transition_velocity: float = 1e-3

    kind = "joint-friction"

    def _member(self, p, ctx, k: int, dim: int):
        where = f"force {k} field"
        joint = ctx.joints.get(self.pair) if isinstance(self.pair, str) else None
        if joint is None:
            known = ", ".join(repr(n) for n in ctx.joints) or "none"
            p.add(f"{where} 'pair': no pair named {self.pair!r} (pairs: {known})")
            return None
        spec, group, member, rows = joint
        if spec.kind not in FRICTION_KINDS:
            p.add(
                f"force {k}: joint friction acts in a joint with one free motion (revolute, "
                f"translational, revolute-3d, prismatic-3d); pair {self.pair!r} is a "
                f"{spec.kind}: give its friction as a force element of your own "
                "(CustomForce), or model the joint with those types"
            )
            return None
        coefficient = _non_negative(p, self.coefficient, f"{where} 'coefficient'")
        preload = _non_negative(p, self.preload, f"{where} 'preload'")
        velocity = _scalar(p, self.transition_velocity, f"{where} 'transition_velocity'")
        if np.isfinite(float(velocity)) and not float(velocity) > 0.0:
            p.add(f"{where} 'transition_velocity': must be positive, got {float(velocity)}")
        known = FRICTION_INPUTS[spec.kind]
        named: dict[str, float] = {}
        if not isinstance(self.inputs, dict):
            p.add(
                f"{where} 'inputs': expected {{component: lever arm}}, e.g. "
                f"{{{next(iter(known))!r}: 0.01}}, got {self.inputs!r}"
            )
        else:
            for name, arm in self.inputs.items():
                if name not in known:
                    p.add(
                        f"{where} 'inputs': {name!r} is not a load input of the "
                        f"{spec.kind} joint {self.pair!r}; its inputs: "
                        f"{', '.join(map(repr, known))}"
                    )
                    continue
                named[name] = float(_non_negative(p, arm, f"{where} 'inputs' entry {name!r}"))
        if float(coefficient) == 0.0 or (
            float(preload) == 0.0 and not any(a > 0.0 for a in named.values())
        ):
            p.add(
                f"force {k}: the friction is zero (coefficient 0, or neither inputs nor a "
                "preload); give a coefficient and a load"
            )
        pair_rows = np.asarray(rows[0]).tolist()
        names = tuple(name for name in known if name in named)
        return JointFrictionElement(
            bodies=device(np.asarray(rows[1], dtype=np.int32)),
            arms=device(np.asarray([named[n] for n in names], dtype=float)),
            coefficient=coefficient,
            transition_velocity=velocity,
            preload=preload,
            pair=self.pair,
            kind=spec.kind,
            group=int(group),
            member=int(member),
            names=names,
            inputs=tuple(tuple(int(pair_rows[i]) for i in known[n]) for n in names),
        )

    def conservative(self) -> bool:
        """Friction dissipates."""
        return False


FORCE_SPECS = (
    SpringDamper,
    RotationalSpringDamper,
    Bushing,
    TimeDependentLoad,
    CustomForce,
    JointFriction,
)
"""The force element specs; [`Bushing`][redundax.forces.Bushing] is spatial only."""


def _positive(value) -> bool:
    try:
        return bool(np.any(np.asarray(value, dtype=float) > 0.0))
    except (TypeError, ValueError):
        return False


def _axis_frame(p, axis, where: str):
    """A right-handed frame (rows e₀, e₁, e₂, global) with e₀ along `axis`."""
    if axis is None:
        p.add(f"{where}: required in a spatial mechanism (the axis of rotation)")
        return np.eye(3)
    a = np.asarray(p.vector(axis, 3, where))
    if not float(np.linalg.norm(a)) > 0.0:
        p.add(f"{where}: must be a non-zero vector")
        return np.eye(3)
    return joint_frame(a)
