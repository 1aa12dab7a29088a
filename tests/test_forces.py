"""Force elements (issue 14): spring-dampers, rotational spring-dampers, bushings,
time-dependent loads and user forces, each against a closed form; jit, vmap and grad;
their configuration tables; Andrews' squeezer against the Bari test set.

CI time: the planar tests share one model (four independent oscillators), so one
compiled simulation serves the undamped, damped and energy runs and the finite
differences; the spatial elements are checked at single states (one compiled
`solve_dynamics`)."""

import math
from pathlib import Path

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import (
    TOL_ANDREWS_ANGLE,
    TOL_ENERGY_RELATIVE,
    TOL_EXACT,
    TOL_FD_SOLVE,
    TOL_OSCILLATOR,
    TOL_STATIC,
    central_difference,
    read_reference,
)
from redundax import models
from redundax._bodies import natural_from_pose
from redundax.io import TYPES, ConfigError, load_config
from redundax.sweep import apply_parameters, parameter_targets

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TIGHT = dict(stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12))

# The oscillators, four free planar bodies that do not interact: `mass` (m, on a
# spring to the ground point (0, 0), along x), `wheel` (a torsion spring to the
# ground), `rotor` (driven by τ(t) = τ₀ t) and `twin` (as `mass`, with the spring
# written as a user force law, anchored at (0, 3)). Without pairs the compiled
# simulation is small (the constrained machinery is tested elsewhere; here the
# spatial test and Andrews' squeezer have pairs).
M, K, L0, A = 2.0, 2.0 * (2.0 * math.pi) ** 2, 0.5, 0.1  # ω = 2π rad/s
J_WHEEL, K_WHEEL, THETA0 = 0.05, 0.05 * (3.0 * math.pi) ** 2, 0.1  # ω = 3π rad/s
J_ROTOR, TAU0 = 0.02, 0.3
ZETA = 0.1  # damping ratio of the damped runs
T1, N_SAVE = 1.0, 11


def _twin_law(params, qb, qdb, t):
    """The spring-damper of `mass` as a user force law: [Fx, Fy, Mz] on `twin`."""
    del t
    d = qb[0, :2] - params["anchor"]
    length = jnp.linalg.norm(d)
    rate = d @ qdb[0, :2] / length
    tension = params["k"] * (length - params["l0"]) + params["c"] * rate
    return jnp.concatenate([-tension * d / length, jnp.zeros(1)])[None]


def _oscillators() -> rx.Mechanism:
    return rx.Mechanism(
        bodies=[
            rx.Body("mass", M, 0.01, position=(L0 + A, 0.0)),
            rx.Body("wheel", 1.0, J_WHEEL, position=(0.0, 1.0)),
            rx.Body("rotor", 1.0, J_ROTOR, position=(0.0, 2.0)),
            rx.Body("twin", M, 0.01, position=(L0 + A, 3.0)),
        ],
        pairs=[],
        forces=[
            rx.forces.SpringDamper("mass", "ground", stiffness=K, free_length=L0),
            rx.forces.RotationalSpringDamper(
                "wheel", "ground", stiffness=K_WHEEL, free_angle=-THETA0
            ),
            rx.forces.TimeDependentLoad(
                "rotor", torque=TAU0, profile=rx.motions.Polynomial([0.0, 1.0])
            ),
            rx.forces.CustomForce(
                ("twin",),
                _twin_law,
                params={"anchor": [0.0, 3.0], "k": K, "l0": L0, "c": 0.0},
            ),
        ],
    )


def _with(model, damping: float = 0.0, torque: float = TAU0, stiffness: float = K):
    """The oscillators with damping ratio `damping` on `mass`, `wheel` and `twin`."""
    c = 2.0 * damping * math.sqrt(K * M)
    c_wheel = 2.0 * damping * math.sqrt(K_WHEEL * J_WHEEL)
    return eqx.tree_at(
        lambda m: (
            m.forces[0].stiffness,
            m.forces[0].damping,
            m.forces[1].damping,
            m.forces[2].torque,
            m.forces[3].params["c"],
        ),
        model,
        (
            jnp.full(1, stiffness, dtype=float),
            jnp.full(1, c, dtype=float),
            jnp.full(1, c_wheel, dtype=float),
            jnp.full((1, 1), torque, dtype=float),
            jnp.full(1, c, dtype=float),
        ),
    )


@pytest.fixture(scope="module")
def oscillators():
    mech = _oscillators()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def undamped(oscillators):
    model, state = oscillators
    return rx.simulate(model, state, T1, saveat=rx.SaveAt(n=N_SAVE), **TIGHT)


@jax.jit
def _evaluate(model, q, qd, t):
    """F(q, q̇, t) and V(q), compiled once for the oscillators."""
    return rx.equations.generalized_forces(model, q, qd, t), rx.equations.potential_energy(model, q)


def _damped_oscillation(t, amplitude, omega, zeta):
    """x(t) of ẍ + 2ζω ẋ + ω² x = 0 from x(0) = amplitude at rest."""
    wd = omega * math.sqrt(1.0 - zeta**2)
    return (
        amplitude
        * np.exp(-zeta * omega * t)
        * (np.cos(wd * t) + zeta / math.sqrt(1.0 - zeta**2) * np.sin(wd * t))
    )


def test_spring_mass_and_torsion_periods(undamped):
    t = np.asarray(undamped.ts)
    q = np.asarray(undamped.q).reshape(len(t), 4, 3)
    omega, omega_wheel = math.sqrt(K / M), math.sqrt(K_WHEEL / J_WHEEL)
    assert 2 * math.pi / omega == pytest.approx(1.0)  # the period 2π√(m/k), one second
    np.testing.assert_allclose(q[:, 0, 0], L0 + A * np.cos(omega * t), atol=TOL_OSCILLATOR)
    np.testing.assert_allclose(q[:, 0, 1:], 0.0, atol=TOL_OSCILLATOR)
    np.testing.assert_allclose(
        q[:, 1, 2], -THETA0 + THETA0 * np.cos(omega_wheel * t), atol=TOL_OSCILLATOR
    )


def test_time_dependent_torque(undamped):
    t = np.asarray(undamped.ts)
    phi = np.asarray(undamped.q).reshape(len(t), 4, 3)[:, 2, 2]
    # J φ̈ = τ₀ t from rest: φ = τ₀ t³ / (6 J).
    np.testing.assert_allclose(phi, TAU0 * t**3 / (6.0 * J_ROTOR), atol=TOL_OSCILLATOR)


def test_user_force_law_equals_the_built_in_spring(oscillators, undamped):
    q = np.asarray(undamped.q).reshape(N_SAVE, 4, 3)
    np.testing.assert_allclose(q[:, 3, 0], q[:, 0, 0], atol=TOL_OSCILLATOR)
    np.testing.assert_allclose(q[:, 3, 1], 3.0, atol=TOL_OSCILLATOR)
    # With damping and away from the axis too: the same generalised force.
    model, state = oscillators
    damped = _with(model, damping=ZETA)
    q0 = state.q.at[jnp.array([0, 1, 9, 10])].set(jnp.array([0.3, 0.2, 0.3, 3.2]))
    qd0 = jnp.tile(jnp.array([0.4, -0.3, 0.2]), 4)
    F = _evaluate(damped, q0, qd0, 0.4)[0]
    np.testing.assert_allclose(F[9:], F[:3], rtol=TOL_EXACT, atol=TOL_EXACT)


def test_damped_decay(oscillators):
    model, state = oscillators
    traj = rx.simulate(_with(model, damping=ZETA), state, T1, saveat=rx.SaveAt(n=N_SAVE), **TIGHT)
    t = np.asarray(traj.ts)
    q = np.asarray(traj.q).reshape(len(t), 4, 3)
    x = _damped_oscillation(t, A, math.sqrt(K / M), ZETA)
    np.testing.assert_allclose(q[:, 0, 0] - L0, x, atol=TOL_OSCILLATOR)
    np.testing.assert_allclose(q[:, 3, 0] - L0, x, atol=TOL_OSCILLATOR)  # the user law
    theta = _damped_oscillation(t, THETA0, math.sqrt(K_WHEEL / J_WHEEL), ZETA)
    np.testing.assert_allclose(q[:, 1, 2] + THETA0, theta, atol=TOL_OSCILLATOR)
    # The envelope: after one damped period the amplitude is A exp(−ζ ω T_d).
    omega = math.sqrt(K / M)
    period = 2 * math.pi / (omega * math.sqrt(1 - ZETA**2))
    assert _damped_oscillation(period, A, omega, ZETA) == pytest.approx(
        A * math.exp(-ZETA * omega * period), rel=1e-12
    )


def test_energy_of_undamped_springs_is_conserved(oscillators):
    model, state = oscillators
    # No torque on the rotor; the twin (whose user law stores no potential) at rest at l₀.
    q0 = state.q.at[9].set(L0)
    traj = rx.simulate(
        _with(model, torque=0.0),
        rx.State(0.0, q0, state.qd),
        T1,
        saveat=rx.SaveAt(n=N_SAVE),
        **TIGHT,
    )
    energy = np.asarray(traj.energy)
    expected = 0.5 * K * A**2 + 0.5 * K_WHEEL * THETA0**2  # all potential at t = 0
    assert energy[0] == pytest.approx(expected, rel=TOL_EXACT)
    assert np.max(np.abs(energy - energy[0])) <= TOL_ENERGY_RELATIVE * expected
    assert float(np.ptp(np.asarray(traj.q)[:, 0])) > A  # it moved


def test_grad_and_vmap_over_stiffness(oscillators):
    model, state = oscillators
    k_save = 3  # t = 0.3 s
    t = k_save * T1 / (N_SAVE - 1)

    def x_at(k):
        traj = rx.simulate(
            _with(model, stiffness=k), state, T1, saveat=rx.SaveAt(n=N_SAVE), **TIGHT
        )
        return traj.q[k_save, 0]

    # One compiled program for both: the gradient of every member of a batch.
    ks = jnp.array([0.8 * K, K, 1.3 * K])
    values, grads = jax.vmap(jax.value_and_grad(x_at))(ks)
    looped = [float(x_at(k)) for k in ks]  # the unbatched program of the other tests
    np.testing.assert_allclose(values, looped, rtol=0.0, atol=1e-12)
    omega = np.sqrt(np.asarray(ks) / M)  # x = l₀ + A cos(√(k/m) t)
    np.testing.assert_allclose(values, L0 + A * np.cos(omega * t), atol=TOL_OSCILLATOR)
    fd = central_difference(lambda k: x_at(jnp.asarray(k[0])), np.array([K]))[0]
    assert float(grads[1]) == pytest.approx(fd, rel=TOL_FD_SOLVE)
    exact = -A * np.sin(omega * t) * t / (2.0 * np.sqrt(np.asarray(ks) * M))
    np.testing.assert_allclose(grads, exact, rtol=TOL_FD_SOLVE)


def test_jit_equals_eager_and_zero_length_is_finite():
    mech = rx.Mechanism(
        [rx.Body("mass", M, 0.01, position=(L0 + A, 0.0))],
        [],
        forces=[rx.forces.SpringDamper("mass", "ground", stiffness=K, damping=0.3, free_length=L0)],
    )
    model = mech.build()
    q, qd = jnp.array([0.3, 0.4, 0.5]), jnp.array([-0.2, 0.7, 1.1])
    with jax.disable_jit():
        eager = (
            rx.equations.generalized_forces(model, q, qd, 0.7),
            rx.equations.potential_energy(model, q),
        )
    jitted = _evaluate(model, q, qd, 0.7)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=TOL_EXACT, atol=TOL_EXACT)
    np.testing.assert_allclose(jitted[1], eager[1], rtol=TOL_EXACT)
    d, length = np.array([0.3, 0.4]), 0.5  # the closed form: tension along the line
    tension = K * (length - L0) + 0.3 * (d @ np.array([-0.2, 0.7]) / length)
    np.testing.assert_allclose(eager[0], [*(-tension * d / length), 0.0], rtol=TOL_EXACT)
    # The points coincide: no NaN in the force, in its derivatives or in the gradient
    # in the stiffness (the line has no direction: the force is zero there).
    F, dF, dk = _at_zero_length(model, jnp.zeros(3), qd)
    assert np.all(np.isfinite(F)) and np.all(np.isfinite(dF)) and np.all(np.isfinite(dk))
    np.testing.assert_allclose(F, 0.0)


@jax.jit
def _at_zero_length(model, q, qd):
    def force(x):
        return rx.equations.generalized_forces(model, x[0], x[1], 0.7)

    def energy(k):
        return rx.equations.potential_energy(
            eqx.tree_at(lambda m: m.forces[0].stiffness, model, k), q
        )

    dF = jax.jacfwd(force)(jnp.stack([q, qd]))
    return (
        force(jnp.stack([q, qd])),
        dF,
        jax.grad(lambda k: jnp.sum(energy(k)))(model.forces[0].stiffness),
    )


# ---------------------------------------------------------------------- spatial
L_BEAM, M_BEAM, KZ, KRY = 1.0, 2.0, 1.0e4, 50.0
J_DISC, K_DISC, C_DISC = (0.2, 0.2, 0.3), 4.0, 0.5
K_BALL, C_BALL, L0_BALL, F_LOAD = 30.0, 0.7, 0.4, (1.5, 0.0, 0.0)
G = 9.81


def _spatial() -> rx.Mechanism:
    def wrench(params, qb, qdb, t):  # a constant force and torque on the ball
        del qb, qdb, t
        return params[None]

    return rx.Mechanism(
        bodies=[
            rx.SpatialBody("beam", M_BEAM, (0.01, 0.2, 0.2), position=(L_BEAM / 2, 0.0, 0.0)),
            rx.SpatialBody("disc", 1.0, J_DISC, position=(0.0, 2.0, 0.0)),
            rx.SpatialBody("ball", 1.0, (0.1, 0.1, 0.1), position=(0.0, -2.0, -0.6)),
        ],
        pairs=[rx.joints.Revolute3D("J", "disc", "ground", point=(0.0, 2.0, 0.0), axis=(0, 0, 1))],
        gravity=(0.0, 0.0, -G),
        forces=[
            rx.forces.Bushing(
                "ground",
                "beam",
                point=(0.0, 0.0, 0.0),
                stiffness=(1e4, 1e4, KZ),
                rotational_stiffness=(80.0, KRY, 80.0),
                damping=(1.0, 1.0, 1.0),
            ),
            rx.forces.RotationalSpringDamper(
                "disc", "ground", stiffness=K_DISC, damping=C_DISC, axis=(0.0, 0.0, 1.0)
            ),
            rx.forces.SpringDamper(
                "ball",
                "ground",
                stiffness=K_BALL,
                damping=C_BALL,
                free_length=L0_BALL,
                point_j=(0.0, -2.0, 0.0),
            ),
            rx.forces.TimeDependentLoad(
                "ball", force=F_LOAD, profile=rx.motions.Polynomial([0.0, 2.0])
            ),
            rx.forces.CustomForce(("ball",), wrench, params=[0.0, 0.4, 0.0, 0.0, 0.0, 0.05]),
        ],
    )


def _rot(axis: int, angle: float) -> np.ndarray:
    """Rotation by `angle` about the global axis `axis` (right-handed)."""
    c, s = math.cos(angle), math.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


@jax.jit
def _wrenches(model, q, qd, t):
    """The applied forces on each body as its wrench [force; moment about the centre of
    mass] (global components): Tᵀ F with ṗ = T [v; ω] (`wrench_basis`); and V(q)."""
    P, F = q.reshape(-1, 12), rx.equations.generalized_forces(model, q, qd, t).reshape(-1, 12)
    T = jax.vmap(model.bodies.wrench_basis)(P, model.bodies.centre_of_mass())
    return jnp.einsum("bkw,bk->bw", T, F), rx.equations.potential_energy(model, q)


def test_spatial_elements_against_closed_forms():
    model = _spatial().build()

    # The beam at its static deflection: the bushing point sinks by m g / k_z and the
    # beam turns about y by sin θ = (m g L/2) / k_ry (the bushing's small-rotation
    # measure of a rotation θ is sin θ: exact for this measure).
    dz = -M_BEAM * G / KZ
    theta = math.asin(M_BEAM * G * (L_BEAM / 2) / KRY)
    R_beam = _rot(1, theta)  # x tilts towards −z for θ > 0
    beam_centre = np.array([0.0, 0.0, dz]) + R_beam @ np.array([L_BEAM / 2, 0.0, 0.0])
    beam = natural_from_pose(jnp.asarray(beam_centre), jnp.asarray(R_beam))
    # The disc turned by α about the axis at ω: the torque −(k α + c ω) about it.
    alpha, w = 0.3, -1.2
    R_disc = _rot(2, alpha)
    disc = natural_from_pose(jnp.array([0.0, 2.0, 0.0]), jnp.asarray(R_disc))
    disc_rate = jnp.concatenate(
        [jnp.zeros(3), jnp.cross(jnp.array([0.0, 0.0, w]), R_disc.T).reshape(9)]
    )
    # The ball 0.6 m below its anchor, moving up at 0.25 m/s.
    ball = natural_from_pose(jnp.array([0.0, -2.0, -0.6]), jnp.eye(3))
    ball_rate = jnp.zeros(12).at[2].set(0.25)
    q = jnp.concatenate([beam, disc, ball])
    qd = jnp.concatenate([jnp.zeros(12), disc_rate, ball_rate])
    t = 0.5
    wrench, V = _wrenches(model, q, qd, t)
    wrench = np.asarray(wrench)

    # The beam's bushing holds its weight and the weight's moment: nothing is left.
    np.testing.assert_allclose(wrench[0], 0.0, atol=TOL_STATIC * M_BEAM * G)
    # ... and with 10 % less sag a tenth of the weight is left (the check can fail).
    less_sag = np.asarray(_wrenches(model, q.at[2].add(-0.1 * dz), qd, t)[0])[0]
    left = 0.1 * M_BEAM * G
    np.testing.assert_allclose(
        less_sag, [0, 0, -left, 0, -left * L_BEAM / 2 * math.cos(theta), 0], atol=1e-9
    )
    # The disc: its weight and the torsion spring-damper's torque about the axis.
    np.testing.assert_allclose(
        wrench[1], [0, 0, -G, 0, 0, -(K_DISC * alpha + C_DISC * w)], atol=1e-12
    )
    # The ball: the spring-damper's tension k (l − l₀) + c l̇ (up), its weight, the
    # time-dependent load s(t) F with s = 2t, the user force (0, 0.4, 0) and torque 0.05.
    stretch, rate = 0.6 - L0_BALL, -0.25
    tension = K_BALL * stretch + C_BALL * rate
    expected = [2.0 * t * F_LOAD[0], 0.4, tension - G, 0, 0, 0.05]
    np.testing.assert_allclose(wrench[2], expected, atol=1e-12)

    # The elements' energy is part of the potential: the bushing's ½ k_z dz² + ½ k_ry
    # sin² θ, the torsion spring's ½ k α², the ball's spring's ½ k (l − l₀)², gravity.
    stored = 0.5 * (KZ * dz**2 + KRY * math.sin(theta) ** 2 + K_DISC * alpha**2)
    stored += 0.5 * K_BALL * stretch**2
    gravity = G * (M_BEAM * float(beam[2]) + 1.0 * 0.0 + 1.0 * -0.6)
    assert float(V) == pytest.approx(stored + gravity, rel=1e-12)


# ---------------------------------------------------------------------- Andrews
ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def test_andrews_squeezer_against_the_test_set():
    columns, rows = read_reference("A03_andrews_testset_y0_and_yref_t0.03.csv", dtype=str)
    table = {row[1]: row for row in rows}
    y0 = np.array([float(table[n][columns.index("y0_t0")]) for n in ANGLES])
    reference = np.array([float(table[n][columns.index("yref_t0.03")]) for n in ANGLES])

    config = load_config(CONFIGS / "andrews.toml")
    model = models.andrews(y0).build()
    leaves, treedef = jax.tree.flatten(config.model)
    expected, expected_treedef = jax.tree.flatten(model)
    assert treedef == expected_treedef
    for a, b in zip(leaves, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert config.nonconservative == ()  # the spring and the torque are conservative

    traj = rx.simulate(config.model, config.state, 0.03, saveat=rx.SaveAt(n=2), **TIGHT)
    phi = np.asarray(traj.q[-1]).reshape(7, 3)[:, 2]
    angles = np.array(models.andrews_angles(phi))
    np.testing.assert_allclose(angles, reference, atol=TOL_ANDREWS_ANGLE)
    assert abs(angles[0]) > 15.0  # β turned 2.5 times: no angle was wrapped


# ---------------------------------------------------------------------- validation
def test_python_specs_are_validated():
    bodies = [rx.Body("a", 1.0, 0.1, position=(1.0, 0.0)), rx.Body("b", 1.0, 0.1)]
    forces = [
        rx.forces.SpringDamper("a", "ground", stiffness=1.0),
        rx.forces.SpringDamper("a", "b", stiffness=-1.0, damping=float("nan")),
        rx.forces.SpringDamper("a", "nowhere", stiffness=float("inf"), point_i=(1.0, 2.0, 3.0)),
        rx.forces.RotationalSpringDamper("b", "b", stiffness=1.0, damping=-2.0),
        rx.forces.SpringDamper("b", "ground"),
        rx.forces.SpringDamper("b", "ground", stiffness=1.0, free_length=0.3),
        rx.forces.Bushing("a", "b", point=(0, 0, 0), stiffness=(1, 1, 1)),
        rx.forces.TimeDependentLoad("a", profile=rx.motions.Constant(2.0), torque=(1.0, 2.0)),
        "spring",
    ]
    with pytest.raises(ValueError) as err:
        rx.Mechanism(bodies, [], forces=forces).build()
    message = str(err.value)
    for expected in (
        "force 1 field 'stiffness': must be zero or positive, got -1.0",
        "force 1 field 'damping': must be finite",
        "force 2 field 'body_j': unknown body 'nowhere'",
        "force 2 field 'stiffness': must be finite",
        "force 2 field 'point_i': expected a vector of length 2",
        "force 3: body_i and body_j are the same body 'b'",
        "force 3 field 'damping': must be zero or positive, got -2.0",
        "force 4: stiffness, damping and preload are all zero",
        "force 5: the points coincide at the initial configuration",
        "force 6: a Bushing is spatial",
        "force 7 field 'torque': expected a vector of length 1",
        "force 8: unknown force element 'str'",
    ):
        assert expected in message, expected
    assert "force 0" not in message
    bad_law = rx.Mechanism(
        bodies, [], forces=[rx.forces.CustomForce(("a",), lambda p, qb, qdb, t: jnp.zeros(2))]
    ).build()
    with pytest.raises(ValueError, match=r"returned shape \(2,\); expected \(1, 3\)"):
        _evaluate(bad_law, jnp.zeros(6), jnp.zeros(6), 0.0)
    spatial = rx.Mechanism(
        [rx.SpatialBody("s", 1.0, (1.0, 1.0, 1.0))],
        [],
        forces=[rx.forces.RotationalSpringDamper("s", "ground", stiffness=1.0)],
    )
    with pytest.raises(ValueError, match="force 0 field 'axis': required in a spatial"):
        spatial.build()


PLANAR = """
[[bodies]]
name = "a"
mass = 1.0
inertia = 0.1
position = [1.0, 0.0]

[[bodies]]
name = "b"
mass = 1.0
inertia = 0.1
position = [0.0, 1.0]
"""

SPATIAL = """
[mechanism]
dim = 3

[[bodies]]
name = "a"
mass = 1.0
inertia = [1.0, 1.0, 1.0]
position = [1.0, 0.0, 0.0]
"""

GOOD_PLANAR = """
[[forces]]
type = "spring-damper"
body_i = "a"
body_j = "ground"
stiffness = 10.0
damping = 0.5
free_length = 0.8
preload = 1.0
point_i = [0.1, 0.0]

[[forces]]
type = "rotational-spring-damper"
body_i = "b"
body_j = "a"
stiffness = 2.0
free_angle = 0.1

[[forces]]
type = "time-dependent-load"
body = "b"
force = [1.0, 0.0]
torque = 0.5
profile = { type = "smooth-steps", times = [0.0, 1.0], values = [0.0, 1.0] }
"""

GOOD_SPATIAL = """
[[forces]]
type = "bushing"
body_i = "a"
body_j = "ground"
point = [1.0, 0.0, 0.0]
stiffness = [1.0, 2.0, 3.0]
rotational_stiffness = [4.0, 5.0, 6.0]
axes = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]

[[forces]]
type = "rotational-spring-damper"
body_i = "a"
body_j = "ground"
axis = [0.0, 0.0, 1.0]
damping = 0.1
"""


def test_config_forces_build_the_python_model(tmp_path):
    planar = {
        "spring-damper",
        "rotational-spring-damper",
        "time-dependent-load",
        "joint-friction",
    }
    assert set(TYPES["force"]) == planar
    assert set(TYPES["spatial-force"]) == set(TYPES["force"]) | {"bushing"}
    for table in ("force", "spatial-force"):
        for type_name, kind in TYPES[table].items():
            assert kind.build.kind == type_name
    path = tmp_path / "forces.toml"
    path.write_text(PLANAR + GOOD_PLANAR)
    config = load_config(path)
    bodies = [
        rx.Body("a", 1.0, 0.1, position=(1.0, 0.0)),
        rx.Body("b", 1.0, 0.1, position=(0.0, 1.0)),
    ]
    python = rx.Mechanism(
        bodies,
        [],
        forces=[
            rx.forces.SpringDamper("a", "ground", 10.0, 0.5, 0.8, 1.0, point_i=(0.1, 0.0)),
            rx.forces.RotationalSpringDamper("b", "a", stiffness=2.0, free_angle=0.1),
            rx.forces.TimeDependentLoad(
                "b", rx.motions.SmoothSteps([0.0, 1.0], [0.0, 1.0]), (1.0, 0.0), torque=0.5
            ),
        ],
    ).build()
    assert jax.tree.structure(config.model) == jax.tree.structure(python)
    for x, y in zip(jax.tree.leaves(config.model), jax.tree.leaves(python), strict=True):
        np.testing.assert_array_equal(x, y)
    assert config.nonconservative == ("forces[0] (damper)", "forces[2] (time-dependent load)")
    # Sweeps address the elements' parameters by their index in the file.
    targets = parameter_targets(config.model, config.state)
    assert targets["forces[0].stiffness"].nominal == 10.0
    assert targets["forces[1].free_angle"].unit == "rad"
    assert targets["forces[2].force.x"].nominal == 1.0
    k = targets["forces[0].stiffness"]
    changed, _ = apply_parameters(config.model, config.state, [k], jnp.array([12.0]))
    assert float(changed.forces[0].stiffness[0]) == 12.0

    path.write_text(SPATIAL + GOOD_SPATIAL)
    config = load_config(path)
    assert [type(g).__name__ for g in config.model.forces] == [
        "BushingElement",
        "RotationalSpringDamperElement3D",
    ]
    assert config.nonconservative == ("forces[1] (damper)",)
    assert (
        parameter_targets(config.model, config.state)["forces[0].rotational_stiffness.z"].nominal
        == 6.0
    )


_SPRING = 'type = "spring-damper"\nbody_i = "a"\nbody_j = "ground"\n'
_ROTATIONAL = 'type = "rotational-spring-damper"\nbody_i = "a"\nbody_j = "ground"\n'
_LOAD = 'type = "time-dependent-load"\nbody = "a"\n'
_BUSHING = 'type = "bushing"\nbody_i = "a"\nbody_j = "ground"\npoint = [0.0, 0.0, 0.0]\n'
_NOT_A_ROTATION = "[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]"
BAD_FORCES = [
    # (file, [[forces]] entry, key named, message)
    (PLANAR, _SPRING + "stiffness = -1.0", "stiffness", "must be zero or positive"),
    (PLANAR, _SPRING + "stiffness = nan", "stiffness", "must be finite"),
    (PLANAR, _SPRING + "stiffness = inf", "stiffness", "must be finite"),
    (PLANAR, _SPRING + "damping = -0.5", "damping", "must be zero or positive"),
    (PLANAR, _SPRING + "stiffness = 1.0\nfree_length = -0.1", "free_length", "zero or positive"),
    (PLANAR, _SPRING + 'stiffness = "1e3"', "stiffness", "write the number without quotes"),
    (
        PLANAR,
        _SPRING.replace('"ground"', '"gound"') + "stiffness = 1.0",
        "body_j",
        "unknown body 'gound' (did you mean 'ground'?",
    ),
    (
        PLANAR,
        _SPRING + "stiffness = 1.0\npoint_i = [1.0, 2.0, 3.0]",
        "point_i",
        "expected a vector [x, y] of 2 numbers",
    ),
    (PLANAR, _SPRING + "stifness = 1.0", None, "unknown key 'stifness' (did you mean 'stiffness'?"),
    (PLANAR, _SPRING, None, "the element does nothing"),
    (
        PLANAR,
        _SPRING.replace('"ground"', '"a"') + "stiffness = 1.0",
        None,
        "body_i and body_j are the same body 'a'",
    ),
    (PLANAR, 'type = "spring"\nbody_i = "a"', "type", "unknown force type 'spring'"),
    (PLANAR, 'body_i = "a"\nstiffness = 1.0', None, "missing required key 'type'"),
    (PLANAR, _BUSHING, "type", "'bushing' is a spatial force type, but the mechanism is planar"),
    (PLANAR, _ROTATIONAL + "stiffness = 1.0\naxis = [0.0, 0.0, 1.0]", None, "unknown key 'axis'"),
    (PLANAR, _LOAD + "torque = 1.0", None, "missing required key 'profile'"),
    (PLANAR, _LOAD + 'profile = { type = "linear" }', "profile", "unknown motion type 'linear'"),
    (SPATIAL, _ROTATIONAL + "stiffness = 1.0", None, "missing required key 'axis'"),
    (
        SPATIAL,
        _ROTATIONAL + "stiffness = 1.0\naxis = [0.0, 0.0, 0.0]",
        "axis",
        "must be a non-zero vector",
    ),
    (
        SPATIAL,
        _BUSHING + "stiffness = [1.0, -1.0, 1.0]",
        "stiffness",
        "every component must be zero or positive",
    ),
    (
        SPATIAL,
        _BUSHING + "rotational_stiffness = [1.0, 1.0]",
        "rotational_stiffness",
        "expected a vector [x, y, z] of 3 numbers",
    ),
    (
        SPATIAL,
        _BUSHING.replace("point = [0.0, 0.0, 0.0]\n", "") + "stiffness = [1.0, 1.0, 1.0]",
        None,
        "missing required key 'point'",
    ),
    (
        SPATIAL,
        _BUSHING + f"stiffness = [1.0, 1.0, 1.0]\naxes = {_NOT_A_ROTATION}",
        "axes",
        "not a proper rotation matrix",
    ),
]


@pytest.mark.parametrize(("base", "entry", "key", "message"), BAD_FORCES)
def test_bad_force_tables_name_file_table_and_key(tmp_path, base, entry, key, message):
    path = tmp_path / "bad.toml"
    path.write_text(base + "\n[[forces]]\n" + entry + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert text.startswith(f"{path}: forces[0]"), text
    if key is not None:
        assert text.startswith(f"{path}: forces[0] key {key!r}"), text
    assert message in text, text
