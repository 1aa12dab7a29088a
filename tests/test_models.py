"""The reference mechanism of Wojtyra & Frączek (2013, §4): the mobile robot, against
the paper and against a derivation by hand; and `Mechanism.build` input checking.

The hand derivation (DESIGN §6 geometry, q⁰: every body at angle 0). The knife-edge
rows [(R n)ᵀ, nᵀ Ω s] are [0, 1, 0] on their body for W1 (wheel 2, s = 0), W2
(wheel 3, s = 0), W3 and W4 (platform, s = (0, ∓4a): Ω s ⟂ n). Revolute B's y row is
[0, 1, 0] on wheel 2 and [0, −1, −4a] on the platform (s_Q = (4a, 0)); C's y row is
[0, 1, 0] on wheel 3 and [0, −1, +4a] on the platform. The self-stresses (Cᵀ λ = 0):

- v₁ = (e_W3 − e_W4)/√2: W3 and W4 act along the same line (identical rows);
- v₂ = (e_By + e_Cy − e_W1 − e_W2 + e_W3 + e_W4)/√6: each wheel's knife-edge force
  is passed to the platform by its pin; on the platform, three parallel forces at
  x = +4a, −4a, 0 balance with weights 1, 1, −2 (moment: −4a λ_B + 4a λ_C = 0).

No self-stress reaches A, D–H, drive, W5 (the trolley and the steering linkage are
trees hanging off the platform), so p = 2 and, with N = [v₁ v₂]:

- ‖B_W1‖ = ‖B_W2‖ = ‖N_W1‖ = 1/√6 ≈ 0.408 (a unit row times its N row);
- ‖B_W3‖ = ‖B_W4‖ = √(1/2 + 1/6) = √(2/3) ≈ 0.8165;
- ‖B_B‖ = ‖B_C‖ = ‖(0, 1, 0 | 0, −1, ∓0.2)‖/√6 = √(2.04/6) = √0.34 ≈ 0.5831.

The paper prints (seed 000, §4.2) B_revB with one non-zero column (0.408 at y of the
platform, 0.082 at its φ, −0.408 at y of the wheel; the garbled extraction lists
"0 0.408 0.082 0 −0.408 0_{1×16}"), B_W1 = B_W2 with a single 0.408, and B_W3, B_W4
with −0.408 and ±0.707 (one per column). Their Frobenius norms, which do not depend
on the basis of the null space, are √(2·0.408² + 0.082²), 0.408 and
√(0.408² + 0.707²); they are the values 1/√6, 0.2/√6, 1/√2 rounded to 3 digits.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_EXACT, TOL_FD, TOL_PAPER, TOL_ZERO_B, central_difference
from redundax import models

A_ = 0.05  # the paper's length unit a [m]
SQ6 = math.sqrt(6.0)
UNIQUE = ("A", "D", "E", "F", "G", "H", "drive", "W5")
NOT_UNIQUE = ("B", "C", "W1", "W2", "W3", "W4")
# Groups of pairs (derivation in the module docstring):
# - B + C: v₂ gives C_Byᵀ + C_Cyᵀ = (wheel 2 y: 1, wheel 3 y: 1, platform y: −2,
#   platform φ: −4a + 4a = 0)/√6: not unique, ‖B‖ = √(6/6) = 1;
# - W3 + W4: v₁ cancels (identical rows), v₂ leaves platform y 2/√6: ‖B‖ = 2/√6;
# - B + W1 (wheel 2's two pairs): the wheel part cancels, the platform part of B
#   remains, (0, −1, −0.2)/√6: ‖B‖ = √(1.04/6);
# - all six non-unique pairs together carry both self-stresses entirely: unique.
GROUPS = {
    "B+C": ["B", "C"],
    "W3+W4": ["W3", "W4"],
    "B+W1": ["B", "W1"],
    "all six": list(NOT_UNIQUE),
}
GROUP_NORMS = {"B+C": 1.0, "W3+W4": 2 / SQ6, "B+W1": math.sqrt(1.04 / 6), "all six": 0.0}


@eqx.filter_jit
def analyze(model, q, t):
    """The report, C and Φ at (q, t): one compilation for every test of this module."""
    report = rx.analyze_solvability(model, q, t, groups=GROUPS)
    return report, rx.equations.constraint_matrix(model, q, t), rx.equations.position_residual(model, q, t)


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    model = mech.build()
    q0 = mech.initial_state().q
    report, C, phi = analyze(model, q0, jnp.asarray(0.0))
    return model, np.asarray(q0), report, np.asarray(C), np.asarray(phi)


def b_norm(report, name):
    return float(report.b_norm[report.names.index(name)])


def check_paper_verdicts(report):
    """What the paper states for q⁰ and 'any other nonsingular configuration'."""
    assert (report.n, report.m, report.h) == (21, 17, 5)
    assert int(report.rank_holonomic) == 17
    assert int(report.rank_pfaffian) == 4
    assert int(report.rank) == 20
    assert int(report.redundancy) == 2
    assert int(report.dof) == 1
    for name in UNIQUE:
        assert report.verdict(name), name
        assert b_norm(report, name) < TOL_ZERO_B, name
    for name in NOT_UNIQUE:
        assert not report.verdict(name), name
        assert b_norm(report, name) > 0.1, name
    assert report.verdict("all six")
    assert not report.verdict("B+C")
    assert not report.verdict("W3+W4")


def test_initial_configuration_is_consistent(robot):
    assert np.max(np.abs(robot[4])) <= TOL_EXACT


def test_paper_ranks_and_verdicts_at_q0(robot):
    check_paper_verdicts(robot[2])


def test_paper_b_matrices_at_q0(robot):
    """‖B_X‖_F against the paper's printed matrices (3 digits) and the exact values."""
    report = robot[2]
    paper = {
        "B": math.sqrt(2 * 0.408**2 + 0.082**2),
        "C": math.sqrt(2 * 0.408**2 + 0.082**2),
        "W1": 0.408,
        "W2": 0.408,
        "W3": math.sqrt(0.408**2 + 0.707**2),
        "W4": math.sqrt(0.408**2 + 0.707**2),
    }
    exact = {
        "B": math.sqrt(0.34),
        "C": math.sqrt(0.34),
        "W1": 1 / SQ6,
        "W2": 1 / SQ6,
        "W3": math.sqrt(2 / 3),
        "W4": math.sqrt(2 / 3),
    }
    for name in NOT_UNIQUE:
        assert b_norm(report, name) == pytest.approx(paper[name], abs=TOL_PAPER), name
        assert b_norm(report, name) == pytest.approx(exact[name], abs=TOL_ZERO_B), name


def test_multipliers_and_rows_at_q0(robot):
    """λ_X is unique for the unique pairs (every C_X has full row rank there) and not
    for the others. Per row: only the y rows of B and C carry a self-stress (their x
    rows do not), so the x components of those reactions are unique."""
    report = robot[2]
    for name in UNIQUE:
        assert bool(report.multipliers_unique[report.names.index(name)]), name
    for name in NOT_UNIQUE:
        assert not bool(report.multipliers_unique[report.names.index(name)]), name
    # 1-based rows: B 3–4, C 5–6 (row 6 is C's y row), W1 18, W2 19, W3 20, W4 21.
    not_unique_rows = {4, 6, 18, 19, 20, 21}
    expected = [k + 1 not in not_unique_rows for k in range(22)]
    assert np.asarray(report.row_unique).tolist() == expected
    rb = np.asarray(report.row_b_norm)
    # By's row [0 1 0 | 0 −1 −0.2] times |N_By| = 1/√6.
    assert rb[3] == pytest.approx(math.sqrt(2.04) / SQ6, abs=TOL_ZERO_B)
    assert rb[17] == pytest.approx(1 / SQ6, abs=TOL_ZERO_B)


def test_groups_of_pairs(robot):
    report = robot[2]
    for name, norm in GROUP_NORMS.items():
        assert b_norm(report, name) == pytest.approx(norm, abs=TOL_ZERO_B), name
        assert report.verdict(name) is (norm == 0.0), name


def test_elimination_variants(robot):
    """Rows can be dropped without changing the motion iff the rest stay of rank 20.
    The paper's variants {6, 21}, {18, 21}, {19, 21} (1-based) are valid. So is
    {20, 21}; {18, 19} is not (v₁ lives on W3, W4 only), nor {1, 21} (A carries no
    self-stress: its rows are independent of all others). In general a set E of p
    rows can go iff N_E (p × p) is invertible."""
    C = robot[3]

    def rank_without(rows):
        keep = [k for k in range(22) if k + 1 not in rows]
        return np.linalg.matrix_rank(C[keep])

    for variant in ({6, 21}, {18, 21}, {19, 21}, {20, 21}):
        assert rank_without(variant) == 20, variant
    for variant in ({18, 19}, {1, 21}):
        assert rank_without(variant) == 19, variant


# --- other configurations along the motion ---------------------------------------------

PLATFORM, TROLLEY = 0, 6
LINKAGE_COLS = np.arange(3, 18)  # wheels, links and slider (bodies 2–6)
LINKAGE_ROWS = np.arange(2, 17)  # B, C, D, E, F, G (2 rows each), H (2), drive


def _phi_and_jacobian(model, q, t):
    _, C, phi = analyze(model, jnp.asarray(q), jnp.asarray(t))
    return np.asarray(phi), np.asarray(C)[: model.n_holonomic]


def rot(phi):
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def steered_configuration(model, q0, t, heading, shift, trolley_angle):
    """A consistent configuration with the steering displacement d(t) (no simulator):

    1. Newton's method on the 15 × 15 system of the linkage (rows B–H and drive,
       coordinates of bodies 2–6) with the platform and the trolley held at q⁰;
    2. the trolley turned about joint A by `trolley_angle` (A stays satisfied);
    3. a rigid motion of the whole robot: rotation by `heading`, then `shift`.

    Φ is invariant under 2 and 3 (they move the two bodies of every joint alike)."""
    q = q0.copy()
    for _ in range(30):
        phi, jac = _phi_and_jacobian(model, q, t)
        if np.max(np.abs(phi)) < 1e-14:
            break
        q[LINKAGE_COLS] -= np.linalg.solve(
            jac[np.ix_(LINKAGE_ROWS, LINKAGE_COLS)], phi[LINKAGE_ROWS]
        )
    Q = q.reshape(7, 3)
    pin = Q[PLATFORM, :2] + np.array([-8 * A_, 0.0])  # joint A, platform at angle 0
    Q[TROLLEY, :2] = pin + rot(trolley_angle) @ (Q[TROLLEY, :2] - pin)
    Q[TROLLEY, 2] += trolley_angle
    Q[:, :2] = Q[:, :2] @ rot(heading).T + np.asarray(shift)
    Q[:, 2] += heading
    return Q.reshape(-1)


# (t, heading, shift, trolley angle). At these times the steering displacement of
# `models.mobile_robot_steering`, d(t) − d(0), is 0.01 and 0.02 m in one direction
# (t = 1, 2 s) and in the other (t = 6, 7 s).
POSES = [
    (1.0, 0.3, (1.0, -0.5), 0.4),
    (2.0, -1.2, (-3.0, 2.0), -0.6),
    (6.0, 2.5, (0.2, 0.1), 0.2),
    (7.0, 0.0, (0.0, 0.0), 0.0),
]


@pytest.fixture(scope="module")
def configurations(robot):
    model, q0 = robot[:2]
    return [(steered_configuration(model, q0, t, *pose), t) for t, *pose in POSES]


def test_configurations_are_consistent_and_steered(robot, configurations):
    model = robot[0]
    for q, t in configurations:
        phi, jac = _phi_and_jacobian(model, q, t)
        assert np.max(np.abs(phi)) <= TOL_EXACT
        assert np.linalg.matrix_rank(jac) == 17  # not singular
        Q = q.reshape(7, 3)
        # The wheels are turned relative to the platform, in opposite directions.
        left, right = Q[1, 2] - Q[0, 2], Q[2, 2] - Q[0, 2]
        assert abs(left) > 0.01 and left == pytest.approx(-right, abs=TOL_EXACT)


def test_same_verdicts_along_the_motion(robot, configurations):
    model = robot[0]
    for q, t in configurations:
        check_paper_verdicts(analyze(model, jnp.asarray(q), jnp.asarray(t))[0])


def test_vmap_matches_loop(robot, configurations):
    """`analyze_solvability` vmapped over a batch of configurations ≡ one at a time."""
    model, q0 = robot[:2]
    qs = np.stack([q0] + [q for q, _ in configurations])
    batched = eqx.filter_jit(eqx.filter_vmap(rx.analyze_solvability, in_axes=(None, 0)))(
        model, jnp.asarray(qs)
    )
    g = len(model.pairs)  # the loop's reports also hold GROUPS, after the pairs
    for k in range(len(qs)):
        one = analyze(model, jnp.asarray(qs[k]), jnp.asarray(0.0))[0]
        assert batched.names == one.names[:g]
        assert int(batched.rank[k]) == int(one.rank) == 20
        assert int(batched.rank_holonomic[k]) == int(one.rank_holonomic) == 17
        assert int(batched.rank_pfaffian[k]) == int(one.rank_pfaffian) == 4
        for field in ("unique", "multipliers_unique"):
            np.testing.assert_array_equal(
                np.asarray(getattr(batched, field))[k], np.asarray(getattr(one, field))[:g]
            )
        np.testing.assert_array_equal(np.asarray(batched.row_unique)[k], one.row_unique)
        np.testing.assert_allclose(
            np.asarray(batched.b_norm)[k], np.asarray(one.b_norm)[:g], atol=TOL_EXACT
        )
        np.testing.assert_allclose(
            np.asarray(batched.row_b_norm)[k], one.row_b_norm, atol=TOL_EXACT
        )


# --- derivative with respect to geometry ----------------------------------------------


def test_grad_of_b_norm_wrt_joint_position(robot):
    """f(σ) = ‖B_B‖² with σ the x coordinate of joint B on the platform (4a at q⁰),
    built from C (`constraint_matrix`) and the QR null-space basis
    (`solvability_by_qr`), differentiated by `jax.grad` through `eqx.tree_at`.

    With σ in place of 4a the derivation above gives v₂ ∝ (By: 1, Cy: g, W1: −1,
    W2: −g, W3 = W4: (1 + g)/2), g = σ/(4a) (platform moment: −σ λ_By + 4a λ_Cy = 0),
    and B's rows [0 1 0 | 0 −1 −σ], so f = (2 + σ²)/D, D = 2 + 2g² + (1 + g)²/2,
    f'(σ) = (2σ D − (2 + σ²) D'(σ))/D², D' = (4g + 1 + g)/(4a). The rank stays 20,
    so the derivative exists. Checked against the closed form and central
    differences."""
    model, q0 = robot[:2]
    k, revolutes = next(
        (k, g)
        for k, g in enumerate(model.holonomic)
        if model.pair("B").rows[0] in np.asarray(g.rows)[:, 0]
    )
    member = int(np.flatnonzero(np.asarray(revolutes.rows)[:, 0] == model.pair("B").rows[0])[0])
    S = rx.analysis.membership(model.n_constraints, [model.pair("B").rows])

    def f(sigma):
        s_j = revolutes.s_j.at[member, 0].set(sigma)
        moved = eqx.tree_at(lambda m: m.holonomic[k].s_j, model, s_j)
        C = rx.equations.constraint_matrix(moved, jnp.asarray(q0))
        return rx.analysis.solvability_by_qr(C, S).b_norm[0] ** 2

    sigma = 4 * A_
    assert float(revolutes.s_j[member, 0]) == pytest.approx(sigma, abs=TOL_EXACT)
    g = sigma / (4 * A_)
    D = 2 + 2 * g**2 + (1 + g) ** 2 / 2
    dD = (4 * g + 1 + g) / (4 * A_)
    exact_f = (2 + sigma**2) / D
    exact = (2 * sigma * D - (2 + sigma**2) * dD) / D**2

    value_and_grad = jax.jit(jax.value_and_grad(f))  # one compilation serves both
    value, grad = value_and_grad(jnp.asarray(sigma))
    fd = central_difference(lambda x: value_and_grad(jnp.asarray(x[0]))[0], np.array([sigma]))[0]
    assert float(value) == pytest.approx(exact_f, rel=TOL_FD)
    assert float(value) == pytest.approx(b_norm(robot[2], "B") ** 2, rel=TOL_FD)
    assert float(grad) == pytest.approx(exact, rel=TOL_FD)
    assert float(grad) == pytest.approx(fd, rel=TOL_FD)


# --- Mechanism.build: bad input --------------------------------------------------------


def _body(name="b", **kw):
    return rx.Body(name, kw.pop("mass", 1.0), kw.pop("inertia", 0.1), **kw)


@pytest.mark.parametrize(
    "bodies, pairs, message",
    [
        (
            [_body()],
            [rx.joints.Revolute("J", "b", "wheel")],
            r"pair 'J' field 'body_j': unknown body 'wheel'",
        ),
        ([_body(), _body()], [], r"body 'b': duplicate body name"),
        (
            [_body()],
            [rx.joints.Revolute("J", "b", "ground"), rx.joints.Weld("J", "b", "ground")],
            r"pair 'J': duplicate pair name",
        ),
        (
            [_body()],
            [rx.joints.Revolute("J", "b", "ground", point_i=(1.0, 2.0, 3.0))],
            r"pair 'J' field 'point_i': expected a vector of length 2, got shape \(3,\)",
        ),
        ([_body(mass=0.0)], [], r"body 'b' field 'mass': must be positive, got 0.0"),
        ([_body(inertia=-1.0)], [], r"body 'b' field 'inertia': must be positive, got -1.0"),
        ([_body()], ["hinge"], r"pairs: unknown pair type 'str'"),
        (
            [_body()],
            [rx.joints.KnifeEdge("K", "b", normal=(0.0, 0.0))],
            r"pair 'K' field 'normal': must be a non-zero vector",
        ),
        ([_body(name="ground")], [], r"the name 'ground' is reserved"),
        ([_body()], [rx.joints.Revolute("J", "b", "b")], r"pair 'J': body_i and body_j are the same"),
        (
            [_body()],
            [rx.joints.CustomHolonomic("X", ("b", "arm"), lambda p, qb, t: qb[0, :1], 1)],
            r"pair 'X' field 'bodies': unknown body 'arm'",
        ),
    ],
)
def test_build_rejects_bad_input(bodies, pairs, message):
    with pytest.raises(ValueError, match=message):
        rx.Mechanism(bodies, pairs).build()


def test_build_lists_every_problem_at_once():
    mech = rx.Mechanism(
        [_body(mass=-2.0), _body("c", inertia=0.0)],
        [rx.joints.Revolute("J", "b", "nowhere"), rx.joints.KnifeEdge("J", "c", point=(1.0,))],
        gravity=(0.0, -9.81, 0.0),
    )
    with pytest.raises(ValueError) as info:
        mech.build()
    text = str(info.value)
    assert "(6 problem(s))" in text
    for fragment in (
        "body 'b' field 'mass'",
        "body 'c' field 'inertia'",
        "unknown body 'nowhere'",
        "pair 'J': duplicate pair name",
        "pair 'J' field 'point'",
        "mechanism field 'gravity'",
    ):
        assert fragment in text, fragment


def test_models_build():
    """The canonical mechanisms build, with the sizes the papers give."""
    for mech, (n, m, h) in (
        (models.mobile_robot(), (21, 17, 5)),
        (models.four_bar(), (9, 8, 0)),
        (models.parallelogram(3), (12, 12, 0)),
        (models.hexapod(), (156, 156, 0)),
        (models.hexapod(driven=False), (156, 150, 0)),
    ):
        model = mech.build()
        assert (model.n_coordinates, model.n_holonomic, model.n_pfaffian) == (n, m, h)
