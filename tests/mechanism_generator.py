"""A seeded generator of random valid mechanisms, built with redundax's public API.

The project's checks grew around the mechanisms it ships; a user's first model of
their own (a flat plate, an exactly symmetric design, a motion driven past the end
of its travel) broke them. This module generates such models by the thousand, in
families whose every instance has the *same structure* (the same bodies and pairs
with different numbers), so that the programs jitted for one instance serve all of
them (`tests/test_generated.py`, `experiments/generated_mechanisms.py`).

Every generated mechanism is a [`Generated`][]: the `rx.Mechanism`, its family, its
seed, a `why` line saying how it was drawn (for debugging a failure), the degree of
redundancy and mobility the family's theory expects, and, for driven mechanisms,
whether the drive stays inside the workspace.

Families (`FAMILIES`; `generate(family, seed)`):

- `four_bar`: planar four-bars of random link lengths, Grashof and not, assembled
  at a random crank angle on either branch (p = 0, 1 dof).
- `parallelogram3`, `parallelogram4`: 3 or 4 equal parallel cranks between the
  ground and one coupler; ground pivots on a line (the textbook linkage, sometimes
  at the special configuration with the cranks perpendicular to it) or anywhere in
  the plane (p = n_cranks − 2, 1 dof).
- `rrr3`: planar 3-RRR parallel manipulators, base and platform joints on circles,
  random elbows, three revolute drivers (p = 0, 0 dof); a third of them exactly
  3-fold symmetric with identical legs.
- `branched`: a four-bar carrying a double pendulum on its coupler and a slider on
  its rocker (a tree plus a loop; revolutes and a translational; p = 0, 4 dof).
- `twin_four_bar`, `twin_parallelogram3`, `twin_rrr3`, `twin_branched`: the same,
  rebuilt with 3-D joints by `rx.models.spatial_twin` (each planar loop adds three
  redundant rows), with spatial inertias drawn among generic tensors, laminae
  (I_z = I_x + I_y: a plate in the plane of motion), slender rods (I_x ≈ 0) and
  isotropic ones.
- `bennett`: Bennett's spatial 4R linkage (opposite links of equal length and
  twist, a₁/sin α₁ = a₂/sin α₂): 3 moving bodies, 4 `Revolute3D`, mobile with
  1 dof although Grübler–Kutzbach counts −2 (p = 3).
- `spatial_4r`: four random revolute axes closed into a loop (no Bennett
  condition): rigid, p = 2. Same structure as `bennett`.
- `four_bar_drive`: a four-bar whose crank is driven by `rx.motions.SmoothSteps`:
  `feasible` inside its range of motion (a Grashof crank, transmission angle
  bounded away from 0 and π), or driven 0.4 rad past the end of its travel
  (a rocker input of a non-Grashof linkage): then no configuration satisfies the
  constraints and a simulation must say so. `twin_four_bar_drive`: their
  spatial twins (p = 3).

Spatial inertias: `SpatialBody` refuses a principal moment of exactly 0 (not
positive definite), so a slender rod's axial moment is 1e-6 or 1e-13 of the
transverse one; a lamina's I_z = I_x + I_y is accepted exactly.
"""

import dataclasses
import math

import numpy as np

import redundax as rx

TAU = 2.0 * math.pi


@dataclasses.dataclass(frozen=True)
class Generated:
    """One generated mechanism and what is known about it by construction.

    - `family`, `seed`: how to generate it again (`generate(family, seed)`).
    - `mechanism`: the `rx.Mechanism` (public API only).
    - `why`: how it was drawn, in words (lengths, angles, inertias), for debugging.
    - `p`, `dof`: the degree of redundancy and mobility the family's theory
      expects at the (regular) initial configuration.
    - `symmetric`: an exactly symmetric design (identical links or legs).
    - `special`: the initial configuration is a special one of a family whose
      verdicts can change along the motion (parallelogram cranks perpendicular to
      the pivot line): only the stable verdicts hold nearby.
    - `inertia`: the kind of inertia of each body ("generic", "lamina",
      "rod 1e-6", "rod 1e-13", "isotropic", "planar", "tiny").
    - `drive`: "feasible", "infeasible" or None (not driven over time).
    - `t_drive`: the time at which the drive ends [s] (driven families).
    """

    family: str
    seed: int
    mechanism: rx.Mechanism
    why: str
    p: int
    dof: int
    symmetric: bool = False
    special: bool = False
    inertia: tuple[str, ...] = ()
    drive: str | None = None
    t_drive: float = 0.0

    @property
    def label(self) -> str:
        """`family seed N` for messages."""
        return f"{self.family} seed {self.seed}"


# ------------------------------------------------------------------ small helpers
def _rot(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])


def _angle(v) -> float:
    return math.atan2(float(v[1]), float(v[0]))


def _tup(v) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def _gravity2(rng) -> tuple[float, float]:
    a = rng.uniform(0.0, TAU)
    return (9.81 * math.cos(a), 9.81 * math.sin(a))


class _Planar:
    """Planar bodies placed by the generator: each body's pose, and body-frame
    coordinates of global points at the initial configuration."""

    def __init__(self):
        self.pose: dict[str, tuple[np.ndarray, float]] = {"ground": (np.zeros(2), 0.0)}
        # Body-frame coordinates known exactly (symmetric designs), by (body, point).
        self.exact: dict[tuple, tuple[float, float]] = {}

    def local(self, body: str, point) -> tuple[float, float]:
        known = self.exact.get((body, _tup(point)))
        if known is not None:
            return known
        r, a = self.pose[body]
        return _tup(_rot(a).T @ (np.asarray(point, dtype=float) - r))

    def link(self, rng, name, P, Q, mass, inertia, jitter=True) -> rx.Body:
        """A body for the link from P to Q: its frame at the centre of mass (the
        midpoint, moved off the line by up to 10 % of the length when `jitter`),
        turned from the link's direction by up to 0.5 rad when `jitter`."""
        P, Q = np.asarray(P, dtype=float), np.asarray(Q, dtype=float)
        length = float(np.linalg.norm(Q - P))
        com = 0.5 * (P + Q)
        angle = _angle(Q - P)
        if jitter:
            com = com + 0.1 * length * rng.uniform(-1.0, 1.0, 2)
            angle += rng.uniform(-0.5, 0.5)
        else:
            # The link's ends at exactly (∓l/2, 0): identical links are then
            # identical to the last bit (rounding P − com would differ by link).
            self.exact[(name, _tup(P))] = (-0.5 * length, 0.0)
            self.exact[(name, _tup(Q))] = (0.5 * length, 0.0)
        self.pose[name] = (com, angle)
        return rx.Body(name, mass=mass, inertia=inertia, position=_tup(com), angle=angle)

    def revolute(self, name, bi, bj, X) -> rx.joints.Revolute:
        return rx.joints.Revolute(name, bi, bj, self.local(bi, X), self.local(bj, X))


def _planar_masses(rng, lengths, mode):
    """(mass, inertia) per link: "random" (uniform masses, J = m l²/12 scaled by
    0.5–2), "identical" (1 kg, 1/12 kg m² for every link), "tiny" (random, with a
    point-mass-like J = 1e-9 m l² on some links)."""
    out = []
    for length in lengths:
        if mode == "identical":
            out.append((1.0, 1.0 / 12.0))
            continue
        m = float(rng.uniform(0.3, 3.0))
        J = m * length**2 / 12.0 * float(rng.uniform(0.5, 2.0))
        if mode == "tiny" and rng.uniform() < 0.5:
            J = 1e-9 * m * length**2
        out.append((m, J))
    return out


def _mass_mode(rng, symmetric=False) -> str:
    if symmetric:
        return "identical"
    return str(rng.choice(["random", "random", "identical", "tiny"]))


# -------------------------------------------------------------------- four-bars
def _four_bar_geometry(rng, grashof: bool | None = None):
    """Random four-bar lengths and an assembled pose with a transmission angle at
    least 0.25 rad from 0 and π. Returns (O, D, A, B, lengths, crank angle, branch)."""
    for _ in range(1000):
        g, a, b, c = rng.uniform(0.3, 2.0, 4)
        s = sorted((g, a, b, c))
        is_grashof = s[0] + s[3] < s[1] + s[2]
        if grashof is not None and is_grashof != grashof:
            continue
        beta = rng.uniform(0.0, TAU)
        O = rng.uniform(-0.5, 0.5, 2)
        D = O + g * np.array([math.cos(beta), math.sin(beta)])
        theta = rng.uniform(0.0, TAU)
        A = O + a * np.array([math.cos(theta), math.sin(theta)])
        dist = float(np.linalg.norm(D - A))
        if not abs(b - c) + 0.05 < dist < b + c - 0.05:
            continue
        branch = 1 if rng.uniform() < 0.5 else -1
        along = (b**2 - c**2 + dist**2) / (2 * dist)
        h = math.sqrt(max(b**2 - along**2, 0.0))
        u = (D - A) / dist
        B = A + along * u + branch * h * np.array([-u[1], u[0]])
        # transmission angle between coupler and rocker
        mu = math.acos(np.clip(np.dot(B - A, B - D) / (b * c), -1.0, 1.0))
        if not 0.25 < mu < math.pi - 0.25:
            continue
        return O, D, A, B, (g, a, b, c), theta, branch, is_grashof
    raise RuntimeError("four_bar: no assembled pose found")


def _four_bar_parts(rng, plan: _Planar, mode, geometry):
    O, D, A, B, (g, a, b, c), *_ = geometry
    jitter = mode != "identical"
    (m1, J1), (m2, J2), (m3, J3) = _planar_masses(rng, (a, b, c), mode)
    bodies = [
        plan.link(rng, "crank", O, A, m1, J1, jitter),
        plan.link(rng, "coupler", A, B, m2, J2, jitter),
        plan.link(rng, "rocker", D, B, m3, J3, jitter),
    ]
    pairs = [
        plan.revolute("O", "crank", "ground", O),
        plan.revolute("A", "crank", "coupler", A),
        plan.revolute("B", "coupler", "rocker", B),
        plan.revolute("D", "rocker", "ground", D),
    ]
    return bodies, pairs


def four_bar(seed: int) -> Generated:
    rng = np.random.default_rng([1, seed])
    geometry = _four_bar_geometry(rng, grashof=bool(seed % 2))
    mode = _mass_mode(rng)
    plan = _Planar()
    bodies, pairs = _four_bar_parts(rng, plan, mode, geometry)
    _, _, _, _, (g, a, b, c), theta, branch, is_grashof = geometry
    why = (
        f"four-bar ground {g:.4g} crank {a:.4g} coupler {b:.4g} rocker {c:.4g} m "
        f"({'Grashof' if is_grashof else 'non-Grashof'}), crank at {theta:.4g} rad, "
        f"branch {branch:+d}, masses {mode}"
    )
    mech = rx.Mechanism(bodies, pairs, gravity=_gravity2(rng))
    inertia = ("tiny" if mode == "tiny" else "planar",) * 3
    return Generated("four_bar", seed, mech, why, p=0, dof=1, inertia=inertia)


# --------------------------------------------------------------- parallelograms
def _parallelogram(seed: int, n: int, family: str, family_id: int) -> Generated:
    rng = np.random.default_rng([family_id, seed])
    L = float(rng.uniform(0.4, 1.5))
    collinear = rng.uniform() < 0.5
    special = collinear and rng.uniform() < 0.3
    symmetric = rng.uniform() < 0.25
    if collinear:
        # The textbook linkage: pivots on a line (along x here, as in
        # rx.models.parallelogram), spacing random or equal.
        if symmetric:
            xs = np.arange(n, dtype=float)
        else:
            xs = np.concatenate([[0.0], np.cumsum(rng.uniform(0.4, 1.5, n - 1))])
        pivots = np.stack([xs, np.zeros(n)], 1)
        # Cranks at least 0.3 rad away from the pivot line (there the linkage is
        # singular); special: exactly perpendicular to it.
        theta = math.pi / 2 if special else float(rng.uniform(0.3, math.pi - 0.3))
        theta *= 1 if rng.uniform() < 0.5 else -1
    else:
        pivots = rng.uniform(-1.5, 1.5, (n, 2))
        theta = float(rng.uniform(0.0, TAU))
    c = L * np.array([math.cos(theta), math.sin(theta)])
    pins = pivots + c
    mode = "identical" if symmetric else _mass_mode(rng)
    jitter = not symmetric
    masses = _planar_masses(rng, [L] * n + [1.0], mode)
    plan = _Planar()
    bodies = [
        plan.link(rng, f"crank{k + 1}", pivots[k], pins[k], *masses[k], jitter) for k in range(n)
    ]
    # The coupler: frame at the pins' centroid (moved and turned at random unless
    # symmetric); it carries every pin.
    centroid = pins.mean(0)
    com = centroid + (0.0 if symmetric else 0.2 * rng.uniform(-1.0, 1.0, 2))
    angle = 0.0 if symmetric else float(rng.uniform(-math.pi, math.pi))
    plan.pose["coupler"] = (com, angle)
    if symmetric:
        # pins − centroid = pivots − their mean, exactly.
        for k in range(n):
            plan.exact[("coupler", _tup(pins[k]))] = _tup(pivots[k] - pivots.mean(0))
    bodies.append(rx.Body("coupler", *masses[n], position=_tup(com), angle=angle))
    pairs = [plan.revolute(f"O{k + 1}", f"crank{k + 1}", "ground", pivots[k]) for k in range(n)]
    pairs += [plan.revolute(f"A{k + 1}", f"crank{k + 1}", "coupler", pins[k]) for k in range(n)]
    why = (
        f"{n}-crank parallelogram, cranks {L:.4g} m at {theta:.4g} rad, pivots "
        f"{'on a line' if collinear else 'anywhere'} {np.round(pivots, 3).tolist()}, "
        f"masses {mode}{', special (cranks perpendicular to the line)' if special else ''}"
        f"{(', symmetric' if collinear else ', identical cranks') if symmetric else ''}"
    )
    mech = rx.Mechanism(bodies, pairs, gravity=_gravity2(rng))
    inertia = ("tiny" if mode == "tiny" else "planar",) * (n + 1)
    return Generated(
        family, seed, mech, why, p=n - 2, dof=1, symmetric=symmetric, special=special,
        inertia=inertia,
    )


def parallelogram3(seed: int) -> Generated:
    return _parallelogram(seed, 3, "parallelogram3", 2)


def parallelogram4(seed: int) -> Generated:
    return _parallelogram(seed, 4, "parallelogram4", 3)


# ------------------------------------------------------------------------ 3-RRR
def _rrr3_geometry(rng, symmetric: bool):
    """Base pivots A, elbows B, platform joints C of a 3-RRR away from its
    singularities (elbow angle and platform Jacobian bounded away from zero)."""
    for _ in range(1000):
        Rb = float(rng.uniform(0.8, 1.5))
        Rp = float(rng.uniform(0.2, 0.5))
        psi = float(rng.uniform(-math.pi, math.pi))
        l1 = float(rng.uniform(0.5, 0.9))
        side = 1 if rng.uniform() < 0.5 else -1
        delta = float(rng.uniform(0.4, 1.2))
        k = np.arange(3)
        if symmetric:
            beta = TAU * k / 3
            gamma = TAU * k / 3
            centre = np.zeros(2)
            l1s = np.full(3, l1)
            deltas = np.full(3, side * delta)
        else:
            beta = TAU * k / 3 + rng.uniform(-0.3, 0.3, 3)
            gamma = TAU * k / 3 + rng.uniform(-0.3, 0.3, 3)
            centre = rng.uniform(-0.15, 0.15, 2)
            l1s = rng.uniform(0.5, 0.9, 3)
            deltas = rng.choice([-1, 1], 3) * rng.uniform(0.4, 1.2, 3)
        A = Rb * np.stack([np.cos(beta), np.sin(beta)], 1)
        C = centre + Rp * np.stack([np.cos(psi + gamma), np.sin(psi + gamma)], 1)
        B = np.empty((3, 2))
        ok = True
        for i in range(3):
            eta = _angle(C[i] - A[i]) + deltas[i]
            B[i] = A[i] + l1s[i] * np.array([math.cos(eta), math.sin(eta)])
            u, v = B[i] - A[i], C[i] - B[i]
            if np.linalg.norm(v) < 0.2:
                ok = False
            sin_elbow = abs(u[0] * v[1] - u[1] * v[0]) / (np.linalg.norm(u) * np.linalg.norm(v))
            ok &= bool(sin_elbow > 0.2)
        if not ok:
            continue
        # Platform (type II) singularity: the distal lines' wrenches on the platform.
        rows = []
        for i in range(3):
            u = (C[i] - B[i]) / np.linalg.norm(C[i] - B[i])
            rho = C[i] - centre
            rows.append([u[0], u[1], rho[0] * u[1] - rho[1] * u[0]])
        s = np.linalg.svd(np.asarray(rows), compute_uv=False)
        if s[-1] / s[0] < 0.1:
            continue
        return A, B, C, centre, psi, (Rb, Rp, l1s, deltas)
    raise RuntimeError("rrr3: no regular pose found")


def _rrr3_mechanism(rng, symmetric: bool):
    A, B, C, centre, psi, (Rb, Rp, l1s, deltas) = _rrr3_geometry(rng, symmetric)
    mode = "identical" if symmetric else _mass_mode(rng)
    lengths = [float(np.linalg.norm(B[i] - A[i])) for i in range(3)]
    lengths += [float(np.linalg.norm(C[i] - B[i])) for i in range(3)]
    masses = _planar_masses(rng, lengths + [Rp], mode)
    jitter = not symmetric
    plan = _Planar()
    bodies = [plan.link(rng, f"prox{i + 1}", A[i], B[i], *masses[i], jitter) for i in range(3)]
    bodies += [
        plan.link(rng, f"dist{i + 1}", B[i], C[i], *masses[3 + i], jitter) for i in range(3)
    ]
    plan.pose["platform"] = (centre, psi)
    bodies.append(rx.Body("platform", *masses[6], position=_tup(centre), angle=psi))
    pairs = []
    for i in range(3):
        pairs.append(plan.revolute(f"A{i + 1}", f"prox{i + 1}", "ground", A[i]))
        pairs.append(plan.revolute(f"B{i + 1}", f"dist{i + 1}", f"prox{i + 1}", B[i]))
        pairs.append(plan.revolute(f"C{i + 1}", f"dist{i + 1}", "platform", C[i]))
    for i in range(3):
        angle = plan.pose[f"prox{i + 1}"][1]
        # Polynomial (not Constant): rx.models.spatial_twin reads its coefficients.
        pairs.append(rx.joints.RevoluteDriver(f"drive{i + 1}", f"prox{i + 1}", "ground",
                                       rx.motions.Polynomial([angle])))
    # Gravity in the plane in every case: a symmetric design (what makes the
    # eigenvalues repeat) under a load that is not symmetric, so that reactions
    # and their derivatives are not all zero.
    gravity = _gravity2(rng)
    why = (
        f"3-RRR base radius {Rb:.4g} m, platform radius {Rp:.4g} m at {psi:.4g} rad, "
        f"centre {np.round(centre, 4).tolist()}, proximal {np.round(l1s, 4).tolist()} m, "
        f"elbow offsets {np.round(deltas, 4).tolist()} rad, masses {mode}"
        f"{', exactly 3-fold symmetric' if symmetric else ''}"
    )
    inertia = ("tiny" if mode == "tiny" else "planar",) * 7
    return rx.Mechanism(bodies, pairs, gravity=gravity), why, inertia


def rrr3(seed: int) -> Generated:
    rng = np.random.default_rng([4, seed])
    symmetric = seed % 3 == 0
    mech, why, inertia = _rrr3_mechanism(rng, symmetric)
    return Generated("rrr3", seed, mech, why, p=0, dof=0, symmetric=symmetric, inertia=inertia)


# --------------------------------------------------------------------- branched
def _branched_mechanism(rng):
    geometry = _four_bar_geometry(rng)
    mode = _mass_mode(rng)
    plan = _Planar()
    bodies, pairs = _four_bar_parts(rng, plan, mode, geometry)
    O, D, A, B, *_ = geometry
    # A double pendulum hanging from a point of the coupler.
    P = A + rng.uniform(0.2, 0.8) * (B - A) + 0.2 * rng.uniform(-1.0, 1.0, 2)
    l1, l2 = rng.uniform(0.3, 1.0, 2)
    a1, a2 = rng.uniform(0.0, TAU, 2)
    Q = P + l1 * np.array([math.cos(a1), math.sin(a1)])
    R = Q + l2 * np.array([math.cos(a2), math.sin(a2)])
    (m1, J1), (m2, J2), (m3, J3) = _planar_masses(rng, (l1, l2, 0.3), mode)
    bodies.append(plan.link(rng, "pend1", P, Q, m1, J1))
    bodies.append(plan.link(rng, "pend2", Q, R, m2, J2))
    pairs.append(plan.revolute("P", "pend1", "coupler", P))
    pairs.append(plan.revolute("Q", "pend2", "pend1", Q))
    # A slider on the rocker: a translational along the rocker's line D–B.
    S = D + rng.uniform(0.2, 0.8) * (B - D)
    slider_angle = float(rng.uniform(-math.pi, math.pi))
    plan.pose["slider"] = (S, slider_angle)
    bodies.append(rx.Body("slider", m3, J3, position=_tup(S), angle=slider_angle))
    rocker_angle = plan.pose["rocker"][1]
    along = (B - D) / np.linalg.norm(B - D)
    normal_global = np.array([-along[1], along[0]])
    normal_local = _tup(_rot(rocker_angle).T @ normal_global)
    pairs.append(
        rx.joints.Translational(
            "H", "slider", "rocker", plan.local("slider", S), plan.local("rocker", S),
            normal=normal_local, angle=slider_angle - rocker_angle,
        )
    )
    _, _, _, _, (g, a, b, c), theta, branch, _ = geometry
    why = (
        f"four-bar ground {g:.4g} crank {a:.4g} coupler {b:.4g} rocker {c:.4g} m at "
        f"{theta:.4g} rad, double pendulum {l1:.4g}/{l2:.4g} m from the coupler, slider "
        f"on the rocker, masses {mode}"
    )
    inertia = ("tiny" if mode == "tiny" else "planar",) * len(bodies)
    return rx.Mechanism(bodies, pairs, gravity=_gravity2(rng)), why, inertia


def branched(seed: int) -> Generated:
    rng = np.random.default_rng([5, seed])
    mech, why, inertia = _branched_mechanism(rng)
    return Generated("branched", seed, mech, why, p=0, dof=4, inertia=inertia)


# ------------------------------------------------------------- spatial inertias
def _random_rotation(rng) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def spatial_inertia(rng, kind: str, scale: float, turned: bool):
    """A central inertia tensor of `kind` with moments of size `scale` [kg m²]:

    - "generic": principal moments strictly inside the triangle inequality;
    - "lamina": (a, b, a + b), a plate whose normal is body z;
    - "rod": (ε b, b, b), a slender rod along body x, ε = 1e-6 or 1e-13;
    - "isotropic": (b, b, b).

    `turned`: principal axes turned at random from the body axes (a full 3 × 3
    tensor); otherwise the three principal moments."""
    a, b = rng.uniform(0.3, 1.0, 2) * scale
    if kind == "generic":
        lo, hi = abs(a - b), a + b
        moments = np.array([a, b, lo + (hi - lo) * rng.uniform(0.1, 0.9)])
    elif kind == "lamina":
        moments = np.array([a, b, a + b])
    elif kind == "rod":
        moments = np.array([(1e-6 if rng.uniform() < 0.5 else 1e-13) * b, b, b])
    elif kind == "isotropic":
        moments = np.array([b, b, b])
    else:
        raise ValueError(kind)
    if not turned:
        return _tup(moments)
    Q = _random_rotation(rng)
    inertia = Q @ np.diag(moments) @ Q.T
    inertia = 0.5 * (inertia + inertia.T)
    return tuple(_tup(row) for row in inertia)


INERTIA_KINDS = ("generic", "lamina", "rod", "isotropic")


def _labels(kinds, bodies) -> tuple[str, ...]:
    """The kinds of the bodies' inertias, a rod's with its ε read back from the
    tensor ("rod 1e-6", "rod 1e-13")."""
    out = []
    for kind, body in zip(kinds, bodies, strict=True):
        if kind == "rod":
            tensor = np.asarray(body.inertia, dtype=float)
            m = np.linalg.eigvalsh(np.diag(tensor) if tensor.ndim == 1 else tensor)
            kind = f"rod 1e{round(math.log10(m[0] / m[-1]))}"
        out.append(kind)
    return tuple(out)


def _spatial_kinds(rng, n: int, symmetric: bool) -> list[str]:
    """Inertia kinds of `n` bodies: all one kind (a third of the time, always when
    `symmetric`: identical bodies), else drawn body by body."""
    if symmetric or rng.uniform() < 1 / 3:
        return [str(rng.choice(INERTIA_KINDS))] * n
    return [str(k) for k in rng.choice(INERTIA_KINDS, n)]


# ------------------------------------------------------------------ spatial twins
def _twin(planar: Generated, family: str, seed: int, rng, loops: int) -> Generated:
    """`rx.models.spatial_twin` of a planar generated mechanism, with its bodies'
    inertias replaced by spatial ones of random kinds (laminae lie in the plane of
    motion, rods along the body's x axis; identical for symmetric designs)."""
    twin = rx.models.spatial_twin(planar.mechanism)
    kinds = _spatial_kinds(rng, len(twin.bodies), planar.symmetric)
    bodies = []
    first = None
    for b, kind in zip(twin.bodies, kinds, strict=True):
        J = float(b.inertia[2])
        inertia = spatial_inertia(rng, kind, J, turned=False)
        if kind == "lamina":
            # In the plane of motion: I_z = J (the planar moment) = I_x + I_y.
            a = float(rng.uniform(0.2, 0.8)) * J
            inertia = (a, J - a, J)
        if planar.symmetric:
            first = inertia if first is None else first
            inertia = first
        bodies.append(dataclasses.replace(b, inertia=inertia))
    mech = dataclasses.replace(twin, bodies=bodies)
    why = f"spatial twin of [{planar.why}], inertias {kinds}"
    return Generated(
        family, seed, mech, why, p=planar.p + 3 * loops, dof=planar.dof,
        symmetric=planar.symmetric, special=planar.special, inertia=_labels(kinds, bodies),
        drive=planar.drive, t_drive=planar.t_drive,
    )


def twin_four_bar(seed: int) -> Generated:
    return _twin(four_bar(seed), "twin_four_bar", seed, np.random.default_rng([6, seed]), 1)


def twin_parallelogram3(seed: int) -> Generated:
    planar = parallelogram3(seed)
    return _twin(planar, "twin_parallelogram3", seed, np.random.default_rng([7, seed]), 2)


def twin_rrr3(seed: int) -> Generated:
    return _twin(rrr3(seed), "twin_rrr3", seed, np.random.default_rng([8, seed]), 2)


def twin_branched(seed: int) -> Generated:
    return _twin(branched(seed), "twin_branched", seed, np.random.default_rng([9, seed]), 1)


# ----------------------------------------------------------------- spatial 4R loops
def _dh(theta: float, a: float, alpha: float) -> np.ndarray:
    """Denavit–Hartenberg transform Rz(θ) Tx(a) Rx(α) (no offsets along the axes)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def _bennett_closure(theta1, a1, al1, a2, al2):
    """Joint angles θ₂, θ₃, θ₄ closing the Bennett loop of links (a₁, α₁), (a₂, α₂),
    (a₁, α₁), (a₂, α₂) at θ₁, to round-off: Gauss–Newton from Bennett's closed form."""

    def residual(x):
        T = _dh(theta1, a1, al1) @ _dh(x[0], a2, al2) @ _dh(x[1], a1, al1) @ _dh(x[2], a2, al2)
        return (T - np.eye(4))[:3].ravel()

    K = math.sin(0.5 * (al2 + al1)) / math.sin(0.5 * (al2 - al1))
    best = None
    for sign in (1.0, -1.0):
        for flip in (1.0, -1.0):
            t2 = 2.0 * math.atan(sign * K / math.tan(0.5 * theta1))
            x = np.array([t2, flip * -theta1, flip * -t2])
            for _ in range(50):
                r = residual(x)
                J = np.empty((12, 3))
                for k in range(3):
                    e = np.zeros(3)
                    e[k] = 1e-7
                    J[:, k] = (residual(x + e) - residual(x - e)) / 2e-7
                x = x - np.linalg.lstsq(J, r, rcond=None)[0]
            err = float(np.max(np.abs(residual(x))))
            if best is None or err < best[1]:
                best = (x, err)
    return best


def _loop_bodies(rng, points, axes, kinds, symmetric, family):
    """Three moving links of a 4R loop through joints (points, axes): link k
    between joints k and k+1, the ground between joints 3 and 0."""
    bodies, pairs = [], []
    first = None
    for k in range(3):
        P, Q = points[k], points[k + 1]
        com = 0.5 * (P + Q) + (0.0 if symmetric else 0.1 * rng.uniform(-1.0, 1.0, 3))
        R = _random_rotation(rng)
        mass = 1.0 if symmetric else float(rng.uniform(0.3, 3.0))
        length = float(np.linalg.norm(Q - P))
        inertia = spatial_inertia(rng, kinds[k], mass * max(length, 0.2) ** 2 / 12, turned=True)
        if symmetric:
            first = inertia if first is None else first
            inertia = first
        bodies.append(
            rx.SpatialBody(f"link{k}", mass, inertia, position=_tup(com),
                           rotation=tuple(_tup(row) for row in R))
        )
    names = ["link0", "link1", "link2", "ground"]
    for k in range(4):
        bi, bj = names[k], names[k - 1]
        if bi == "ground":
            bi, bj = bj, bi
        pairs.append(rx.joints.Revolute3D(f"J{k}", bi, bj, point=_tup(points[k]), axis=_tup(axes[k])))
    return bodies, pairs


def bennett(seed: int) -> Generated:
    rng = np.random.default_rng([10, seed])
    for _ in range(100):
        a1 = float(rng.uniform(0.5, 1.5))
        al1 = float(rng.uniform(0.3, 1.3)) * (1 if rng.uniform() < 0.5 else -1)
        al2 = float(rng.uniform(0.3, 2.8))
        if abs(math.sin(al2)) < 0.2 or abs(abs(al1) - al2) < 0.2:
            continue
        a2 = a1 * math.sin(al2) / math.sin(al1)
        if not 0.3 < abs(a2) < 2.5:
            continue
        theta1 = float(rng.uniform(0.4, math.pi - 0.4)) * (1 if rng.uniform() < 0.5 else -1)
        x, err = _bennett_closure(theta1, a1, al1, a2, al2)
        if err > 1e-14:
            continue
        thetas = [theta1, *x]
        links = [(a1, al1), (a2, al2), (a1, al1), (a2, al2)]
        # Joint k sits at the origin of frame k, axis z_k; a random rigid placement.
        G = np.eye(4)
        G[:3, :3] = _random_rotation(rng)
        G[:3, 3] = rng.uniform(-0.5, 0.5, 3)
        frames = [G]
        for k in range(3):
            frames.append(frames[-1] @ _dh(thetas[k], *links[k]))
        points = np.array([F[:3, 3] for F in frames] + [frames[0][:3, 3]])
        axes = np.array([F[:3, 2] for F in frames])
        # No joint angle near 0 or π: the loop folds there.
        if min(abs(math.sin(t)) for t in thetas) < 0.15:
            continue
        break
    else:
        raise RuntimeError("bennett: no loop found")
    symmetric = rng.uniform() < 0.2
    kinds = _spatial_kinds(rng, 3, symmetric)
    bodies, pairs = _loop_bodies(rng, points, axes, kinds, symmetric, "bennett")
    g = _random_rotation(rng)[:, 0] * 9.81
    why = (
        f"Bennett loop a1 {a1:.4g} m α1 {al1:.4g} rad, a2 {a2:.4g} m α2 {al2:.4g} rad "
        f"(a1/sin α1 = a2/sin α2), joint angles {np.round(thetas, 4).tolist()} (closure "
        f"{err:.1e}), inertias {kinds}{', identical links' if symmetric else ''}"
    )
    mech = rx.Mechanism(bodies, pairs, gravity=_tup(g))
    return Generated("bennett", seed, mech, why, p=3, dof=1, symmetric=symmetric,
                     inertia=_labels(kinds, bodies))


def spatial_4r(seed: int) -> Generated:
    rng = np.random.default_rng([11, seed])
    points = rng.uniform(-1.0, 1.0, (4, 3))
    axes = rng.normal(size=(4, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    points = np.concatenate([points, points[:1]])
    kinds = _spatial_kinds(rng, 3, False)
    bodies, pairs = _loop_bodies(rng, points, axes, kinds, False, "spatial_4r")
    g = _random_rotation(rng)[:, 0] * 9.81
    why = (
        f"4R loop through random axes at {np.round(points[:4], 4).tolist()} along "
        f"{np.round(axes, 4).tolist()}, inertias {kinds}"
    )
    mech = rx.Mechanism(bodies, pairs, gravity=_tup(g))
    return Generated("spatial_4r", seed, mech, why, p=2, dof=0, inertia=_labels(kinds, bodies))


# --------------------------------------------------------------- driven four-bars
def _crank_range(O, D, a, b, c, theta0, direction, step=1e-3):
    """The crank angle, from θ₀ turning in `direction`, at which the loop stops
    closing (|A − D| leaves [|b − c|, b + c]); None if the crank turns fully."""
    for k in range(1, int(TAU / step) + 2):
        t = theta0 + direction * k * step
        A = O + a * np.array([math.cos(t), math.sin(t)])
        dist = float(np.linalg.norm(D - A))
        if not abs(b - c) < dist < b + c:
            return t
    return None


def _transmission_ok(O, D, a, b, c, theta0, theta1, branch_B0, margin=0.25):
    """Whether the transmission angle stays `margin` away from 0 and π between
    crank angles θ₀ and θ₁ (on the branch the pose starts on)."""
    for t in np.linspace(theta0, theta1, 200):
        A = O + a * np.array([math.cos(t), math.sin(t)])
        dist = float(np.linalg.norm(D - A))
        if not abs(b - c) < dist < b + c:
            return False
        along = (b**2 - c**2 + dist**2) / (2 * dist)
        h = math.sqrt(max(b**2 - along**2, 0.0))
        u = (D - A) / dist
        B = A + along * u + branch_B0 * h * np.array([-u[1], u[0]])
        mu = math.acos(np.clip(np.dot(B - A, B - D) / (b * c), -1.0, 1.0))
        if not margin < mu < math.pi - margin:
            return False
    return True


T_DRIVE = 0.25
"""The drives of `four_bar_drive` run over [0, T_DRIVE] s."""


def four_bar_drive(seed: int) -> Generated:
    """A four-bar with its crank driven over [0, 0.25] s; even seeds feasible,
    odd seeds driven 0.4 rad past the end of the crank's travel."""
    rng = np.random.default_rng([12, seed])
    feasible = seed % 2 == 0
    for _ in range(1000):
        geometry = _four_bar_geometry(rng)
        O, D, A, B, (g, a, b, c), theta, branch, is_grashof = geometry
        direction = 1 if rng.uniform() < 0.5 else -1
        end = _crank_range(O, D, a, b, c, theta, direction)
        if feasible:
            delta = direction * float(rng.uniform(0.2, 0.6))
            if end is not None and abs(end - theta) < abs(delta) + 0.3:
                continue
            if not _transmission_ok(O, D, a, b, c, theta, theta + delta, branch):
                continue
        else:
            if end is None or abs(end - theta) > 1.2:
                continue
            delta = end - theta + direction * 0.4
        break
    else:
        raise RuntimeError("four_bar_drive: no design found")
    mode = _mass_mode(rng)
    plan = _Planar()
    bodies, pairs = _four_bar_parts(rng, plan, mode, geometry)
    phi0 = plan.pose["crank"][1]
    motion = rx.motions.SmoothSteps([0.0, T_DRIVE], [phi0, phi0 + delta])
    pairs.append(rx.joints.RevoluteDriver("drive", "crank", "ground", motion))
    why = (
        f"four-bar ground {g:.4g} crank {a:.4g} coupler {b:.4g} rocker {c:.4g} m "
        f"({'Grashof' if is_grashof else 'non-Grashof'}) at {theta:.4g} rad, crank driven "
        f"by {delta:+.4g} rad over {T_DRIVE} s; end of travel "
        f"{'none (full turns)' if end is None else f'at {end:.4g} rad'}: "
        f"{'feasible' if feasible else 'infeasible, 0.4 rad past it'}, masses {mode}"
    )
    mech = rx.Mechanism(bodies, pairs, gravity=_gravity2(rng))
    return Generated(
        "four_bar_drive", seed, mech, why, p=0, dof=0,
        inertia=("tiny" if mode == "tiny" else "planar",) * 3,
        drive="feasible" if feasible else "infeasible", t_drive=T_DRIVE,
    )


def twin_four_bar_drive(seed: int) -> Generated:
    """The spatial twin of `four_bar_drive(seed)` (its SmoothSteps drive becomes a
    `RevoluteDriver3D`): feasible for even seeds, past the end of travel for odd."""
    planar = four_bar_drive(seed)
    return _twin(planar, "twin_four_bar_drive", seed, np.random.default_rng([13, seed]), 1)


FAMILIES = {
    "four_bar": four_bar,
    "parallelogram3": parallelogram3,
    "parallelogram4": parallelogram4,
    "rrr3": rrr3,
    "branched": branched,
    "twin_four_bar": twin_four_bar,
    "twin_parallelogram3": twin_parallelogram3,
    "twin_rrr3": twin_rrr3,
    "twin_branched": twin_branched,
    "bennett": bennett,
    "spatial_4r": spatial_4r,
    "four_bar_drive": four_bar_drive,
    "twin_four_bar_drive": twin_four_bar_drive,
}
"""Every family by name: `FAMILIES[name](seed) -> Generated`."""


def generate(family: str, seed: int) -> Generated:
    """The mechanism of `family` drawn with `seed` (the same every time)."""
    return FAMILIES[family](seed)
