"""Canonical mechanisms shared by tests, experiments and notebooks."""

import math

from ._force_specs import SpringDamper
from ._motion import AbstractMotion, Polynomial, SmoothSteps, shifted
from ._spatial_body import SpatialBody
from ._spec import Body, Load, Marker, Mechanism
from .joints._planar import KnifeEdge, Revolute, RevoluteDriver, Translational, TranslationalDriver
from .joints._spatial import (
    Prismatic3D,
    Revolute3D,
    RevoluteDriver3D,
    Spherical,
    TranslationalDriver3D,
    Universal,
)

__all__ = [
    "mobile_robot",
    "mobile_robot_steering",
    "four_bar",
    "n_four_bar",
    "parallelogram",
    "pendulum",
    "slider_crank",
    "six_bar",
    "andrews",
    "andrews_angles",
    "bricard",
    "spatial_twin",
    "spherical_chain",
    "hexapod",
    "ANDREWS_DATA",
    "ANDREWS_ANGLES",
    "BRICARD_JOINTS",
    "HEXAPOD_POSES",
]


def mobile_robot_steering(amplitude: float = 0.02, offset: float | None = None) -> SmoothSteps:
    """The steering profile d(t) of the mobile robot's manoeuvre.

    The seed (Wojtyra & Frączek 2013, Fig. 2) gives d(t) only as a plot: a
    relative displacement of ±0.02 m in the translational joint H that first turns
    the robot right, then lets it go straight, then turns it left back to a course
    parallel to x₀. This is a C² quintic-smoothstep version of that shape, over 10 s:

    | t [s]    |0–0.5 | 0.5–1.5 | 1.5–2.5 | 2.5–3.5 | 3.5–5.5 | 5.5–6.5 | 6.5–7.5 | 7.5–8.5 | 8.5– |
    |----------|------|---------|---------|---------|---------|---------|---------|---------|------|
    | d − d(0) | 0    | → −A    | −A      | → 0     | 0       | → +A    | +A      | → 0     | 0    |

    with A = `amplitude` [m] and d(0) = −20a = −1 m, the initial value of the
    driving constraint at q⁰. A negative displacement turns the robot right
    (clockwise: the heading decreases to about −0.29 rad, then returns to 0).
    """
    a = 0.05
    d0 = -20.0 * a if offset is None else offset
    A = amplitude
    times = [0.0, 0.5, 1.5, 2.5, 3.5, 5.5, 6.5, 7.5, 8.5]
    values = [0.0, 0.0, -A, -A, 0.0, 0.0, A, A, 0.0]
    return SmoothSteps(times, [d0 + v for v in values])


def mobile_robot(steering: AbstractMotion | None = None, speed: float = 0.1) -> Mechanism:
    """The four-wheel mobile robot with a one-wheel trolley of Wojtyra & Frączek
    (2013, §4; configs/mobile_robot.toml): 7 bodies, n = 21, 8 joints, a driver and 5 knife
    edges, 22 rows of C in the paper's order, p = 2.

    Bodies: `platform` (1), `wheel_left` (2), `wheel_right` (3), `link_left` (4),
    `link_right` (5), `slider` (6), `trolley` (7). Pairs `A`…`G` (revolute),
    `H` (translational), `drive`, `W1`…`W5` (knife edges). Initial velocity: every
    body [speed, 0, 0].
    """
    a = 0.05
    zeta = math.atan(1.0 / 4.0)
    bx, by = a * math.sin(zeta), a * math.cos(zeta)
    cx = 4 * a - bx
    cy = math.sqrt((5 * a) ** 2 - cx**2)
    dx, dy = cx / 2, cy / 2 - by
    v = (speed, 0.0)
    bodies = [
        Body("platform", 10.0, 0.25, position=(20 * a, 0.0), velocity=v),
        Body("wheel_left", 1.0, 0.005, position=(24 * a, 0.0), velocity=v),
        Body("wheel_right", 1.0, 0.005, position=(16 * a, 0.0), velocity=v),
        Body("link_left", 1.0, 0.005, position=(20 * a + dx, dy), velocity=v),
        Body("link_right", 1.0, 0.005, position=(20 * a - dx, dy), velocity=v),
        Body("slider", 1.0, 0.005, position=(20 * a, 0.0), velocity=v),
        Body("trolley", 5.0, 0.05, position=(5 * a, 0.0), velocity=v),
    ]
    steering = mobile_robot_steering() if steering is None else steering
    pairs = [
        Revolute("A", "trolley", "platform", (7 * a, 0.0), (-8 * a, 0.0)),
        Revolute("B", "wheel_left", "platform", (0.0, 0.0), (4 * a, 0.0)),
        Revolute("C", "wheel_right", "platform", (0.0, 0.0), (-4 * a, 0.0)),
        Revolute("D", "link_left", "wheel_left", (cx / 2, -cy / 2), (-bx, -by)),
        Revolute("E", "link_right", "wheel_right", (-cx / 2, -cy / 2), (bx, -by)),
        Revolute("F", "slider", "link_left", (0.0, cy - by), (-cx / 2, cy / 2)),
        Revolute("G", "slider", "link_right", (0.0, cy - by), (cx / 2, cy / 2)),
        Translational("H", "slider", "platform", (0.0, 10 * a), (0.0, -10 * a), normal=(1.0, 0.0)),
        TranslationalDriver(
            "drive",
            "slider",
            "platform",
            steering,
            (0.0, 10 * a),
            (0.0, -10 * a),
            direction=(0.0, 1.0),
        ),
        KnifeEdge("W1", "wheel_left", (0.0, 0.0), (0.0, 1.0)),
        KnifeEdge("W2", "wheel_right", (0.0, 0.0), (0.0, 1.0)),
        KnifeEdge("W3", "platform", (0.0, -4 * a), (0.0, 1.0)),
        KnifeEdge("W4", "platform", (0.0, 4 * a), (0.0, 1.0)),
        KnifeEdge("W5", "trolley", (0.0, 0.0), (0.0, 1.0)),
    ]
    markers = [
        Marker("platform_centre", "platform"),
        Marker("W1", "wheel_left"),
        Marker("W2", "wheel_right"),
        Marker("W3", "platform", (0.0, -4 * a)),
        Marker("W4", "platform", (0.0, 4 * a)),
        Marker("W5", "trolley"),
    ]
    return Mechanism(bodies, pairs, markers=markers)


def four_bar(
    ground: float = 1.0,
    crank: float = 0.4,
    coupler: float = 1.2,
    rocker: float = 0.8,
    crank_angle: float = math.pi / 3,
    gravity: float = 9.81,
) -> Mechanism:
    """A four-bar linkage: ground pivots O = (0, 0) and D = (ground, 0); uniform
    slender links (m = 1 kg/m · length, J = m l²/12) assembled at `crank_angle`."""
    O = (0.0, 0.0)
    A = (crank * math.cos(crank_angle), crank * math.sin(crank_angle))
    D = (ground, 0.0)
    # B: intersection of circles |B − A| = coupler and |B − D| = rocker (upper branch).
    lengths = {"ground": ground, "crank": crank, "coupler": coupler, "rocker": rocker}
    for name, value in lengths.items():
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f"four_bar: {name} must be a positive length [m], got {value!r}")
    ax, ay = A
    dx, dy = D[0] - ax, D[1] - ay
    dist = math.hypot(dx, dy)
    # A closes the loop only where |coupler − rocker| ≤ |D − A| ≤ coupler + rocker.
    if not abs(coupler - rocker) < dist < coupler + rocker:
        raise ValueError(
            f"four_bar: the linkage cannot be assembled at crank_angle = {crank_angle:g} rad: "
            f"the crank pin A is {dist:.6g} m from the rocker pivot D, and a coupler of "
            f"{coupler:g} m with a rocker of {rocker:g} m reaches only from "
            f"{abs(coupler - rocker):.6g} to {coupler + rocker:.6g} m (strictly between: at "
            "either end the pose is singular)"
        )
    along = (coupler**2 - rocker**2 + dist**2) / (2 * dist)
    h = math.sqrt(max(coupler**2 - along**2, 0.0))
    B = (ax + along * dx / dist - h * dy / dist, ay + along * dy / dist + h * dx / dist)
    return Mechanism(
        bodies=[_link("crank", O, A), _link("coupler", A, B), _link("rocker", D, B)],
        pairs=[
            Revolute("O", "crank", "ground", _half(O, A, -1), O),
            Revolute("A", "crank", "coupler", _half(O, A, +1), _half(A, B, -1)),
            Revolute("B", "coupler", "rocker", _half(A, B, +1), _half(D, B, +1)),
            Revolute("D", "rocker", "ground", _half(D, B, -1), D),
        ],
        gravity=(0.0, -gravity),
        markers=[Marker("B", "coupler", _half(A, B, +1))],
    )


def parallelogram(
    n_cranks: int = 3,
    spacing: float = 1.0,
    crank: float = 1.0,
    crank_angle: float = math.pi / 2,
    gravity: float = 9.81,
    angular_velocity: float = 0.0,
) -> Mechanism:
    """A parallelogram linkage with `n_cranks` parallel cranks of length `crank`
    pinned to the ground at x = k · spacing and to one coupler. `n_cranks = 2` is
    the ordinary (p = 0) parallelogram; each extra crank adds one redundant
    constraint. Uniform slender links, 1 kg/m."""
    _count("parallelogram", "n_cranks", n_cranks, 2)
    c, s = math.cos(crank_angle), math.sin(crank_angle)
    length = (n_cranks - 1) * spacing
    w = angular_velocity
    tip_v = (-crank * s * w, crank * c * w)
    bodies = []
    pairs = []
    for k in range(n_cranks):
        base = (k * spacing, 0.0)
        tip = (base[0] + crank * c, crank * s)
        body = _link(f"crank{k + 1}", base, tip)
        bodies.append(
            Body(
                body.name,
                body.mass,
                body.inertia,
                body.position,
                body.angle,
                (tip_v[0] / 2, tip_v[1] / 2),
                w,
            )
        )
        pairs.append(Revolute(f"O{k + 1}", f"crank{k + 1}", "ground", (-crank / 2, 0.0), base))
    cstart = (crank * c, crank * s)
    cend = (cstart[0] + length, cstart[1])
    coupler = _link("coupler", cstart, cend)
    bodies.append(
        Body("coupler", coupler.mass, coupler.inertia, coupler.position, coupler.angle, tip_v, 0.0)
    )
    for k in range(n_cranks):
        pairs.append(
            Revolute(
                f"A{k + 1}",
                f"crank{k + 1}",
                "coupler",
                (crank / 2, 0.0),
                (k * spacing - length / 2, 0.0),
            )
        )
    return Mechanism(bodies, pairs, gravity=(0.0, -gravity))


def _count(function: str, name: str, value, least: int) -> None:
    """Refuse a count (of cranks, loops, rods) that is not an integer ≥ `least`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{function}: {name} must be an integer ≥ {least}, got {value!r}")


def _link(name: str, start, end, density: float = 1.0) -> Body:
    """A uniform slender link from `start` to `end` with its frame at the middle,
    x axis along the link."""
    lx, ly = end[0] - start[0], end[1] - start[1]
    length = math.hypot(lx, ly)
    mass = density * length
    return Body(
        name,
        mass,
        mass * length**2 / 12.0,
        position=((start[0] + end[0]) / 2, (start[1] + end[1]) / 2),
        angle=math.atan2(ly, lx),
    )


def _half(start, end, sign: int) -> tuple[float, float]:
    """Body-frame coordinates of a link's end (sign −1: start, +1: end)."""
    return (sign * math.hypot(end[0] - start[0], end[1] - start[1]) / 2, 0.0)


def pendulum(
    length: float = 1.0,
    mass: float = 1.0,
    inertia: float = 0.0,
    angle: float = 0.0,
    gravity: float = 9.81,
) -> Mechanism:
    """A pendulum pinned to the ground at the origin (IFToMM benchmark A01 with the
    defaults: L = 1 m, m = 1 kg, released at rest from (−1, 0)).

    The body frame is at the bob; `angle` is the angle of the rod from the −x axis
    (0: bob at (−L, 0)), positive counter-clockwise (towards −y first). A point
    mass needs `inertia` > 0 for the model: the default, 1e-12 m² · mass, changes the
    period by a relative 5e-13.
    """
    inertia = inertia if inertia > 0.0 else 1e-12 * mass * length**2
    c, s = math.cos(angle), math.sin(angle)
    bob = (-length * c, -length * s)
    return Mechanism(
        bodies=[Body("bob", mass, inertia, position=bob, angle=angle)],
        pairs=[Revolute("O", "bob", "ground", (length, 0.0), (0.0, 0.0))],
        gravity=(0.0, -gravity),
        markers=[Marker("P1", "bob")],
    )


def slider_crank(
    crank: float = 0.2,
    rod: float = 0.6,
    masses=(1.0, 1.0, 1.0),
    crank_angle: float = 0.3,
    speed: float = 2 * math.pi,
    gravity: float = 9.81,
    driven: bool = True,
) -> Mechanism:
    """A slider-crank: crank O–A pinned to the ground at the origin, connecting rod
    A–B, slider at B on the global x axis. With `driven`, a revolute driver turns
    the crank at the constant `speed` [rad/s] from `crank_angle`. Uniform slender
    links (J = m l²/12); the slider's inertia is m · 1e-4 m².
    """

    mc, mr, ms = masses
    A = (crank * math.cos(crank_angle), crank * math.sin(crank_angle))
    B = (A[0] + math.sqrt(rod**2 - A[1] ** 2), 0.0)
    w = speed if driven else 0.0
    # Initial velocities from the exact kinematics of the crank turning at w:
    # v_B − v_A = ψ̇ Ω (B − A), whose y component gives the rod's ψ̇.
    va = (-w * A[1], w * A[0])
    wr = -w * crank * math.cos(crank_angle) / (B[0] - A[0])
    vb = (_slider_speed(crank, rod, crank_angle, w), 0.0)
    vmid_rod = ((va[0] + vb[0]) / 2, va[1] / 2)
    crank_body = _link("crank", (0.0, 0.0), A, density=mc / crank)
    rod_body = _link("rod", A, B, density=mr / rod)
    bodies = [
        Body(
            "crank",
            mc,
            crank_body.inertia,
            crank_body.position,
            crank_body.angle,
            (va[0] / 2, va[1] / 2),
            w,
        ),
        Body("rod", mr, rod_body.inertia, rod_body.position, rod_body.angle, vmid_rod, wr),
        Body("slider", ms, ms * 1e-4, B, 0.0, vb, 0.0),
    ]
    pairs = [
        Revolute("O", "crank", "ground", (-crank / 2, 0.0), (0.0, 0.0)),
        Revolute("A", "crank", "rod", (crank / 2, 0.0), (-rod / 2, 0.0)),
        Revolute("B", "rod", "slider", (rod / 2, 0.0), (0.0, 0.0)),
        Translational("P", "slider", "ground", normal=(0.0, 1.0)),
    ]
    if driven:
        pairs.append(RevoluteDriver("drive", "crank", "ground", Polynomial([crank_angle, speed])))
    return Mechanism(bodies, pairs, gravity=(0.0, -gravity), markers=[Marker("B", "slider")])


def _slider_speed(r: float, l: float, theta: float, w: float) -> float:
    """dx_B/dt of x_B = r cos θ + sqrt(l² − r² sin² θ)."""
    s, c = math.sin(theta), math.cos(theta)
    return w * (-r * s - r**2 * s * c / math.sqrt(l**2 - (r * s) ** 2))


def n_four_bar(n: int = 1, speed: float = 1.0, gravity: float = 9.81) -> Mechanism:
    """IFToMM benchmark A02: a chain of `n` four-bar parallelograms. Cranks k = 0…n
    of length 1 m are pinned to the ground at (k, 0) and start vertical; couplers
    k = 1…n join the tips of cranks k − 1 and k. Slender links, 1 kg, 1 m. The tip
    B0 of crank 0 starts at (0, 1) with velocity (`speed`, 0). p = 0 at regular
    configurations; the rank of C drops when the cranks lie along the ground line.
    """
    _count("n_four_bar", "n", n, 1)
    w = -speed  # crank angular velocity for a tip moving at +speed in x from vertical
    bodies, pairs = [], []
    for k in range(n + 1):
        b = _link(f"crank{k}", (float(k), 0.0), (float(k), 1.0))
        bodies.append(Body(b.name, b.mass, b.inertia, b.position, b.angle, (speed / 2, 0.0), w))
        pairs.append(Revolute(f"O{k}", f"crank{k}", "ground", (-0.5, 0.0), (float(k), 0.0)))
    for k in range(1, n + 1):
        b = _link(f"coupler{k}", (k - 1.0, 1.0), (float(k), 1.0))
        bodies.append(Body(b.name, b.mass, b.inertia, b.position, b.angle, (speed, 0.0), 0.0))
        pairs.append(Revolute(f"A{k}", f"crank{k - 1}", f"coupler{k}", (0.5, 0.0), (-0.5, 0.0)))
        pairs.append(Revolute(f"B{k}", f"crank{k}", f"coupler{k}", (0.5, 0.0), (0.5, 0.0)))
    return Mechanism(
        bodies, pairs, gravity=(0.0, -gravity), markers=[Marker("B0", "crank0", (0.5, 0.0))]
    )


BRICARD_JOINTS = (
    ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ((1.0, -1.0, 0.0), (1.0, 0.0, 0.0)),
    ((1.0, -1.0, 1.0), (0.0, 1.0, 0.0)),
    ((0.0, -1.0, 1.0), (0.0, 0.0, 1.0)),
    ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0)),
)
"""Joint points [m] and axes of Bricard's mechanism in the square configuration
(IFToMM benchmark A04; configs/bricard.toml)."""


def bricard(
    length: float = 1.0, mass: float = 1.0, side: float = 0.1, g: float = 9.81
) -> Mechanism:
    """Bricard's mechanism, IFToMM multibody benchmark A04 (configs/bricard.toml).

    Five rods `rod1`…`rod5` (length `length` [m], mass `mass` [kg], square
    cross-section `side` × `side` [m], solid-box inertia), each from joint point
    k − 1 to joint point k, and six spatial revolute joints `J0`…`J5` (J0: ground –
    rod 1, Jk: rod k – rod k + 1, J5: rod 5 – ground) at the points and about the
    axes of [`BRICARD_JOINTS`][redundax.models.BRICARD_JOINTS] scaled by `length`. Gravity `g` along
    −y, released at rest from the square configuration. Marker `P3`: the far end of rod 2,
    initially (1, −1, 0) `length`. Grübler–Kutzbach: 6·5 − 5·6 = 0; the real
    mobility is 1 and the degree of redundancy 1.
    """

    points = [tuple(length * c for c in p) for p, _ in BRICARD_JOINTS]
    transverse = mass * (length**2 + side**2) / 12.0
    axial = mass * 2.0 * side**2 / 12.0
    bodies = []
    for k in range(5):
        start, end = points[k], points[k + 1]
        along = max(range(3), key=lambda i: abs(end[i] - start[i]))
        inertia = [transverse] * 3
        inertia[along] = axial
        centre = tuple(0.5 * (a + b) for a, b in zip(start, end, strict=True))
        bodies.append(SpatialBody(f"rod{k + 1}", mass, inertia, position=centre))
    links = ["ground"] + [b.name for b in bodies] + ["ground"]
    pairs = [
        Revolute3D(f"J{k}", links[k + 1], links[k], point=points[k], axis=axis)
        for k, (_, axis) in enumerate(BRICARD_JOINTS)
    ]
    end_of_rod2 = tuple(p - c for p, c in zip(points[2], bodies[1].position, strict=True))
    return Mechanism(
        bodies=bodies,
        pairs=pairs,
        gravity=(0.0, -g, 0.0),
        markers=[Marker("P3", "rod2", end_of_rod2)],
    )


def _rotz(a: float) -> tuple[tuple[float, ...], ...]:
    c, s = math.cos(a), math.sin(a)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def _in_plane(a: float, v) -> tuple[float, float]:
    c, s = math.cos(a), math.sin(a)
    return (c * v[0] - s * v[1], s * v[0] + c * v[1])


def spatial_twin(mech: Mechanism) -> Mechanism:
    """The spatial model, in natural coordinates, of the planar mechanism `mech`:
    what a planar mechanism becomes when it is modelled with 3-D joints (each
    planar loop then adds three redundant constraints: the out-of-plane ones).

    Bodies stay in the plane z = 0 (body z along global z; the planar moment of
    inertia J about it, out-of-plane moments 0.5 J and 0.7 J); revolutes become
    `Revolute3D` about z, translationals `Prismatic3D` along their in-plane axis,
    revolute drivers `RevoluteDriver3D` about z (its angle counted from the
    initial pose: the planar offset φ_i − φ_j at the initial pose is subtracted
    from any motion, of the same type where it can hold the shift, a `Constant`,
    `Polynomial` or `SmoothSteps` with its knots, otherwise a `Shifted` motion with
    the breakpoints of the planar one). Gravity and markers are kept; loads are not
    carried over.

    **Raises:** `ValueError` naming a pair that has no spatial twin here (knife
    edges, welds, translational drivers).
    """

    pose = {b.name: (tuple(map(float, b.position)), float(b.angle)) for b in mech.bodies}
    pose["ground"] = ((0.0, 0.0), 0.0)
    bodies = [
        SpatialBody(
            b.name,
            b.mass,
            (0.5 * b.inertia, 0.7 * b.inertia, b.inertia),
            position=(*b.position, 0.0),
            rotation=_rotz(b.angle),
            velocity=(*b.velocity, 0.0),
            angular_velocity=(0.0, 0.0, b.angular_velocity),
        )
        for b in mech.bodies
    ]
    pairs = []
    for p in mech.pairs:
        (ri, ai), (_, aj) = pose[p.body_i], pose[p.body_j]
        if isinstance(p, RevoluteDriver):
            motion = shifted(p.motion, -(ai - aj))
            point, axis = (*ri, 0.0), (0.0, 0.0, 1.0)
            pairs.append(RevoluteDriver3D(p.name, p.body_i, p.body_j, motion, point, axis))
            continue
        if not isinstance(p, Revolute | Translational) or isinstance(p, TranslationalDriver):
            raise ValueError(
                f"spatial_twin: pair {p.name!r} ({type(p).__name__}) has no spatial twin "
                "(revolutes, translationals and revolute drivers do)"
            )
        offset = _in_plane(ai, tuple(map(float, p.point_i)))
        point = (ri[0] + offset[0], ri[1] + offset[1], 0.0)
        if isinstance(p, Revolute):
            pairs.append(Revolute3D(p.name, p.body_i, p.body_j, point=point, axis=(0, 0, 1)))
        else:
            n = _in_plane(aj, tuple(map(float, p.normal)))
            axis = (n[1], -n[0], 0.0)
            pairs.append(Prismatic3D(p.name, p.body_i, p.body_j, point=point, axis=axis))
    markers = [
        Marker(m.name, m.body, None if m.point is None else (*map(float, m.point), 0.0))
        for m in mech.markers
    ]
    return Mechanism(bodies, pairs, gravity=(*mech.gravity, 0.0), markers=markers)


def spherical_chain(n: int = 8, length: float = 1.0, mass: float = 1.0, g: float = 9.81):
    """An open chain of `n` rods (length `length` [m], mass `mass` [kg], inertia
    m l²/12 about every axis) hanging from the ground by spherical joints
    `S0`…`S{n-1}`, released at rest from a pose tilted out of the vertical plane
    (rod k at 0.3 + 0.1 k rad from −y, in a vertical plane turned by 0.7 k rad),
    so that it swings in space. A tree: no loop and no redundancy (the block
    solver has no fill-in); the scaling benchmark's open chain. Marker `tip`: the
    free end of the last rod."""

    _count("spherical_chain", "n", n, 1)
    bodies, pairs = [], []
    top = (0.0, 0.0, 0.0)
    transverse = mass * length**2 / 12.0
    for k in range(n):
        tilt, turn = 0.3 + 0.1 * k, 0.7 * k
        d = (
            math.sin(tilt) * math.cos(turn),
            -math.cos(tilt),
            math.sin(tilt) * math.sin(turn),
        )
        centre = tuple(a + 0.5 * length * b for a, b in zip(top, d, strict=True))
        bodies.append(SpatialBody(f"rod{k}", mass, (transverse,) * 3, position=centre))
        parent = "ground" if k == 0 else f"rod{k - 1}"
        pairs.append(Spherical(f"S{k}", f"rod{k}", parent, point=top))
        top = tuple(a + length * b for a, b in zip(top, d, strict=True))
    return Mechanism(
        bodies,
        pairs,
        gravity=(0.0, -g, 0.0),
        markers=[Marker("tip", f"rod{n - 1}", tuple(0.5 * length * c for c in d))],
    )


def _rod_inertia(start, end, mass: float, side: float):
    """Inertia tensor (global axes) of a rod of square section `side` from `start` to
    `end`, about its centre of mass."""
    d = [b - a for a, b in zip(start, end, strict=True)]
    length = math.sqrt(sum(c * c for c in d))
    u = [c / length for c in d]
    transverse = mass * (length**2 + side**2) / 12.0
    axial = mass * side**2 / 6.0
    return tuple(
        tuple(transverse * ((i == j) - u[i] * u[j]) + axial * u[i] * u[j] for j in range(3))
        for i in range(3)
    )


def six_bar(
    depth: float = 1.0,
    link: float = 1.0,
    offset: float = 0.2,
    tilt: float = math.atan(8.0),
    g: float = 9.81,
) -> Mechanism:
    """A 6-bar of the class of Kraus et al.'s §7 benchmark (Lester & Schiehlen): six
    bodies, one of them the ground, six revolute joints in one closed loop, mobility
    1 with one dependent constraint (Grübler–Kutzbach: 6·5 − 5·6 = 0). The
    benchmark's own geometry is not published in any source we could find (the
    report, Univ. Stuttgart ZB-64, 1991, is internal), so this is a Sarrus linkage,
    which has exactly those counts: a platform `P` hanging under the ground plate
    from two folding legs, leg A (links `A1`, `A2`, joint axes along x, in the plane
    x = 0) and leg B (`B1`, `B2`, axes along y, in the plane y = 0). The platform
    can only translate along z.

    Links of length `link` [m], 1 kg, 0.05 m square section; platform 2 kg, 0.4 ×
    0.4 × 0.05 m. The legs hang from (0, −offset, 0) and (−offset, 0, 0); the
    platform starts at rest `depth` below the ground plate. Gravity `g` is tilted by
    `tilt` from −z towards −x, so that it also pulls leg B's elbows outwards: the
    platform then oscillates about a stable depth (1.2 m for the default tilt,
    tan(tilt) = 8, between the folded and the straight legs, both singular) instead
    of falling. Marker `P`: the platform's centre.
    """

    h, e = depth, offset
    s = math.sqrt(link**2 - (h / 2) ** 2)
    joints = {
        "J1": (0.0, -e, 0.0),
        "J2": (0.0, -e - s, -h / 2),
        "J3": (0.0, -e, -h),
        "J4": (-e, 0.0, -h),
        "J5": (-e - s, 0.0, -h / 2),
        "J6": (-e, 0.0, 0.0),
    }
    rods = {"A1": ("J1", "J2"), "A2": ("J2", "J3"), "B2": ("J4", "J5"), "B1": ("J5", "J6")}
    bodies = []
    for name, (a, b) in rods.items():
        start, end = joints[a], joints[b]
        centre = tuple(0.5 * (p + q) for p, q in zip(start, end, strict=True))
        bodies.append(SpatialBody(name, 1.0, _rod_inertia(start, end, 1.0, 0.05), position=centre))
    plate = 2.0 / 12.0
    bodies.append(
        SpatialBody(
            "P",
            2.0,
            (plate * (0.16 + 0.0025), plate * (0.16 + 0.0025), plate * 0.32),
            position=(0.0, 0.0, -h),
        )
    )
    x, y = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    pairs = [
        Revolute3D("J1", "A1", "ground", point=joints["J1"], axis=x),
        Revolute3D("J2", "A2", "A1", point=joints["J2"], axis=x),
        Revolute3D("J3", "P", "A2", point=joints["J3"], axis=x),
        Revolute3D("J4", "B2", "P", point=joints["J4"], axis=y),
        Revolute3D("J5", "B1", "B2", point=joints["J5"], axis=y),
        Revolute3D("J6", "ground", "B1", point=joints["J6"], axis=y),
    ]
    return Mechanism(
        bodies=bodies,
        pairs=pairs,
        gravity=(-g * math.sin(tilt), 0.0, -g * math.cos(tilt)),
        markers=[Marker("P", "P")],
    )


ANDREWS_ANGLES = (
    -0.0617138900142764496358948458001,
    0.0,
    0.455279819163070380255912382449,
    0.222668390165885884674473185609,
    0.487364979543842550225598953530,
    -0.222668390165885884674473185609,
    1.23054744454982119249735015568,
)
"""The consistent initial angles (β, Θ, γ, Φ, δ, Ω, ε) [rad] of Andrews' squeezing
mechanism, at rest (Test Set for IVP Solvers, Bari, `andrews.f`, subroutine INITIAL)."""

ANDREWS_DATA = {
    # Fixed points O = (0, 0), A, B and the spring's anchor C [m].
    "xa": -0.06934, "ya": -0.00227, "xb": -0.03635, "yb": 0.03273, "xc": 0.014, "yc": 0.072,
    # Masses [kg] and central moments of inertia [kg m²] of bodies 1…7.
    "m": (0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498),
    "i": (2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5),
    # Lengths [m] (Hairer & Wanner, Fig. VII.7.1).
    "d": 28e-3, "da": 115e-4, "e": 2e-2, "ea": 1421e-5, "rr": 7e-3, "ra": 92e-5,
    "ss": 35e-3, "sa": 1874e-5, "sb": 1043e-5, "sc": 18e-3, "sd": 2e-2,
    "ta": 2308e-5, "tb": 916e-5, "u": 4e-2, "ua": 1228e-5, "ub": 449e-5,
    "zf": 2e-2, "zt": 4e-2, "fa": 1421e-5,
    # Driving torque on body 1 [N m]; spring stiffness [N/m] and free length [m].
    "mom": 0.033, "c0": 4530.0, "l0": 0.07785,
}  # fmt: skip
"""The data of Andrews' squeezer (Hairer & Wanner, *Solving ODEs II*, §VII.7; Bari
Test Set `andrews.f`)."""


def andrews_angles(phi) -> tuple[float, ...]:
    """The seven angles (β, Θ, γ, Φ, δ, Ω, ε) of Hairer & Wanner from the absolute
    angles φ₁…φ₇ of the bodies of [`andrews`][redundax.models.andrews] (indexable, 7 numbers or
    arrays): β = φ₁, Θ = φ₂ − φ₁, γ = φ₃, Φ = φ₄ − φ₅, δ = φ₅, Ω = φ₆ − φ₇, ε = φ₇. Absolute
    angles are integrated continuously, so no multiple of 2π is lost."""
    return (
        phi[0],
        phi[1] - phi[0],
        phi[2],
        phi[3] - phi[4],
        phi[4],
        phi[5] - phi[6],
        phi[6],
    )


def andrews(angles=ANDREWS_ANGLES) -> Mechanism:
    """Andrews' squeezing mechanism (Hairer & Wanner, *Solving ODEs II*, 2nd ed.,
    §VII.7; Schiehlen 1990; Bari Test Set problem `andrews`) in absolute
    coordinates: 7 bodies, 10 revolutes (20 rows, one degree of freedom), the
    spring from point D of body 3 to the fixed point C, and the driving torque
    `mom` on body 1; no gravity. Data: [`ANDREWS_DATA`][redundax.models.ANDREWS_DATA].

    Bodies `body1`…`body7` as numbered by Hairer & Wanner, each with its absolute
    angle φ_k (frame at its centre of mass, x axis as below): φ₁ = β (crank about
    O, frame x from O to P), φ₂ = β + Θ (rod, x from E to P), φ₃ = γ (about B),
    φ₄ = Φ + δ, φ₅ = δ (about A, x from A to G), φ₆ = Ω + ε (x from H to E),
    φ₇ = ε (about A); [`andrews_angles`][redundax.models.andrews_angles] maps them back. Pairs `O`
    (1–ground), `P` (1–2), `E3`, `E4`, `E6` (2–3, 2–4, 2–6: the point E they share), `B`
    (3–ground), `A5`, `A7` (5, 7–ground), `G` (4–5), `H` (6–7).

    With e(a) = (cos a, sin a), n(a) = (−sin a, cos a): P = rr e(β),
    E = P − d e(β + Θ) = B − ss n(γ) = G − e n(Φ + δ) = H + zf e(Ω + ε) with
    G = A + zt e(δ) and H = A − u n(ε) (the six loop-closure equations of the test
    set), D = B + sd e(γ) − sc n(γ). The centres of mass at ra from O, da from P
    towards E, e − ea from G towards E and zf − fa from H towards E are those of
    the test set's mass matrix; those of bodies 3, 5 and 7, at distances
    √(sa² + sb²), √(ta² + tb²) and √(ua² + ub²) from their pivots, are placed at
    B + sb e(γ) − sa n(γ), A + ta e(δ) + tb n(δ) and A + ub e(ε) − ua n(ε) (the
    motion depends on the distances only).

    **Arguments:**

    - `angles`: the initial (β, Θ, γ, Φ, δ, Ω, ε) [rad], at rest (default: the
      test set's consistent values, [`ANDREWS_ANGLES`][redundax.models.ANDREWS_ANGLES]).
    """

    k = ANDREWS_DATA
    beta, theta, gamma, phi, delta, omega, epsilon = (float(a) for a in angles)
    phis = (beta, beta + theta, gamma, phi + delta, delta, omega + epsilon, epsilon)

    def e(a):
        return (math.cos(a), math.sin(a))

    def n(a):
        return (-math.sin(a), math.cos(a))

    def at(origin, *terms):
        """origin + Σ c v for the pairs (c, v) of `terms`."""
        x, y = origin
        for c, v in terms:
            x, y = x + c * v[0], y + c * v[1]
        return (x, y)

    A, B = (k["xa"], k["ya"]), (k["xb"], k["yb"])
    P = at((0.0, 0.0), (k["rr"], e(beta)))
    G = at(A, (k["zt"], e(delta)))
    H = at(A, (-k["u"], n(epsilon)))
    centres = (
        at((0.0, 0.0), (k["ra"], e(phis[0]))),
        at(P, (-k["da"], e(phis[1]))),
        at(B, (k["sb"], e(gamma)), (-k["sa"], n(gamma))),
        at(G, (-(k["e"] - k["ea"]), n(phis[3]))),
        at(A, (k["ta"], e(delta)), (k["tb"], n(delta))),
        at(H, (k["zf"] - k["fa"], e(phis[5]))),
        at(A, (k["ub"], e(epsilon)), (-k["ua"], n(epsilon))),
    )
    bodies = [
        Body(f"body{j + 1}", k["m"][j], k["i"][j], position=centres[j], angle=phis[j])
        for j in range(7)
    ]
    ee, ea = k["e"], k["ea"]
    pairs = [
        Revolute("O", "body1", "ground", (-k["ra"], 0.0), (0.0, 0.0)),
        Revolute("P", "body1", "body2", (k["rr"] - k["ra"], 0.0), (k["da"], 0.0)),
        Revolute("E3", "body2", "body3", (k["da"] - k["d"], 0.0), (-k["sb"], k["sa"] - k["ss"])),
        Revolute("E4", "body2", "body4", (k["da"] - k["d"], 0.0), (0.0, -ea)),
        Revolute("E6", "body2", "body6", (k["da"] - k["d"], 0.0), (k["fa"], 0.0)),
        Revolute("B", "body3", "ground", (-k["sb"], k["sa"]), B),
        Revolute("A5", "body5", "ground", (-k["ta"], -k["tb"]), A),
        Revolute("A7", "body7", "ground", (-k["ub"], k["ua"]), A),
        Revolute("G", "body4", "body5", (0.0, ee - ea), (k["zt"] - k["ta"], -k["tb"])),
        Revolute("H", "body6", "body7", (k["fa"] - k["zf"], 0.0), (-k["ub"], k["ua"] - k["u"])),
    ]
    spring = SpringDamper(
        "body3",
        "ground",
        stiffness=k["c0"],
        free_length=k["l0"],
        point_i=(k["sd"] - k["sb"], k["sa"] - k["sc"]),
        point_j=(k["xc"], k["yc"]),
    )
    return Mechanism(
        bodies,
        pairs,
        loads=[Load("body1", torque=k["mom"])],
        forces=[spring],
        markers=[Marker("E", "body2", (k["da"] - k["d"], 0.0))],
    )


HEXAPOD_POSES = (
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (1.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0),
    (2.0, 0.05, 0.0, 0.05, 0.0, 0.0, 0.0),
    (3.0, 0.0, 0.05, 0.05, 0.08, 0.0, 0.0),
    (4.0, -0.05, 0.0, 0.05, 0.0, 0.08, 0.0),
    (5.0, 0.0, -0.05, 0.05, 0.0, 0.0, 0.15),
    (6.0, 0.0, 0.0, -0.05, 0.0, 0.0, -0.15),
    (7.0, 0.04, 0.04, 0.0, -0.08, 0.08, 0.0),
    (8.0, -0.04, -0.04, 0.0, 0.08, -0.08, 0.1),
    (9.0, 0.0, 0.0, 0.03, 0.0, 0.0, 0.0),
    (10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
)
"""The platform poses the driven [`hexapod`][redundax.models.hexapod] passes through:
rows (t [s], x, y, z [m], roll, pitch, yaw [rad]), the platform's displacement from
its initial pose and its rotation R = R_z(yaw) R_y(pitch) R_x(roll) about its
centre, one knot a second for 10 s, from the initial pose back to it."""


def _hexapod_geometry(base_radius, platform_radius, spread):
    """Per leg k = 0…5: the base point B_k (z = 0) and the platform point P_k in the
    platform frame (its centre at the origin, z = 0). Pair j = 0, 1, 2 of base points
    sits at 120j° ± `spread`; the platform's pairs at 120j° + 60° ± `spread`; leg 2j
    runs from 120j° + spread to the platform point at 120j° + 60° − spread, leg
    2j + 1 from 120j° − spread to 120j° − 60° + spread (the crossed legs of a
    Gough–Stewart platform)."""
    legs = []
    for j in range(3):
        centre = math.radians(120.0 * j)
        for sign in (1.0, -1.0):
            b = centre + sign * spread
            p = centre + sign * (math.radians(60.0) - spread)
            legs.append(
                (
                    (base_radius * math.cos(b), base_radius * math.sin(b), 0.0),
                    (platform_radius * math.cos(p), platform_radius * math.sin(p), 0.0),
                )
            )
    return legs


def _pose_rotation(roll: float, pitch: float, yaw: float):
    """R_z(yaw) R_y(pitch) R_x(roll), as rows."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return (
        (cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
        (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
        (-sp, cp * sr, cp * cr),
    )


def _leg_length(base, local, centre, pose) -> float:
    """|centre + pose offset + R(pose) local − base|: a leg's length (inverse kinematics)."""
    _, x, y, z, roll, pitch, yaw = pose
    R = _pose_rotation(roll, pitch, yaw)
    offset = (x, y, z)
    point = [centre[i] + offset[i] + sum(R[i][k] * local[k] for k in range(3)) for i in range(3)]
    return math.sqrt(sum((point[i] - base[i]) ** 2 for i in range(3)))


def hexapod(
    driven: bool = True,
    base_radius: float = 0.5,
    platform_radius: float = 0.3,
    height: float = 0.85,
    spread: float = math.radians(15.0),
    lower_mass: float = 4.0,
    upper_mass: float = 2.0,
    platform_mass: float = 10.0,
    g: float = 9.81,
) -> Mechanism:
    """A Gough–Stewart platform (6-UPS hexapod) of machine-tool size: the hexapod of
    Kraus, Winckler & Bock (2001, §9; Winckler & Kraus, PKM 2000), "thirteen bodies
    with six closed kinematic loops". Its published geometry is not available to us
    (the PKM 2000 proceedings), so the numbers here are a typical design.

    Six legs k = 1…6, each a lower body `lower{k}` (a cylinder 0.55 m long, 0.08 m
    square section, `lower_mass` [kg]) on a universal joint `U{k}` at the base
    (ground) and an upper body `upper{k}` (a rod 0.55 m long, 0.05 m section,
    `upper_mass` [kg]) sliding in it along the leg's axis (prismatic joint `P{k}`
    at the leg's middle), and a spherical joint `S{k}` between the `platform` (a
    disc of radius `platform_radius` + 0.05 m, 0.04 m thick, `platform_mass` [kg])
    and the upper body, its frame's e₀ along the leg (so `S{k}`'s "force e0" is the
    leg's axial force). Rod inertias of square sections (side s, length l) about
    their centres of mass, m (l² + s²)/12 across and m s²/6 along the leg, body axes
    global at the initial pose. The base points lie on a circle of radius
    `base_radius` [m] at 120j° ± `spread` [rad], the platform's on a circle of
    radius `platform_radius` at 120j° + 60° ± `spread`, leg 2j + 1 from 120j° +
    `spread` to 120j° + 60° − `spread`, leg 2j + 2 its mirror image; the platform
    `height` [m] above the base (0.896 m legs by default). The universal joint's
    ground pin is horizontal and perpendicular to the leg, its leg pin perpendicular
    to both. Gravity `g` along −z. Marker `centre`: the platform's centre.

    Bodies: 13 moving (12 legs and the platform); n = 13 · 12 = 156 natural
    coordinates. Pairs, in row order: `U1`, `P1`, `S1`, …, `U6`, `P6`, `S6`
    (4 + 5 + 3 rows each, 72), then with `driven` the leg drivers `D1`…`D6`
    (translational drivers of `upper{k}` along `lower{k}`'s axis, one row each), then
    the 78 rigid-body rows. Loops: the graph of the 14 links and 18 joints has
    18 − 14 + 1 = 5 independent loops (the seed's "six loops" counts the legs
    between base and platform). Grübler–Kutzbach: 6 · 13 − 6 · (4 + 5 + 3) = 6.

    - `driven=False`: mobility 6 (the platform's six degrees of freedom), p = 0;
      released at rest, the platform falls under gravity with the legs sliding
      freely.
    - `driven=True` (default): each leg's extension is prescribed, d_k(t) =
      L_k(t) − L_k(0), a C² smooth-step profile (`SmoothSteps`) through the leg
      lengths L_k of the poses of [`HEXAPOD_POSES`][redundax.models.HEXAPOD_POSES]
      (one a second, 10 s, inverse kinematics of the rigid platform): mobility 0,
      p = 0, and the platform follows the poses (exactly at the knots).

    No row is dependent (p = 0 at every regular configuration): every reaction is
    unique. The hexapod is the seed's example of many loops, not of redundancy.

    **Raises:** `ValueError` naming the argument for a radius, height or mass that is
    not positive, a `spread` outside (0, π/3), or legs whose two bodies would not
    overlap (an initial leg length outside (0.55, 1.1) m).
    """

    lower_length, upper_length = 0.55, 0.55
    positive = {
        "base_radius": base_radius,
        "platform_radius": platform_radius,
        "height": height,
        "lower_mass": lower_mass,
        "upper_mass": upper_mass,
        "platform_mass": platform_mass,
    }
    for name, value in positive.items():
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f"hexapod: {name} must be a positive number, got {value!r}")
    if not 0.0 < spread < math.pi / 3:
        # At 0 the two points of a pair coincide, at 60° those of neighbouring pairs.
        raise ValueError(
            f"hexapod: spread must be strictly between 0 and π/3 rad (60°), got {spread!r}"
        )
    legs = _hexapod_geometry(base_radius, platform_radius, spread)
    centre = (0.0, 0.0, height)
    bodies, pairs, drivers = [], [], []
    for k, (base, local) in enumerate(legs, start=1):
        top = tuple(c + p for c, p in zip(centre, local, strict=True))
        length = math.sqrt(sum((t - b) ** 2 for t, b in zip(top, base, strict=True)))
        if not lower_length < length < lower_length + upper_length:
            raise ValueError(
                f"hexapod: leg {k} is {length:.6g} m long; its lower and upper bodies "
                f"({lower_length:g} m each) overlap only for a length strictly between "
                f"{lower_length:g} and {lower_length + upper_length:g} m: change height, "
                "base_radius or platform_radius"
            )
        d = tuple((t - b) / length for t, b in zip(top, base, strict=True))
        lower_end = tuple(b + lower_length * c for b, c in zip(base, d, strict=True))
        upper_start = tuple(t - upper_length * c for t, c in zip(top, d, strict=True))
        middle = tuple(b + 0.5 * length * c for b, c in zip(base, d, strict=True))
        for name, mass, start, end, side in (
            (f"lower{k}", lower_mass, base, lower_end, 0.08),
            (f"upper{k}", upper_mass, upper_start, top, 0.05),
        ):
            inertia = _rod_inertia(start, end, mass, side)
            position = tuple(0.5 * (a + b) for a, b in zip(start, end, strict=True))
            bodies.append(SpatialBody(name, mass, inertia, position=position))
        horizontal = math.hypot(d[0], d[1])
        if horizontal > 1e-9:
            ground_pin = (-d[1] / horizontal, d[0] / horizontal, 0.0)  # ẑ × d, normalised
        else:  # a vertical leg: the base circle's tangent
            r = math.hypot(base[0], base[1])
            ground_pin = (-base[1] / r, base[0] / r, 0.0)
        leg_pin = (  # d × ground pin: perpendicular to the leg and to the ground pin
            d[1] * ground_pin[2] - d[2] * ground_pin[1],
            d[2] * ground_pin[0] - d[0] * ground_pin[2],
            d[0] * ground_pin[1] - d[1] * ground_pin[0],
        )
        pairs += [
            Universal(f"U{k}", f"lower{k}", "ground", point=base, axis=leg_pin, normal=ground_pin),
            Prismatic3D(f"P{k}", f"upper{k}", f"lower{k}", point=middle, axis=d),
            Spherical(f"S{k}", "platform", f"upper{k}", point=top, axis=d),
        ]
        if driven:
            L0 = _leg_length(base, local, centre, HEXAPOD_POSES[0])
            values = [_leg_length(base, local, centre, pose) - L0 for pose in HEXAPOD_POSES]
            motion = SmoothSteps([pose[0] for pose in HEXAPOD_POSES], values)
            drivers.append(
                TranslationalDriver3D(
                    f"D{k}", f"upper{k}", f"lower{k}", motion, point=middle, axis=d
                )
            )
    radius, thickness = platform_radius + 0.05, 0.04
    transverse = platform_mass * (3.0 * radius**2 + thickness**2) / 12.0
    bodies.append(
        SpatialBody(
            "platform",
            platform_mass,
            (transverse, transverse, 0.5 * platform_mass * radius**2),
            position=centre,
        )
    )
    return Mechanism(
        bodies=bodies,
        pairs=pairs + drivers,
        gravity=(0.0, 0.0, -g),
        markers=[Marker("centre", "platform")],
    )
