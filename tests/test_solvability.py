"""Reaction solvability (Wojtyra & Frączek 2013, §3) on mechanisms whose answers are
derived by hand below, and agreement of the QR, SVD and rank tests.

How the hand answers are derived. A left null vector λ of C (Cᵀ λ = 0) is a set of
constraint reactions that is in equilibrium on every body by itself (a self-stress).
With N an orthonormal basis of those vectors, B_X = C_Xᵀ N_X, and ‖B_X‖_F does not
depend on the basis (B_X B_Xᵀ = C_Xᵀ (N Nᵀ)_XX C_X). So each mechanism's verdicts
follow from listing its self-stresses by statics:

- f_X unique ⇔ every self-stress exerts zero generalised force through X;
- one row k unique ⇔ every self-stress has λ_k = 0, and then ‖B_k‖ = ‖c_k‖ ‖N_k‖;
- the union of all pairs that carry a self-stress is unique (C_Xᵀ N_X = −C_Yᵀ N_Y = 0).
"""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_EXACT, TOL_ZERO_B
from redundax import models

SQ2, SQ6, SQ12 = math.sqrt(2.0), math.sqrt(6.0), math.sqrt(12.0)


@eqx.filter_jit
def analyze(model, q, groups=None):
    """The report and C, compiled once per mechanism."""
    return rx.analyze_solvability(model, q, groups=groups), rx.equations.constraint_matrix(model, q)


def report_of(mech, groups=None):
    model = mech.build()
    report, C = analyze(model, mech.initial_state().q, groups)
    return model, report, np.asarray(C)


def link(name, start, end, mass_per_length=1.0):
    """A uniform slender link from `start` to `end`, frame at the middle, x along it."""
    lx, ly = end[0] - start[0], end[1] - start[1]
    length = math.hypot(lx, ly)
    m = mass_per_length * length
    return rx.Body(
        name,
        m,
        m * length**2 / 12,
        position=((start[0] + end[0]) / 2, (start[1] + end[1]) / 2),
        angle=math.atan2(ly, lx),
    )


# --- the mechanisms ----------------------------------------------------------------------


def double_pin_pendulum():
    """Link 1 (length 1, from (0, 0) to (1, 0)) pinned to the ground TWICE at the same
    point, s = (−0.5, 0), by R1 and R2; link 2 hangs from its end by R3.

    n = 6, m = 6. R1 and R2 have identical rows, so rank C = 4, p = 2, dof = 2.
    Self-stresses: λ_R1 = −λ_R2 = any vector f (the two pins pull against each other);
    N = {(e_R1x − e_R2x)/√2, (e_R1y − e_R2y)/√2}, so N_R1 = I/√2 and
    ‖B_R1‖² = ‖C_R1‖²/2 = (2 + |s|²)/2 = 1.125 (C_R1 = [I, Ω R s], |Ω R s| = |s| = 0.5).
    Per row: ‖B_R1x‖ = ‖[1, 0, 0]‖/√2, ‖B_R1y‖ = ‖[0, 1, −0.5]‖/√2.
    R3 carries no self-stress: unique, and its multipliers too. R1 + R2: unique.
    """
    mech = rx.Mechanism(
        [link("link1", (0.0, 0.0), (1.0, 0.0)), link("link2", (1.0, 0.0), (1.0, -1.0))],
        [
            rx.joints.Revolute("R1", "link1", "ground", (-0.5, 0.0), (0.0, 0.0)),
            rx.joints.Revolute("R2", "link1", "ground", (-0.5, 0.0), (0.0, 0.0)),
            rx.joints.Revolute("R3", "link1", "link2", (0.5, 0.0), (-0.5, 0.0)),
        ],
    )
    expected = dict(
        n=6,
        m=6,
        h=0,
        rank=4,
        p=2,
        dof=2,
        unique={"R1": False, "R2": False, "R3": True, "R1+R2": True},
        b_norm={"R1": math.sqrt(1.125), "R2": math.sqrt(1.125), "R3": 0.0, "R1+R2": 0.0},
        row_b_norm=[1 / SQ2, math.sqrt(1.25) / SQ2] * 2 + [0.0, 0.0],
        multipliers_unique={"R3": True, "R1": False},
    )
    return mech, {"R1+R2": ["R1", "R2"]}, expected


def beam_two_pins(theta):
    """A beam of length 2 at angle θ pinned to the ground at both ends, s = (∓1, 0).

    n = 3, m = 4, rank 3, p = 1, dof 0. The self-stress: equal and opposite forces
    along the beam, λ_P1 = −λ_P2 = u/√2 with u = (cos θ, sin θ). The moment row of
    C_P1ᵀ λ_P1 is (Ω R s₁)·u = 0 (Ω R s₁ ⊥ u), so ‖B_P1‖ = ‖u‖/√2 = 1/√2.
    Per row (global x, y): row k is unique iff u_k = 0; otherwise
    ‖B_k‖ = ‖c_k‖ |u_k|/√2, with Ω R s₁ = (u_y, −u_x) giving
    c_P1x = [1, 0, u_y], c_P1y = [0, 1, −u_x] (and the opposite lever for P2).
    """
    c, s = math.cos(theta), math.sin(theta)
    mech = rx.Mechanism(
        [rx.Body("beam", 2.0, 2.0 / 3.0, position=(0.0, 0.0), angle=theta)],
        [
            rx.joints.Revolute("P1", "beam", "ground", (-1.0, 0.0), (-c, -s)),
            rx.joints.Revolute("P2", "beam", "ground", (1.0, 0.0), (c, s)),
        ],
    )
    row = [math.hypot(1.0, s) * abs(c) / SQ2, math.hypot(1.0, c) * abs(s) / SQ2]
    expected = dict(
        n=3,
        m=4,
        h=0,
        rank=3,
        p=1,
        dof=0,
        unique={"P1": False, "P2": False, "P1+P2": True},
        b_norm={"P1": 1 / SQ2, "P2": 1 / SQ2, "P1+P2": 0.0},
        row_b_norm=row * 2,
        multipliers_unique={"P1": False},
    )
    return mech, {"P1+P2": ["P1", "P2"]}, expected


def _pin_in_beam_frame(params, qb, t):
    """Revolute to the ground with rows in the beam frame: R(φ)ᵀ (r + R s − P) =
    Rᵀ (r − P) + s, i.e. [along the beam, across the beam]."""
    del t
    r, phi = qb[0, :2], qb[0, 2]
    c, s = jnp.cos(phi), jnp.sin(phi)
    d = r - params["P"]
    return jnp.stack([c * d[0] + s * d[1], -s * d[0] + c * d[1]]) + params["s"]


def beam_two_pins_local(theta):
    """The same beam with the pins written as custom pairs in the beam frame.

    At the assembled configuration the rows are [Rᵀ, Ω s]: along = [u, 0],
    across = [Ω u, ∓1]. The self-stress is along the beam only, so the "along" rows
    are not unique (‖B‖ = ‖[u, 0]‖/√2 = 1/√2) and the "across" rows are unique,
    whatever θ.
    """
    c, s = math.cos(theta), math.sin(theta)
    mech = rx.Mechanism(
        [rx.Body("beam", 2.0, 2.0 / 3.0, position=(0.0, 0.0), angle=theta)],
        [
            rx.joints.CustomHolonomic(
                "P1",
                ("beam",),
                _pin_in_beam_frame,
                2,
                {"s": np.array([-1.0, 0.0]), "P": np.array([-c, -s])},
            ),
            rx.joints.CustomHolonomic(
                "P2",
                ("beam",),
                _pin_in_beam_frame,
                2,
                {"s": np.array([1.0, 0.0]), "P": np.array([c, s])},
            ),
        ],
    )
    expected = dict(
        n=3,
        m=4,
        h=0,
        rank=3,
        p=1,
        dof=0,
        unique={"P1": False, "P2": False},
        b_norm={"P1": 1 / SQ2, "P2": 1 / SQ2},
        row_b_norm=[1 / SQ2, 0.0, 1 / SQ2, 0.0],
        multipliers_unique={"P1": False},
    )
    return mech, None, expected


SLIDER_S = 0.1  # the two guides of the doubled slider sit at body x = ∓0.1


def slider_crank(double_guide=False, alpha=1.0, crank=0.3, rod=1.0):
    """Crank (pinned at the origin), rod, slider on the x axis.

    One guide T1: n = 9, m = 8, rank 8, p = 0, dof 1, everything unique.
    Two guides T1, T2 (slider points x = ∓0.1, same line, normal v = (0, 1)):
    their rows on the slider are T1d = [0, −1, 0.1], T1a = [0, 0, 1],
    T2d = [0, −1, −0.1], T2a = [0, 0, 1] (distance row −[v, (Ω R s)·v], angle row).
    They span 2 dimensions: p = 2, with self-stresses w₁ = e_T1a − e_T2a and
    w₂ = e_T1d − e_T2d − 0.2 e_T1a (T1d − T2d = 0.2 T1a). No self-stress reaches the
    rod (a chain), so O, A, B are unique; T1 and T2 are not; T1 + T2 is unique.
    """
    ax, ay = crank * math.cos(alpha), crank * math.sin(alpha)
    bx = ax + math.sqrt(rod**2 - ay**2)
    bodies = [
        link("crank", (0.0, 0.0), (ax, ay)),
        link("rod", (ax, ay), (bx, 0.0)),
        rx.Body("slider", 0.5, 0.01, position=(bx, 0.0)),
    ]
    pairs = [
        rx.joints.Revolute("O", "crank", "ground", (-crank / 2, 0.0), (0.0, 0.0)),
        rx.joints.Revolute("A", "crank", "rod", (crank / 2, 0.0), (-rod / 2, 0.0)),
        rx.joints.Revolute("B", "rod", "slider", (rod / 2, 0.0), (0.0, 0.0)),
    ]
    if double_guide:
        pairs += [
            rx.joints.Translational("T1", "slider", "ground", (-SLIDER_S, 0.0), (0.0, 0.0)),
            rx.joints.Translational("T2", "slider", "ground", (SLIDER_S, 0.0), (0.0, 0.0)),
        ]
        pair_norms, row_norms = _double_guide_norms()
        expected = dict(
            n=9,
            m=10,
            h=0,
            rank=8,
            p=2,
            dof=1,
            unique={"O": True, "A": True, "B": True, "T1": False, "T2": False, "T1+T2": True},
            b_norm={"O": 0.0, "A": 0.0, "B": 0.0, "T1+T2": 0.0, **pair_norms},
            row_b_norm=[0.0] * 6 + row_norms,
            multipliers_unique={"A": True, "T1": False, "T2": False},
        )
        return rx.Mechanism(bodies, pairs), {"T1+T2": ["T1", "T2"]}, expected
    pairs.append(rx.joints.Translational("T1", "slider", "ground", (0.0, 0.0), (0.0, 0.0)))
    expected = dict(
        n=9,
        m=8,
        h=0,
        rank=8,
        p=0,
        dof=1,
        unique=dict.fromkeys(("O", "A", "B", "T1"), True),
        b_norm=dict.fromkeys(("O", "A", "B", "T1"), 0.0),
        row_b_norm=[0.0] * 8,
        multipliers_unique=dict.fromkeys(("O", "A", "B", "T1"), True),
    )
    return rx.Mechanism(bodies, pairs), None, expected


def _double_guide_norms():
    """‖B_X‖ of the doubled guide from the hand-derived rows c and self-stresses w₁, w₂:
    P = W (WᵀW)⁻¹ Wᵀ over the rows (T1d, T1a, T2d, T2a) is N Nᵀ there, so
    ‖B_X‖² = trace(C_X C_Xᵀ P_XX) and ‖B_k‖ = ‖c_k‖ √P_kk."""
    c = np.array([[0, -1, SLIDER_S], [0, 0, 1], [0, -1, -SLIDER_S], [0, 0, 1.0]])
    W = np.array([[0, 1, 0, -1], [1, -2 * SLIDER_S, -1, 0.0]]).T
    P = W @ np.linalg.solve(W.T @ W, W.T)
    pairs = {
        k: math.sqrt(np.trace(c[x] @ c[x].T @ P[np.ix_(x, x)]))
        for k, x in (("T1", [0, 1]), ("T2", [2, 3]))
    }
    rows = [float(np.linalg.norm(c[k]) * math.sqrt(P[k, k])) for k in range(4)]
    return pairs, rows


def propped_cantilever(L=2.0):
    """A beam of length L welded to the ground at its left end and pinned at its right
    end (s_W = (−L/2, 0), s_P = (L/2, 0)); horizontal.

    n = 3, m = 5, rank 3, p = 2, dof 0 (statically indeterminate of degree 2).
    Self-stresses: any pin force f balanced by the weld: λ_W,xy = −f and
    λ_W,φ = (Ω (s_W − s_P))·f = −L f_y. Orthogonal basis:
    n₁ = (W: −1, 0, 0; P: 1, 0)/√2, n₂ = (W: 0, −1, −L; P: 0, 1)/√(2 + L²).
    Rows: W [1 0 0], [0 1 −L/2], [0 0 1]; P [1 0 0], [0 1 L/2].
    ‖B_row‖ = ‖c‖ ‖N_row‖: W: 1/√2, √(1 + L²/4)/√(2 + L²), L/√(2 + L²);
    P: 1/√2, √(1 + L²/4)/√(2 + L²). Pairs: ‖B_W‖² = ‖B_P‖² = 1/2 + (1 + L²/4)/(2 + L²)
    (C_Wᵀ N_W = −C_Pᵀ N_P). W + P: unique.
    """
    k = math.sqrt(2 + L**2)
    mech = rx.Mechanism(
        [rx.Body("beam", L, L**3 / 12, position=(L / 2, 0.0))],
        [
            rx.joints.Weld("W", "beam", "ground", (-L / 2, 0.0), (0.0, 0.0)),
            rx.joints.Revolute("P", "beam", "ground", (L / 2, 0.0), (L, 0.0)),
        ],
    )
    pair = math.sqrt(0.5 + (1 + L**2 / 4) / k**2)
    expected = dict(
        n=3,
        m=5,
        h=0,
        rank=3,
        p=2,
        dof=0,
        unique={"W": False, "P": False, "W+P": True},
        b_norm={"W": pair, "P": pair, "W+P": 0.0},
        row_b_norm=[
            1 / SQ2,
            math.sqrt(1 + L**2 / 4) / k,
            L / k,
            1 / SQ2,
            math.sqrt(1 + L**2 / 4) / k,
        ],
        multipliers_unique={"W": False, "P": False},
    )
    return mech, {"W+P": ["W", "P"]}, expected


def welded_pendulum():
    """An L-shaped pendulum: link a pinned to the ground at (0, 0), link b welded to
    its free end. A chain of a pin and a weld: n = 6, m = 5, rank 5, p = 0, dof 1,
    everything unique (no self-stress can exist in a tree)."""
    mech = rx.Mechanism(
        [link("a", (0.0, 0.0), (1.0, 0.0)), link("b", (1.0, 0.0), (1.0, 0.5))],
        [
            rx.joints.Revolute("O", "a", "ground", (-0.5, 0.0), (0.0, 0.0)),
            rx.joints.Weld("W", "b", "a", (-0.25, 0.0), (0.5, 0.0), angle=math.pi / 2),
        ],
    )
    expected = dict(
        n=6,
        m=5,
        h=0,
        rank=5,
        p=0,
        dof=1,
        unique={"O": True, "W": True},
        b_norm={"O": 0.0, "W": 0.0},
        row_b_norm=[0.0] * 5,
        multipliers_unique={"O": True, "W": True},
    )
    return mech, None, expected


CAR_L, CAR_W, CAR_DELTA = 0.8, 0.3, 0.4


def car():
    """A car: a rear axle of knife edges K1, K2 at (0, ∓w) on the body (normal (0, 1)),
    a front wheel pinned at (L, 0) (F), steered by a constant angle δ (steer) and
    carrying a knife edge K3.

    n = 6, m = 3, h = 3. K1 and K2 have the same row [(R n)ᵀ, nᵀ Ω s = 0]: rank Ψ = 2,
    rank C = 5, p = 1, dof 1. The self-stress: K1 pushes, K2 pulls, along the same
    line: λ = (e_K1 − e_K2)/√2, ‖B_K1‖ = ‖B_K2‖ = ‖c_K‖/√2 = 1/√2. No self-stress
    reaches the wheel: its knife-edge force and the axle forces lie on two distinct
    lines (through (L, 0) and along x = 0), which cannot balance. F, steer, K3:
    unique; K1 + K2: unique.
    """
    front = (CAR_L, 0.0)
    mech = rx.Mechanism(
        [rx.Body("car", 20.0, 2.0), rx.Body("wheel", 1.0, 0.01, position=front, angle=CAR_DELTA)],
        [
            rx.joints.Revolute("F", "wheel", "car", (0.0, 0.0), front),
            rx.joints.RevoluteDriver("steer", "wheel", "car", rx.motions.Constant(CAR_DELTA)),
            rx.joints.KnifeEdge("K1", "car", (0.0, -CAR_W), (0.0, 1.0)),
            rx.joints.KnifeEdge("K2", "car", (0.0, CAR_W), (0.0, 1.0)),
            rx.joints.KnifeEdge("K3", "wheel", (0.0, 0.0), (0.0, 1.0)),
        ],
    )
    expected = dict(
        n=6,
        m=3,
        h=3,
        rank=5,
        p=1,
        dof=1,
        rank_holonomic=3,
        rank_pfaffian=2,
        unique={"F": True, "steer": True, "K1": False, "K2": False, "K3": True, "K1+K2": True},
        b_norm={"K1": 1 / SQ2, "K2": 1 / SQ2, "K3": 0.0, "F": 0.0, "K1+K2": 0.0},
        row_b_norm=[0.0, 0.0, 0.0, 1 / SQ2, 1 / SQ2, 0.0],
        multipliers_unique={"K3": True, "K1": False},
    )
    return mech, {"K1+K2": ["K1", "K2"]}, expected


def parallelogram3(theta=math.pi / 2):
    """models.parallelogram(3): three cranks at x = 0, 1, 2 (at angle θ), coupler on top.

    n = 12, m = 12, rank 11, p = 1, dof 1. Each crank is a two-force member: the
    self-stress is an axial force t_k in crank k, with coupler equilibrium
    Σ t_k = 0 and Σ t_k s_k = 0 (s = −1, 0, 1 its attachment points): t ∝ (1, −2, 1).
    Normalised: λ_Ak = −λ_Ok = t_k e/√12 (e the crank direction, Σ 2 t_k² = 12).
    ‖B_Ok‖ = |t_k|/√12 (no moment about the crank's own line);
    ‖B_Ak‖ = |t_k| √(2 + s_k²)/√12 (the coupler's moment row is t_k s_k).
    Every one of the six joint reactions is non-unique. At a crank angle θ ≠ π/2 the
    coupler's moment rows become t_k s_k sin θ, so t is unchanged and
    ‖B_Ak‖ = |t_k| √(2 + s_k² sin²θ)/√12, ‖B_Ok‖ = |t_k|/√12.
    """
    mech = models.parallelogram(3, crank_angle=theta)
    t, s = (1, 2, 1), (-1, 0, 1)
    b = {f"O{k + 1}": t[k] / SQ12 for k in range(3)}
    b |= {f"A{k + 1}": t[k] * math.sqrt(2 + (s[k] * math.sin(theta)) ** 2) / SQ12 for k in range(3)}
    expected = dict(
        n=12,
        m=12,
        h=0,
        rank=11,
        p=1,
        dof=1,
        unique=dict.fromkeys(b, False),
        b_norm=b,
        multipliers_unique=dict.fromkeys(b, False),
    )
    return mech, None, expected


def parallelogram2():
    """models.parallelogram(2): two cranks, 4 pins, 3 links: 8 independent rows,
    p = 0, dof 1 (Grübler 9 − 8), all unique."""
    names = ("O1", "O2", "A1", "A2")
    expected = dict(
        n=9,
        m=8,
        h=0,
        rank=8,
        p=0,
        dof=1,
        unique=dict.fromkeys(names, True),
        b_norm=dict.fromkeys(names, 0.0),
        row_b_norm=[0.0] * 8,
        multipliers_unique=dict.fromkeys(names, True),
    )
    return models.parallelogram(2), None, expected


def four_bar():
    """models.four_bar(): 3 links, 4 pins. Grübler: 3·3 − 2·4 = 1 dof, and at a
    non-singular configuration the 8 rows are independent: p = 0, all unique."""
    names = ("O", "A", "B", "D")
    expected = dict(
        n=9,
        m=8,
        h=0,
        rank=8,
        p=0,
        dof=1,
        unique=dict.fromkeys(names, True),
        b_norm=dict.fromkeys(names, 0.0),
        row_b_norm=[0.0] * 8,
        multipliers_unique=dict.fromkeys(names, True),
    )
    return models.four_bar(), None, expected


def mobile_robot():
    """The paper's robot (the details are in test_models.py): p = 2."""
    unique = dict.fromkeys("ADEFGH", True) | {"drive": True, "W5": True}
    unique |= dict.fromkeys(("B", "C", "W1", "W2", "W3", "W4"), False)
    expected = dict(
        n=21,
        m=17,
        h=5,
        rank=20,
        p=2,
        dof=1,
        rank_holonomic=17,
        rank_pfaffian=4,
        unique=unique,
        b_norm={"B": math.sqrt(0.34), "W1": 1 / SQ6, "W3": math.sqrt(2 / 3)},
    )
    return models.mobile_robot(), None, expected


MECHANISMS = {
    "double_pin_pendulum": double_pin_pendulum,
    "beam_horizontal": lambda: beam_two_pins(0.0),
    "beam_inclined": lambda: beam_two_pins(math.pi / 6),
    "beam_local_rows": lambda: beam_two_pins_local(math.pi / 6),
    "slider_crank": slider_crank,
    "slider_crank_double_guide": lambda: slider_crank(double_guide=True),
    "propped_cantilever": propped_cantilever,
    "welded_pendulum": welded_pendulum,
    "car": car,
    "four_bar": four_bar,
    "parallelogram2": parallelogram2,
    "parallelogram3": parallelogram3,
    "parallelogram3_inclined": lambda: parallelogram3(math.pi / 3),
    "mobile_robot": mobile_robot,
}


# --- all mechanisms at once ---------------------------------------------------------------
#
# Compiling one analysis per mechanism would dominate the run time of this file, so
# the mechanisms are analysed together as ONE mechanism made of disjoint parts (names
# prefixed "part/"). That changes no answer: C is block diagonal, so its left null
# space is the direct sum of the parts' null spaces, N Nᵀ is block diagonal, and
# ‖B_X‖ = ‖C_Xᵀ (N Nᵀ)_XX C_X‖^½ only sees X's own part. Ranks, p and dof add up.
# `test_union_equals_separate_analysis` checks this on a part analysed alone.


def _renamed(spec, prefix):
    def body(name):
        return name if name == "ground" else prefix + name

    changes = {"name": prefix + spec.name}
    for field in ("body_i", "body_j", "body"):
        if field in {f.name for f in dataclasses.fields(spec)}:
            changes[field] = body(getattr(spec, field))
    if isinstance(spec, (rx.joints.CustomHolonomic, rx.joints.CustomPfaffian)):
        changes["bodies"] = tuple(body(b) for b in spec.bodies)
    return dataclasses.replace(spec, **changes)


def union(parts):
    """One Mechanism from {prefix: (mechanism, groups)}; groups renamed likewise."""
    bodies, pairs, groups = [], [], {}
    for name, (mech, part_groups) in parts.items():
        prefix = name + "/"
        bodies += [dataclasses.replace(b, name=prefix + b.name) for b in mech.bodies]
        pairs += [_renamed(p, prefix) for p in mech.pairs]
        for g, members in (part_groups or {}).items():
            groups[prefix + g] = [prefix + m for m in members]
    return rx.Mechanism(bodies, pairs), groups


@pytest.fixture(scope="module")
def zoo():
    """(model, report, C, expected per part) of the union of every mechanism."""
    made = {name: make() for name, make in MECHANISMS.items()}
    mech, groups = union({name: (m, g) for name, (m, g, _) in made.items()})
    model = mech.build()
    report, C = analyze(model, mech.initial_state().q, groups)
    return model, report, np.asarray(C), {name: e for name, (_, _, e) in made.items()}


def part_of(zoo, name):
    """The pair/group names (unprefixed) → index in the report, the part's rows in C
    (in the order a separate analysis would have them) and its coordinate columns."""
    model, report, C, _ = zoo
    prefix = name + "/"
    index = {n[len(prefix) :]: k for k, n in enumerate(report.names) if n.startswith(prefix)}
    rows = sorted(r for n, k in index.items() if report.kinds[k] != "group" for r in report.rows[k])
    cols = [
        3 * k + c
        for k, b in enumerate(model.bodies.names)
        if b.startswith(prefix)
        for c in range(3)
    ]
    return index, rows, cols


@pytest.mark.parametrize("name", MECHANISMS)
def test_hand_derived_answers(zoo, name):
    model, report, C, expected = zoo
    e = expected[name]
    index, rows, cols = part_of(zoo, name)
    m_rows = [r for r in rows if r < model.n_holonomic]
    h_rows = [r for r in rows if r >= model.n_holonomic]
    assert (len(cols), len(m_rows), len(h_rows)) == (e["n"], e["m"], e["h"])
    # The part's rank, from an SVD of its block of C (NumPy).
    rank = np.linalg.matrix_rank(C[np.ix_(rows, cols)])
    assert (rank, len(rows) - rank, len(cols) - rank) == (e["rank"], e["p"], e["dof"])
    if "rank_holonomic" in e:
        assert np.linalg.matrix_rank(C[np.ix_(m_rows, cols)]) == e["rank_holonomic"]
        assert np.linalg.matrix_rank(C[np.ix_(h_rows, cols)]) == e["rank_pfaffian"]
    for pair, unique in e["unique"].items():
        assert bool(report.unique[index[pair]]) is unique, pair
    for pair, norm in e["b_norm"].items():
        assert float(report.b_norm[index[pair]]) == pytest.approx(norm, abs=TOL_ZERO_B), pair
    if "row_b_norm" in e:
        got = np.asarray(report.row_b_norm)[rows]
        np.testing.assert_allclose(got, e["row_b_norm"], atol=TOL_ZERO_B)
        np.testing.assert_array_equal(
            np.asarray(report.row_unique)[rows], np.asarray(e["row_b_norm"]) == 0.0
        )
    for pair, unique in e.get("multipliers_unique", {}).items():
        assert bool(report.multipliers_unique[index[pair]]) is unique, pair


def test_totals_add_up(zoo):
    model, report, C, expected = zoo
    assert int(report.rank) == sum(e["rank"] for e in expected.values())
    assert int(report.redundancy) == sum(e["p"] for e in expected.values())
    assert int(report.dof) == sum(e["dof"] for e in expected.values())
    assert int(report.rank) == np.linalg.matrix_rank(C)
    m = model.n_holonomic
    assert int(report.rank_holonomic) == np.linalg.matrix_rank(C[:m])
    assert int(report.rank_pfaffian) == np.linalg.matrix_rank(C[m:])


def test_inclined_beam_rows_depend_on_the_row_frame(zoo):
    """The same physical pins at θ = 30°: in global rows every component is
    non-unique; in beam-frame rows only the components along the beam are."""
    report = zoo[1]
    for name, verdicts in (
        ("beam_inclined", [False] * 4),
        ("beam_local_rows", [False, True, False, True]),
        ("beam_horizontal", [False, True, False, True]),
    ):
        _, rows, _ = part_of(zoo, name)
        assert np.asarray(report.row_unique)[rows].tolist() == verdicts, name


# --- three tests, one answer -----------------------------------------------------------


@jax.jit
def _three_tests(C, S):
    return (rx.analysis.solvability_by_qr(C, S), rx.analysis.solvability_by_svd(C, S), rx.analysis.solvability_by_rank(C, S))


def test_qr_svd_and_rank_tests_agree(zoo):
    """On every mechanism (all parts of the union), per pair, per user group and per
    row: the same verdicts from the three tests, the same ‖B_X‖ from QR and SVD (it is
    basis independent), the same rank; and the same as `analyze_solvability`."""
    _, report, C, _ = zoo
    groups = list(report.rows) + [(k,) for k in range(C.shape[0])]
    qr, svd, rank = _three_tests(jnp.asarray(C), rx.analysis.membership(C.shape[0], groups))
    g = len(report.rows)
    assert int(qr.rank) == int(svd.rank) == int(rank.rank) == int(report.rank)
    for field in ("unique", "multipliers_unique"):
        a, b, c = (np.asarray(getattr(x, field)) for x in (qr, svd, rank))
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(qr.b_norm, svd.b_norm, atol=TOL_ZERO_B)
    np.testing.assert_allclose(qr.n_norm, svd.n_norm, atol=TOL_ZERO_B)
    np.testing.assert_array_equal(np.asarray(qr.unique)[:g], np.asarray(report.unique))
    np.testing.assert_array_equal(np.asarray(qr.unique)[g:], np.asarray(report.row_unique))
    np.testing.assert_allclose(np.asarray(qr.b_norm)[:g], report.b_norm, atol=TOL_ZERO_B)
    np.testing.assert_allclose(np.asarray(qr.b_norm)[g:], report.row_b_norm, atol=TOL_ZERO_B)
    # No verdict is borderline: ‖B_X‖ is either round-off or O(0.1).
    b = np.asarray(qr.b_norm)
    assert np.all((b < TOL_ZERO_B) | (b > 0.05))
    assert 0 < np.sum(b > 0.05) < b.size  # both kinds of verdict occur


# --- the car alone: transforms, groups by row, the report ------------------------------

# Rows of the car (1-based, as `groups` takes them): F 1–2, steer 3, K1 4, K2 5, K3 6.
CAR_GROUPS = {
    "K1+K2": ["K1", "K2"],
    "row 4": [4],
    "rows 4-5": [4, 5],
    "F+steer": [1, 2, 3],
    "K3+row 5": ["K3", 5],
}


@pytest.fixture(scope="module")
def car_alone():
    mech = car()[0]
    model, report, C = report_of(mech, CAR_GROUPS)
    return model, mech.initial_state().q, report, C


def test_groups_by_row_number(car_alone):
    """Row 4 is K1 (not unique); rows 4 and 5 are K1 + K2 (unique: their self-stress is
    internal to them); rows 1–3 are F and steer (unique); K3 with row 5 (K2) is not."""
    report = car_alone[2]
    assert report.verdict("row 4") is False
    assert report.verdict("rows 4-5") is True
    assert report.verdict("F+steer") is True
    assert report.verdict("K3+row 5") is False
    assert float(report.b_norm[report.names.index("row 4")]) == pytest.approx(
        1 / SQ2, abs=TOL_ZERO_B
    )


def test_union_equals_separate_analysis(zoo, car_alone):
    """The car analysed alone gives the same verdicts and norms as inside the union."""
    alone = car_alone[2]
    index, rows, _ = part_of(zoo, "car")
    names = [n for n in alone.names if n in index]
    assert len(names) == 6
    mine = [alone.names.index(n) for n in names]
    theirs = [index[n] for n in names]
    np.testing.assert_array_equal(np.asarray(zoo[1].unique)[theirs], np.asarray(alone.unique)[mine])
    np.testing.assert_allclose(
        np.asarray(zoo[1].b_norm)[theirs], np.asarray(alone.b_norm)[mine], atol=TOL_ZERO_B
    )
    np.testing.assert_allclose(
        np.asarray(zoo[1].row_b_norm)[rows], alone.row_b_norm, atol=TOL_ZERO_B
    )


def test_analyze_jit_matches_eager(car_alone):
    """On the car (small: eager evaluation compiles every primitive once)."""
    model, q, jitted, C = car_alone
    eager = rx.analyze_solvability(model, q, groups=CAR_GROUPS)
    assert int(eager.rank) == int(jitted.rank)
    assert int(eager.rank_holonomic) == int(jitted.rank_holonomic) == 3
    assert int(eager.rank_pfaffian) == int(jitted.rank_pfaffian) == 2
    # Through `filter_jit` the groups dict is a pytree, whose keys come back sorted:
    # compare by name.
    assert sorted(eager.names) == sorted(jitted.names)
    k = [jitted.names.index(n) for n in eager.names]
    for field in ("unique", "multipliers_unique"):
        np.testing.assert_array_equal(getattr(eager, field), np.asarray(getattr(jitted, field))[k])
    np.testing.assert_allclose(eager.b_norm, np.asarray(jitted.b_norm)[k], atol=TOL_EXACT)
    np.testing.assert_array_equal(eager.row_unique, jitted.row_unique)
    np.testing.assert_allclose(eager.row_b_norm, jitted.row_b_norm, atol=TOL_EXACT)
    np.testing.assert_allclose(rx.equations.constraint_matrix(model, q), C, atol=TOL_EXACT)


def test_group_errors(car_alone):
    model, q = car_alone[:2]
    with pytest.raises(ValueError, match="'K1'.*already a pair's name"):
        rx.analyze_solvability(model, q, groups={"K1": ["K2"]})
    for row in (0, 7):
        with pytest.raises(ValueError, match=f"'g'.*row {row} out of range 1..6"):
            rx.analyze_solvability(model, q, groups={"g": [row]})
    with pytest.raises(KeyError, match="no pair named 'K9'"):
        rx.analyze_solvability(model, q, groups={"g": ["K9"]})


def test_report_dict_and_table(car_alone):
    """`to_dict` (DESIGN §7): rows 1-based, verdicts and norms per pair."""
    report = car_alone[2]
    d = report.to_dict()
    assert (d["n"], d["m"], d["h"], d["rank"], d["redundancy"], d["dof"]) == (6, 3, 3, 5, 1, 1)
    assert d["pairs"]["F"]["rows"] == [1, 2]
    assert d["pairs"]["K2"]["rows"] == [5]
    assert d["pairs"]["K1"]["unique"] is False
    assert d["pairs"]["K3"]["multipliers_unique"] is True
    assert d["pairs"]["K1"]["b_norm"] == pytest.approx(1 / SQ2, abs=TOL_ZERO_B)
    assert d["pairs"]["rows 4-5"]["rows"] == [4, 5]
    table = str(report)
    assert "degree of redundancy p = 1" in table
    assert table.count("NOT unique") == 4  # K1, K2, "row 4", "K3+row 5"
