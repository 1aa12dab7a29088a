"""Assembly of Φ, C = [Φ_q; Ψ], b, Γ, M and F, against oracles written here.

Oracles (NumPy, independent of the library's autodiff):

- hand-derived residuals, Jacobian rows and Γ of every pair type (Haug,
  *Computer-Aided Kinematics and Dynamics*, ch. 3; Wojtyra & Frączek 2013, Eq. 30,
  Eq. 31 and the Appendix), at random states where the constraints need not hold:
  C, b and Γ are defined everywhere;
- exact motions q(t) in closed form (a driven pendulum, a driven slider, a steered
  car turning about its instantaneous centre), along which Φ = 0, C q̇ + b = 0 and
  C q̈ = Γ must hold;
- central differences in t for b = Φ_t;
- virtual work for the generalised forces; diag(m, m, J) for the mass matrix.
"""

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_EXACT, TOL_FD

OMEGA = np.array([[0.0, -1.0], [1.0, 0.0]])


def rot(phi):
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


# Driver profile d(t) = c0 + c1 t + c2 t² + c3 t³; d, d', d'' by hand.
POLY = np.array([0.3, -0.7, 0.25, 0.4])


def poly(t, k=0):
    c0, c1, c2, c3 = POLY
    return (
        c0 + c1 * t + c2 * t**2 + c3 * t**3,
        c1 + 2 * c2 * t + 3 * c3 * t**2,
        2 * c2 + 6 * c3 * t,
    )[k]


# --- a mechanism with every built-in pair type ----------------------------------------
# Rows: R 0–1, R0 2–3, T 4–5, W 6–8, DT 9, DR 10 (m = 11); K1 11, K2 12 (h = 2).

G = dict(
    rev_si=np.array([0.3, -0.2]),
    rev_sj=np.array([-0.1, 0.4]),
    grd_si=np.array([0.25, 0.15]),
    grd_sj=np.array([1.0, -2.0]),
    tra_si=np.array([0.1, 0.2]),
    tra_sj=np.array([-0.3, 0.05]),
    tra_v=unit((0.6, 0.8)),
    tra_psi=0.35,
    weld_si=np.array([-0.2, 0.1]),
    weld_sj=np.array([0.05, -0.3]),
    weld_psi=-0.4,
    drv_si=np.array([0.2, -0.1]),
    drv_sj=np.array([0.1, 0.3]),
    drv_u=unit((1.0, -2.0)),
    ke1_s=np.array([0.4, -0.1]),
    ke1_n=unit((0.3, 1.0)),
    ke2_s=np.array([-0.2, 0.5]),
    ke2_n=unit((1.0, 0.0)),
)
MASS = (2.0, 1.5, 0.7)
INERTIA = (0.3, 0.2, 0.05)


def every_type_mechanism(**kw):
    bodies = [rx.Body(f"b{k + 1}", MASS[k], INERTIA[k]) for k in range(3)]
    motion = rx.motions.Polynomial(POLY)
    pairs = [
        rx.joints.Revolute("R", "b1", "b2", G["rev_si"], G["rev_sj"]),
        rx.joints.Revolute("R0", "b2", "ground", G["grd_si"], G["grd_sj"]),
        rx.joints.Translational(
            "T", "b3", "b1", G["tra_si"], G["tra_sj"], normal=G["tra_v"], angle=G["tra_psi"]
        ),
        rx.joints.Weld("W", "b2", "b3", G["weld_si"], G["weld_sj"], angle=G["weld_psi"]),
        rx.joints.TranslationalDriver(
            "DT", "b1", "b3", motion, G["drv_si"], G["drv_sj"], direction=G["drv_u"]
        ),
        rx.joints.RevoluteDriver("DR", "b1", "b2", motion),
        rx.joints.KnifeEdge("K1", "b1", G["ke1_s"], G["ke1_n"]),
        rx.joints.KnifeEdge("K2", "b3", G["ke2_s"], G["ke2_n"]),
    ]
    return rx.Mechanism(bodies, pairs, **kw)


@pytest.fixture(scope="module")
def every_type():
    return every_type_mechanism().build()


@eqx.filter_jit
def _assembled(model, q, qd, t):
    # C is [holonomic_jacobian; pfaffian_matrix] by construction (checked on one
    # mechanism in `test_jit_matches_eager_and_public_pieces`); velocity_residual is
    # computed apart from C (a JVP per pair), so it is checked against the oracle.
    return dict(
        phi=rx.equations.position_residual(model, q, t),
        C=rx.equations.constraint_matrix(model, q, t),
        b=rx.equations.velocity_bias(model, q, t),
        gamma=rx.equations.acceleration_rhs(model, q, qd, t),
        velocity=rx.equations.velocity_residual(model, q, qd, t),
    )


def assembled(model, q, qd=None, t=0.0):
    """Φ, C, b and Γ at (q, q̇, t), jitted once per model structure (t is passed as an
    array so that it is traced, not static)."""
    qd = np.zeros_like(q) if qd is None else qd
    out = _assembled(model, *(jnp.asarray(x, dtype=float) for x in (q, qd, t)))
    return {k: np.asarray(v) for k, v in out.items()}


def random_states(seed, count=3):
    rng = np.random.default_rng(seed)
    scale = np.tile([1.0, 1.0, math.pi], 3)
    return [
        (rng.uniform(-1.0, 1.0, 9) * scale, rng.standard_normal(9), float(rng.uniform(0, 2)))
        for _ in range(count)
    ]


class Oracle:
    """Φ, C, b and Γ of `every_type_mechanism` by hand at (q, q̇, t)."""

    def __init__(self, q, qd, t):
        self.r = [q[3 * k : 3 * k + 2] for k in range(3)] + [np.zeros(2)]
        self.p = [q[3 * k + 2] for k in range(3)] + [0.0]
        self.rd = [qd[3 * k : 3 * k + 2] for k in range(3)] + [np.zeros(2)]
        self.pd = [qd[3 * k + 2] for k in range(3)] + [0.0]
        self.t = t
        self.phi, self.gamma, self.b = np.zeros(11), np.zeros(13), np.zeros(13)
        self.C = np.zeros((13, 9))
        g = G
        self.revolute(0, 0, 1, g["rev_si"], g["rev_sj"])
        self.revolute(2, 1, 3, g["grd_si"], g["grd_sj"])
        self.distance(4, 2, 0, g["tra_si"], g["tra_sj"], g["tra_v"], 0.0)
        self.angle(5, 2, 0, g["tra_psi"])
        self.revolute(6, 1, 2, g["weld_si"], g["weld_sj"])
        self.angle(8, 1, 2, g["weld_psi"])
        self.distance(9, 0, 2, g["drv_si"], g["drv_sj"], g["drv_u"], 1.0)
        self.angle(10, 0, 1, 0.0, driven=True)
        self.knife(11, 0, g["ke1_s"], g["ke1_n"])
        self.knife(12, 2, g["ke2_s"], g["ke2_n"])

    def put(self, row, body, vals):
        if body < 3:  # body 3 is the ground: no coordinates
            self.C[row, 3 * body : 3 * body + 3] += vals

    def revolute(self, row, i, j, si, sj):
        """Φ = r_i + R_i s_i − r_j − R_j s_j; rows [I, Ω R_i s_i | −I, −Ω R_j s_j];
        Γ = R_i s_i φ̇_i² − R_j s_j φ̇_j²."""
        Ri, Rj = rot(self.p[i]), rot(self.p[j])
        self.phi[row : row + 2] = self.r[i] + Ri @ si - self.r[j] - Rj @ sj
        for k in range(2):
            self.put(row + k, i, np.r_[np.eye(2)[k], (OMEGA @ Ri @ si)[k]])
            self.put(row + k, j, -np.r_[np.eye(2)[k], (OMEGA @ Rj @ sj)[k]])
        self.gamma[row : row + 2] = Ri @ si * self.pd[i] ** 2 - Rj @ sj * self.pd[j] ** 2

    def distance(self, row, i, j, si, sj, v, driven):
        """Φ = d·w − driven·d(t), d = r_j + R_j s_j − r_i − R_i s_i, w = R_j v.

        ∂/∂r_i = −wᵀ, ∂/∂φ_i = −(Ω R_i s_i)·w, ∂/∂r_j = wᵀ, ∂/∂φ_j = (Ω R_j s_j)·w + d·Ωw.
        d²/dt² (d·w) = d̈·w + 2 ḋ·Ωw φ̇_j − d·w φ̇_j² + d·Ωw φ̈_j, and the q̈-free part of
        d̈ is −R_j s_j φ̇_j² + R_i s_i φ̇_i²; Γ = −(q̈-free part) + driven·d''(t).
        """
        Ri, Rj = rot(self.p[i]), rot(self.p[j])
        d = self.r[j] + Rj @ sj - self.r[i] - Ri @ si
        w = Rj @ v
        self.phi[row] = d @ w - driven * poly(self.t)
        self.put(row, i, np.r_[-w, -(OMEGA @ Ri @ si) @ w])
        self.put(row, j, np.r_[w, (OMEGA @ Rj @ sj) @ w + d @ (OMEGA @ w)])
        pdi, pdj = self.pd[i], self.pd[j]
        dd = self.rd[j] + OMEGA @ Rj @ sj * pdj - self.rd[i] - OMEGA @ Ri @ si * pdi
        free = (-Rj @ sj * pdj**2 + Ri @ si * pdi**2) @ w + 2 * dd @ (OMEGA @ w) * pdj
        free -= d @ w * pdj**2
        self.gamma[row] = -free + driven * poly(self.t, 2)
        self.b[row] = -driven * poly(self.t, 1)

    def angle(self, row, i, j, psi, driven=False):
        """Φ = φ_i − φ_j − ψ (or − d(t)); row [0 0 1 | 0 0 −1]; Γ = d''(t) if driven."""
        self.phi[row] = self.p[i] - self.p[j] - (poly(self.t) if driven else psi)
        self.put(row, i, np.array([0.0, 0.0, 1.0]))
        self.put(row, j, np.array([0.0, 0.0, -1.0]))
        self.gamma[row] = poly(self.t, 2) if driven else 0.0
        self.b[row] = -poly(self.t, 1) if driven else 0.0

    def knife(self, row, i, s, n):
        """Eq. 30: Ψ^K = [(R n)ᵀ, nᵀ Ω s]; Eq. 31: Γ^K = −(Ω R n)ᵀ ṙ φ̇."""
        R = rot(self.p[i])
        self.put(row, i, np.r_[R @ n, n @ OMEGA @ s])
        self.gamma[row] = -(OMEGA @ R @ n) @ self.rd[i] * self.pd[i]


@pytest.mark.parametrize("state", random_states(1))
def test_every_pair_type_against_hand_oracle(every_type, state):
    q, qd, t = state
    o, a = Oracle(q, qd, t), assembled(every_type, q, qd, t)
    np.testing.assert_allclose(a["phi"], o.phi, atol=TOL_EXACT)
    np.testing.assert_allclose(a["C"], o.C, atol=TOL_EXACT)
    np.testing.assert_allclose(a["b"], o.b, atol=TOL_EXACT)
    np.testing.assert_allclose(a["gamma"], o.gamma, atol=TOL_EXACT)
    np.testing.assert_allclose(a["velocity"], o.C @ qd + o.b, atol=TOL_EXACT)


def test_pairs_report_their_rows(every_type):
    rows = {p.name: p.rows for p in every_type.pairs}
    assert rows == {
        "R": (0, 1),
        "R0": (2, 3),
        "T": (4, 5),
        "W": (6, 7, 8),
        "DT": (9,),
        "DR": (10,),
        "K1": (11,),
        "K2": (12,),
    }
    assert (every_type.n_holonomic, every_type.n_pfaffian) == (11, 2)


def test_velocity_bias_is_phi_t_by_central_differences(every_type):
    """b = Φ_t (holonomic rows) from central differences of Φ in t; 0 for Pfaffian rows."""
    q, _, t = random_states(2, 1)[0]
    h = np.cbrt(np.finfo(float).eps)
    fd = assembled(every_type, q, t=t + h)["phi"] - assembled(every_type, q, t=t - h)["phi"]
    b = assembled(every_type, q, t=t)["b"]
    np.testing.assert_allclose(b[:11], fd / (2 * h), atol=TOL_FD)
    assert np.all(b[11:] == 0.0)
    assert abs(b[9] + poly(t, 1)) <= TOL_EXACT  # the driver row: −d'(t)


def test_gamma_is_minus_second_derivative_along_a_line(every_type):
    """Holonomic Γ = −d²/ds² Φ(q + s q̇, t + s) at s = 0 (q̈ = 0 on that path), here by
    a central second difference of Φ itself, not of its autodiff derivatives."""
    q, qd, t = random_states(3, 1)[0]

    def phi(s):
        return assembled(every_type, q + s * qd, t=t + s)["phi"]

    h = np.finfo(float).eps ** 0.25
    fd2 = (phi(h) - 2 * phi(0.0) + phi(-h)) / h**2
    gamma = assembled(every_type, q, qd, t)["gamma"]
    # With h = eps^¼ truncation (h²) and round-off (eps/h²) are both ~1e-8 here.
    np.testing.assert_allclose(gamma[:11], -fd2, atol=TOL_FD)


# --- exact motions ----------------------------------------------------------------------


def check_exact_motion(model, motion, times):
    """Φ(q(t), t) = 0, C q̇ + b = 0 and C q̈ = Γ along a closed-form motion."""
    for t in times:
        q, qd, qdd = motion(t)
        a = assembled(model, q, qd, t)
        np.testing.assert_allclose(a["phi"], 0.0, atol=TOL_EXACT)
        np.testing.assert_allclose(a["C"] @ qd + a["b"], 0.0, atol=TOL_EXACT)
        np.testing.assert_allclose(a["C"] @ qdd, a["gamma"], atol=TOL_EXACT)


def test_driven_pendulum_and_slider_exact_motion():
    """Two independent driven bodies in one mechanism (one compilation):

    - pendulum: pinned at its point s_p to ground point P_p, φ(t) = d(t) prescribed:
      r = P_p − R(φ) s_p, ṙ = −Ω R s_p φ̇, r̈ = −Ω R s_p φ̈ + R s_p φ̇²;
    - slider: in a ground guide (translational, normal v, angle ψ) driven along u ⊥ v:
      (P_s − r − R(ψ) s_s)·u = d(t) and ·v = 0 give r = P_s − R(ψ) s_s − d(t) u.
    """
    s_p, P_p = np.array([-0.4, 0.1]), np.array([0.5, 1.0])
    s_s, P_s, psi = np.array([0.2, -0.1]), np.array([0.3, 0.4]), 0.6
    v = unit((1.0, 2.0))
    u = OMEGA @ v
    mech = rx.Mechanism(
        [rx.Body("p", 1.0, 0.1), rx.Body("s", 1.0, 0.1)],
        [
            rx.joints.Revolute("O", "p", "ground", s_p, P_p),
            rx.joints.RevoluteDriver("turn", "p", "ground", rx.motions.Polynomial(POLY)),
            rx.joints.Translational("T", "s", "ground", s_s, P_s, normal=v, angle=psi),
            rx.joints.TranslationalDriver(
                "push", "s", "ground", rx.motions.Polynomial(POLY), s_s, P_s, direction=u
            ),
        ],
    )

    def motion(t):
        phi, w, a = poly(t), poly(t, 1), poly(t, 2)
        R = rot(phi)
        return (
            np.r_[P_p - R @ s_p, phi, P_s - rot(psi) @ s_s - poly(t) * u, psi],
            np.r_[-OMEGA @ R @ s_p * w, w, -w * u, 0.0],
            np.r_[-OMEGA @ R @ s_p * a + R @ s_p * w**2, a, -a * u, 0.0],
        )

    check_exact_motion(mech.build(), motion, (0.0, 0.7, 1.9))


CAR_L, CAR_W, CAR_DELTA = 0.8, 0.3, 0.4


def car(delta=CAR_DELTA, r0=(0.4, -0.2), phi0=0.7):
    """A car: rear axle of two knife edges K1, K2 at (0, ∓w) on the body, a front
    wheel (knife edge K3) pinned at (L, 0) and steered by a constant angle δ."""
    R0 = rot(phi0)
    front = np.asarray(r0) + R0 @ np.array([CAR_L, 0.0])
    return rx.Mechanism(
        [
            rx.Body("car", 20.0, 2.0, position=r0, angle=phi0),
            rx.Body("wheel", 1.0, 0.01, position=front, angle=phi0 + delta),
        ],
        [
            rx.joints.Revolute("F", "wheel", "car", (0.0, 0.0), (CAR_L, 0.0)),
            rx.joints.RevoluteDriver("steer", "wheel", "car", rx.motions.Constant(delta)),
            rx.joints.KnifeEdge("K1", "car", (0.0, -CAR_W), (0.0, 1.0)),
            rx.joints.KnifeEdge("K2", "car", (0.0, CAR_W), (0.0, 1.0)),
            rx.joints.KnifeEdge("K3", "wheel", (0.0, 0.0), (0.0, 1.0)),
        ],
    )


def test_steered_car_turning_about_its_instantaneous_centre():
    """The rear-axle line (body x = 0) and the front wheel's normal line meet at the
    instantaneous centre c = r₀ + R(φ₀) (0, L cot δ) (bicycle model). A rigid rotation
    of car and wheel about c at rate ω satisfies every constraint for all t:
    ṙ = ω Ω (r − c), r̈ = −ω² (r − c), φ̇ = ω, φ̈ = 0."""
    mech = car()
    model, q0 = mech.build(), np.asarray(mech.initial_state().q)
    r0, phi0 = q0[:2], q0[2]
    c = r0 + rot(phi0) @ np.array([0.0, CAR_L / math.tan(CAR_DELTA)])
    omega = 1.3

    def motion(t):
        q, qd, qdd = np.zeros(6), np.zeros(6), np.zeros(6)
        for k in range(2):
            r = c + rot(omega * t) @ (q0[3 * k : 3 * k + 2] - c)
            q[3 * k : 3 * k + 3] = np.r_[r, q0[3 * k + 2] + omega * t]
            qd[3 * k : 3 * k + 3] = np.r_[omega * OMEGA @ (r - c), omega]
            qdd[3 * k : 3 * k + 3] = np.r_[-(omega**2) * (r - c), 0.0]
        return q, qd, qdd

    check_exact_motion(model, motion, (0.0, 0.5, 2.0))
    # The knife-edge rows Γ^K = −(Ω R n)·ṙ φ̇ do not vanish on this motion: the test
    # is not trivially satisfied.
    _, qd, _ = motion(0.0)
    gamma = assembled(model, q0, qd)["gamma"]
    assert np.min(np.abs(gamma[3:])) > 0.1


# --- mass matrix and applied forces --------------------------------------------------


def test_mass_matrix_is_diagonal_m_m_j(every_type):
    expected = np.diag(np.ravel([[m, m, j] for m, j in zip(MASS, INERTIA, strict=True)]))
    np.testing.assert_array_equal(np.asarray(rx.equations.mass_matrix(every_type)), expected)
    qd = np.random.default_rng(4).standard_normal(9)
    np.testing.assert_allclose(
        rx.equations.kinetic_energy(every_type, jnp.asarray(qd)), 0.5 * qd @ expected @ qd, rtol=TOL_EXACT
    )


@eqx.filter_jit
def _forces(model, q):
    return rx.equations.generalized_forces(model, q), rx.equations.potential_energy(model, q)


def test_generalized_forces_by_virtual_work():
    """Gravity g on every body, and loads (f at body point s, torque τ): the virtual
    work f·(δr + Ω R s δφ) + τ δφ gives F_r = m g + Σ f, F_φ = Σ (Ω R s)·f + τ; the
    potential is V = −(Σ m g·r + Σ f·(r + R s) + Σ τ φ)."""
    gravity = np.array([0.5, -9.81])
    loads = [
        ("b1", np.array([1.0, 2.0]), np.array([0.3, -0.4]), 0.5),
        ("b3", np.array([-3.0, 0.5]), np.array([0.0, 0.7]), 0.0),
        ("b1", np.array([0.0, -1.5]), np.array([-0.2, 0.0]), -1.25),
    ]
    mech = every_type_mechanism(
        gravity=gravity,
        loads=[rx.Load(b, force=f, point=s, torque=tau) for b, f, s, tau in loads],
    )
    model = mech.build()
    q = random_states(5, 1)[0][0]
    F, V = np.zeros(9), 0.0
    for k, m in enumerate(MASS):
        F[3 * k : 3 * k + 2] += m * gravity
        V -= m * gravity @ q[3 * k : 3 * k + 2]
    for b, f, s, tau in loads:
        k = int(b[1]) - 1
        r, phi = q[3 * k : 3 * k + 2], q[3 * k + 2]
        F[3 * k : 3 * k + 2] += f
        F[3 * k + 2] += (OMEGA @ rot(phi) @ s) @ f + tau
        V -= f @ (r + rot(phi) @ s) + tau * phi
    got_F, got_V = _forces(model, jnp.asarray(q))
    np.testing.assert_allclose(got_F, F, atol=TOL_EXACT)
    assert float(got_V) == pytest.approx(V, rel=TOL_EXACT)


# --- custom constraints -------------------------------------------------------------


def _revolute_residual(params, qb, t):
    del t

    def point(qk, s):
        c, sn = jnp.cos(qk[2]), jnp.sin(qk[2])
        return qk[:2] + jnp.array([c * s[0] - sn * s[1], sn * s[0] + c * s[1]])

    return point(qb[0], params["s_i"]) - point(qb[1], params["s_j"])


def _knife_residual(params, qb, qdb):
    phi = qb[0, 2]
    c, s = jnp.cos(phi), jnp.sin(phi)
    nx, ny = params["n"]
    sx, sy = params["s"]
    n = jnp.array([c * nx - s * ny, s * nx + c * ny])  # R n
    lever = -nx * sy + ny * sx  # nᵀ Ω s
    return (n @ qdb[0, :2] + lever * qdb[0, 2])[None]


def test_custom_pairs_equal_the_built_in_ones():
    """A revolute (to a body and to the ground) and a knife edge written as custom
    residuals give the same Φ, C, b and Γ as the built-in pairs."""
    si, sj, s0 = (0.3, -0.2), (-0.1, 0.4), (1.0, -2.0)
    ks, kn = (0.4, -0.1), tuple(unit((0.3, 1.0)))
    bodies = [rx.Body("b1", 1.0, 0.1), rx.Body("b2", 1.0, 0.1)]
    builtin = rx.Mechanism(
        bodies,
        [
            rx.joints.Revolute("R", "b1", "b2", si, sj),
            rx.joints.Revolute("R0", "b2", "ground", (0.0, 0.0), s0),
            rx.joints.KnifeEdge("K", "b1", ks, kn),
        ],
    ).build()
    custom = rx.Mechanism(
        bodies,
        [
            rx.joints.CustomHolonomic("R", ("b1", "b2"), _revolute_residual, 2, {"s_i": si, "s_j": sj}),
            rx.joints.CustomHolonomic(
                "R0", ("b2", "ground"), _revolute_residual, 2, {"s_i": (0.0, 0.0), "s_j": s0}
            ),
            rx.joints.CustomPfaffian("K", ("b1",), _knife_residual, 1, {"s": ks, "n": kn}),
        ],
    ).build()
    for q, qd, t in random_states(6, 2):
        q, qd = q[:6], qd[:6]
        a, b = assembled(custom, q, qd, t), assembled(builtin, q, qd, t)
        for key in a:
            np.testing.assert_allclose(a[key], b[key], atol=TOL_EXACT, err_msg=key)


def test_custom_pair_over_three_bodies_scatters_its_columns():
    """Φ = x₁ + 2 y₂ − 3 φ₃ + t²: C = [1 0 0 | 0 2 0 | 0 0 −3], b = 2t, Γ = −2."""
    mech = rx.Mechanism(
        [rx.Body(n, 1.0, 1.0) for n in ("a", "b", "c")],
        [
            rx.joints.CustomHolonomic(
                "X",
                ("a", "b", "c"),
                lambda p, qb, t: qb[0, 0] + 2 * qb[1, 1] - 3 * qb[2, 2] + t**2,
                1,
            )
        ],
    )
    model = mech.build()
    t = 0.75
    a = assembled(model, np.arange(9.0), np.ones(9), t)
    np.testing.assert_array_equal(a["C"], [[1.0, 0, 0, 0, 2, 0, 0, 0, -3]])
    np.testing.assert_allclose(a["b"], [2 * t], atol=TOL_EXACT)
    np.testing.assert_allclose(a["gamma"], [-2.0], atol=TOL_EXACT)


# --- transforms ------------------------------------------------------------------------


def test_jit_matches_eager_and_public_pieces():
    """On the steered car (small: eager evaluation compiles every primitive once):
    C eager ≡ C jitted, and C = [holonomic_jacobian; pfaffian_matrix]. (Eager
    velocity_residual = C q̇ + b runs in `check_consistency`, tested below.)"""
    mech = car()
    model = mech.build()
    q = np.asarray(mech.initial_state().q) + np.random.default_rng(7).uniform(-0.3, 0.3, 6)
    qd = np.random.default_rng(8).standard_normal(6)
    jitted = assembled(model, q, qd)
    C = np.asarray(rx.equations.constraint_matrix(model, jnp.asarray(q)))
    np.testing.assert_allclose(C, jitted["C"], atol=TOL_EXACT)
    np.testing.assert_array_equal(rx.equations.holonomic_jacobian(model, jnp.asarray(q)), C[:3])
    np.testing.assert_array_equal(rx.equations.pfaffian_matrix(model, jnp.asarray(q)), C[3:])


def test_check_consistency_names_the_violated_pairs():
    """The car at rest is consistent. Moving the wheel off its pin violates only F
    (steer is an angle, the knife edges are velocity constraints); spinning the wheel
    alone violates only steer (the knife edge K3 sits at the wheel centre, so φ̇ does
    not enter its row, and F's point is the wheel centre too)."""
    mech = car()
    model, state = mech.build(), mech.initial_state()
    rx.equations.check_consistency(model, state)
    moved = rx.State(state.t, state.q.at[3].add(0.01), state.qd)
    with pytest.raises(ValueError, match=r"1 pair\(s\)") as info:
        rx.equations.check_consistency(model, moved)
    assert "pair 'F'" in str(info.value)
    spun = rx.State(state.t, state.q, state.qd.at[5].set(1.0))
    with pytest.raises(ValueError, match=r"1 pair\(s\)") as info:
        rx.equations.check_consistency(model, spun)
    assert "pair 'steer'" in str(info.value)
    assert "velocity residual 1" in str(info.value)


def test_custom_pair_parameters_given_as_tuples_become_vectors():
    """A point-on-ground pin written as a custom residual with its ground point as a
    tuple: same C as the built-in revolute to the ground."""
    point = (0.3, -0.2)

    def pin(params, qb, t):
        return qb[0, :2] - params["P"]

    body = rx.Body("b", 1.0, 0.1, position=point)
    custom = rx.Mechanism([body], [rx.joints.CustomHolonomic("pin", ("b",), pin, 2, {"P": point})])
    builtin = rx.Mechanism([body], [rx.joints.Revolute("pin", "b", "ground", (0.0, 0.0), point)])
    q = custom.initial_state().q
    np.testing.assert_allclose(
        rx.equations.position_residual(custom.build(), q), rx.equations.position_residual(builtin.build(), q)
    )
    np.testing.assert_allclose(
        rx.equations.constraint_matrix(custom.build(), q), rx.equations.constraint_matrix(builtin.build(), q)
    )
