"""Joint friction that knows which reactions exist (issue 38), against references
computed here: a block sliding on a plane (the closed form: deceleration μ g,
stopping distance v₀²/(2 μ g)); a pendulum with pin friction against its reduced
1-DOF model, whose pin force (and so its friction) depends on the acceleration it
causes, solved and integrated in the test; the planar four-bar built with spatial
revolutes (p = 3), whose in-plane pin forces are unique: the same motion under every
method of handling the redundancy, and friction that reads a bending moment (not
unique) refused by name. Bad input is named."""

import dataclasses
import json
from pathlib import Path

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax import Body, Mechanism, cli, models
from redundax.forces import JointFriction
from redundax.joints import Translational

G = 9.81
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TIGHT = diffrax.PIDController(rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------- the block
MU_BLOCK, V0, MASS = 0.3, 2.0, 1.5
V_T = 1e-3  # transition velocity [m/s]


def _block(**friction):
    law = dict(coefficient=MU_BLOCK, inputs={"normal force": 1.0}, transition_velocity=V_T)
    return Mechanism(
        bodies=[Body("block", MASS, 0.1, velocity=(V0, 0.0))],
        pairs=[Translational("slide", "block", "ground", normal=(0.0, 1.0))],
        gravity=(0.0, -G),
        forces=[JointFriction("slide", **{**law, **friction})],
    )


def test_the_command_line_reports_the_friction(capsys):
    """`redundax simulate configs/block_friction.toml --json` (the block above, 1 s):
    the stopping point, and in `friction` the work, −½ m v₀² (friction took all the
    kinetic energy; the trapezoid rule over 1,001 states), and the share of the
    second it spent in the stiction band, 1 − v₀/(μ g) plus the v_t/(μ g) it takes to
    slow from v_t (within one saved interval)."""
    status = cli.main(["simulate", str(CONFIGS / "block_friction.toml"), "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    s = json.loads(out)
    assert s["final_q"][0] == pytest.approx(V0**2 / (2 * MU_BLOCK * G), abs=1e-6)
    assert s["nonconservative"] == ["forces[0] (joint friction)"]
    friction = s["friction"]["forces[0]"]
    assert friction["pair"] == "slide"
    assert friction["work"] == pytest.approx(-0.5 * MASS * V0**2, rel=1e-5)
    stop = V0 / (MU_BLOCK * G)
    band = V_T / (MU_BLOCK * G)
    assert friction["stiction_share"] == pytest.approx(1 - stop + band, abs=2e-3)


# ---------------------------------------------------------------- the pendulum
L, M, J = 1.0, 1.0, 0.1
MU, PIN = 0.2, 0.05  # coefficient, pin radius [m]
W_T = 1e-2  # transition angular velocity [rad/s]


def _pendulum():
    mech = models.pendulum(length=L, mass=M, inertia=J)
    friction = JointFriction(
        "O", coefficient=MU, inputs={"radial force": PIN}, transition_velocity=W_T
    )
    return dataclasses.replace(mech, forces=[friction])


def _reduced_pendulum(ts):
    """θ(t) of the pendulum in its angle (released at rest, horizontal): I_O θ̈ =
    M g L cos θ − μ r |F| tanh(θ̇ / ω_t), the pin force F = M (a_G − g) depending on
    θ̈ itself (solved by fixed-point iteration, contraction μ r M L / I_O ≈ 0.01)."""
    inertia = J + M * L**2

    def acceleration(th, w):
        def pin_force(a):
            a_g = L * jnp.stack(
                [a * jnp.sin(th) + w**2 * jnp.cos(th), -a * jnp.cos(th) + w**2 * jnp.sin(th)]
            )
            return M * (a_g - jnp.array([0.0, -G]))

        def update(a, _):
            torque = -MU * PIN * jnp.linalg.norm(pin_force(a)) * jnp.tanh(w / W_T)
            return (M * G * L * jnp.cos(th) + torque) / inertia, None

        return jax.lax.scan(update, 0.0, None, length=60)[0]

    def field(t, y, args):
        del t, args
        return jnp.stack([y[1], acceleration(y[0], y[1])])

    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(field), diffrax.Dopri8(), ts[0], ts[-1], 1e-3, jnp.zeros(2),
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-13),
        saveat=diffrax.SaveAt(ts=ts), max_steps=100_000,
    )  # fmt: skip
    return solution.ys[:, 0]


def test_pendulum_with_pin_friction_against_its_reduced_model():
    """Friction from the pin's radial force (unique, p = 0) against the reduced
    1-DOF model integrated here: the angle to 1e-7 rad over 3 s of decaying swings,
    and the swing lost to friction is real (the first swing falls short of the
    frictionless one, to θ = π, by more than 0.05 rad)."""
    mech = _pendulum()
    ts = jnp.linspace(0.0, 3.0, 31)
    run = rx.simulate(
        mech.build(), mech.initial_state(), 3.0, stepsize_controller=TIGHT,
        saveat=rx.SaveAt(ts=ts),
    )  # fmt: skip
    assert np.all(run.valid)
    theta = np.asarray(run.q[:, 2])
    want = np.asarray(_reduced_pendulum(ts))
    np.testing.assert_allclose(theta, want, atol=1e-7)
    assert np.max(theta) < np.pi - 0.05  # the frictionless pendulum swings to π


# ------------------------------------------------------- the spatial four-bar
def _spatial_four_bar(inputs):
    """The planar four-bar built with spatial revolutes, gravity tilted out of its
    plane: the joints' axial forces and bending moments (not unique, p = 3) carry the
    out-of-plane part, the in-plane (radial) forces are unique and move the links."""
    mech = models.spatial_twin(models.four_bar(crank_angle=0.6))
    mech = dataclasses.replace(mech, gravity=(0.0, -G, -3.0))
    friction = [
        JointFriction(pair, coefficient=0.15, inputs=inputs, transition_velocity=1e-2)
        for pair in ("O", "A", "B", "D")
    ]
    return dataclasses.replace(mech, forces=friction)


def test_friction_from_unique_reactions_moves_alike_under_every_method():
    """The planar four-bar built with spatial revolutes (p = 3): the in-plane (radial)
    pin forces are unique, so friction that reads them is one generalised force
    whatever the method. The motion (one run, null-space method; it falls and swings,
    the pins slipping) and, at each of its saved states, the accelerations under the
    null-space method, elimination, a mass-weighted minimum norm and the augmented
    Lagrangian agree to round-off: the same right-hand side along the motion is the
    same motion. (One run, not four: each method's run is a program of its own to
    compile, the accelerations at a state a small one.)"""
    mech = _spatial_four_bar({"radial force": 0.02})
    model = mech.build()
    structure = rx.decide(model, mech.initial_state().q)
    assert int(structure.rank) == model.n_constraints - 3
    ts = jnp.linspace(0.0, 0.5, 6)
    run = rx.simulate(
        model, mech.initial_state(), 0.5, structure=structure, stepsize_controller=TIGHT,
        saveat=rx.SaveAt(ts=ts),
    )  # fmt: skip
    assert np.all(run.valid)
    moved = np.abs(np.asarray(run.q[-1] - run.q[0])).max()
    assert moved > 0.05  # it falls and swings
    assert np.abs(np.asarray(run.qd[1:])).max() > 1.0  # the pins slip: friction acts
    qdds = {}
    for method in (
        rx.methods.NullSpace(),
        rx.methods.eliminate(model, mech.initial_state().q),
        rx.methods.WeightedMinimumNorm(),
        rx.methods.AugmentedLagrangian(),
    ):
        qdds[type(method).__name__] = np.stack(
            [
                np.asarray(
                    rx.equations.solve_dynamics(
                        model, q, qd, t, structure=structure, method=method
                    )[0]
                )
                for q, qd, t in zip(run.q, run.qd, run.ts, strict=True)
            ]
        )
    reference = qdds.pop("NullSpace")
    scale = np.abs(reference).max()
    # Measured: elimination and the minimum norm 2e-14 of max |q̈|, the augmented
    # Lagrangian (iterated to its tolerance) 4e-11.
    for name, qdd in qdds.items():
        np.testing.assert_allclose(qdd, reference, atol=1e-9 * scale, err_msg=name)


def test_friction_that_reads_a_reaction_that_does_not_exist_is_refused():
    """The bending moments of the spatial four-bar's pins are not unique (p = 3):
    friction that reads them is refused before the run, naming the joint and the
    component and the remedies; with a compliant method (joint stiffnesses) it
    runs, and the friction's sensitivity to the stiffnesses is reported (against
    central differences). (Friction from the unique radial forces does not depend on
    them: the same motion under every method, above.)"""
    mech = _spatial_four_bar({"radial force": 0.02, "bending moment": 0.1})
    model = mech.build()
    with pytest.raises(rx.ModelError) as error:
        rx.simulate(model, mech.initial_state(), 0.1)
    text = str(error.value)
    assert "force 0 (joint friction in 'O') reads its bending moment (bending moment e1" in text
    assert "remedies: drop that input; use load-independent friction" in text
    compliant = rx.methods.Compliant(rx.methods.joint_stiffness(model, (1e8, 1e6)))
    few = rx.SaveAt(n=11)
    run = rx.simulate(model, mech.initial_state(), 0.1, method=compliant, saveat=few)
    assert np.all(run.valid)
    # The compliant joints' stiffnesses decide the bending moments, and so the
    # friction: its sensitivity to them (∂ mean |f| / ∂ ln k_p, the motion held) is
    # reported, a quarter of the friction per e-fold here, and equals central
    # differences of the report's own friction over a pair's stiffness.
    report = rx.analysis.friction_report(model, run, method=compliant)
    sensitivity = np.asarray(report.stiffness_sensitivity)  # (elements, pairs)
    mean = np.abs(np.asarray(report.friction)).mean(axis=0)
    e, p = np.unravel_index(np.argmax(np.abs(sensitivity)), sensitivity.shape)
    assert abs(sensitivity[e, p]) > 0.1 * mean[e]
    h, rows = 1e-4, list(model.pairs[p].rows)

    def mean_friction(scale):
        k = compliant.stiffness.at[np.asarray(rows)].multiply(scale)
        again = rx.analysis.friction_report(model, run, method=rx.methods.Compliant(k))
        w = np.full(11, 1.0)
        w[[0, -1]] = 0.5
        return w @ np.abs(np.asarray(again.friction[:, e])) / 10

    fd = (mean_friction(np.exp(h)) - mean_friction(np.exp(-h))) / (2 * h)
    assert sensitivity[e, p] == pytest.approx(fd, rel=1e-5)


def test_bad_friction_input_is_named():
    """A negative coefficient, friction in a joint that has no single free motion,
    an unknown pair and an unknown load input: each named, all in one error."""
    base = _block()
    bad = dataclasses.replace(
        base,
        forces=[
            JointFriction("slide", coefficient=-0.1, inputs={"normal force": 1.0}),
            JointFriction("nowhere", coefficient=0.1, preload=1.0),
            JointFriction("slide", coefficient=0.1, inputs={"bending": 1.0}),
        ],
    )
    with pytest.raises(rx.ModelError) as error:
        bad.build()
    text = str(error.value)
    assert "force 0 field 'coefficient': must be zero or positive, got -0.1" in text
    assert "force 1 field 'pair': no pair named 'nowhere' (pairs: 'slide')" in text
    assert "'bending' is not a load input of the translational joint 'slide'" in text
    assert "its inputs: 'normal force', 'moment'" in text
    weld = models.four_bar()
    D = weld.pairs[-1]
    weld = dataclasses.replace(
        weld,
        pairs=[*weld.pairs[:-1], rx.joints.Weld("D", D.body_i, D.body_j, D.point_i, D.point_j)],
        forces=[JointFriction("D", coefficient=0.1, preload=1.0)],
    )
    with pytest.raises(rx.ModelError, match="pair 'D' is a weld"):
        weld.build()


def test_a_block_slides_to_rest_as_coulomb_says_under_jit_vmap_and_grad():
    """Coulomb friction on a plane: the normal force is m g (the slide's reaction,
    unique), the block decelerates at μ g and stops after v₀²/(2 μ g). The regularised
    law (tanh(v / v_t)) differs only below v ≈ v_t: the speed at half the stopping
    time is the closed form's to round-off, and the block creeps at most ~v_t²/(μ g)
    (3e-7 m) past the closed-form stop. The run under `jax.jit`, `jax.vmap` over the
    coefficient and `jax.grad` with respect to it, all three in one program (which
    also gives the motion above, μ = 0.3): the stopping point is v₀²/(2 μ g) (to the
    creep) at each μ, its derivative −v₀²/(2 μ² g) (closed form)."""
    mech = _block()
    model = mech.build()
    stop = V0 / (MU_BLOCK * G)
    state = mech.initial_state()

    def final_x(mu):
        m = eqx.tree_at(lambda m: m.forces[0].coefficient, model, jnp.reshape(mu, (1,)))
        run = rx.simulate(
            m, state, 2 * stop, stepsize_controller=TIGHT, saveat=rx.SaveAt(n=5), monitor=None
        )
        return run.q[-1, 0], (run.q[:, 0], run.qd[:, 0], run.valid)

    mus = jnp.array([MU_BLOCK, 0.4])
    (_, (xs, vs, valid)), dx = jax.jit(jax.vmap(jax.value_and_grad(final_x, has_aux=True)))(mus)
    assert np.all(valid)
    # μ = 0.3: the motion at 0, T/2 and 2T (T the closed-form stopping time).
    x, v = np.asarray(xs[0, [0, 1, 4]]), np.asarray(vs[0, [0, 1, 4]])
    assert v[1] == pytest.approx(V0 - MU_BLOCK * G * stop / 2, abs=1e-9)
    assert x[1] == pytest.approx(V0 * stop / 2 - MU_BLOCK * G * (stop / 2) ** 2 / 2, abs=1e-9)
    distance = V0**2 / (2 * MU_BLOCK * G)
    assert 0.0 <= x[2] - distance < 1e-6
    assert abs(v[2]) < 1e-9
    # Every μ: where it stops, and how that moves with μ.
    np.testing.assert_allclose(xs[:, -1], V0**2 / (2 * mus * G), atol=1e-6)
    np.testing.assert_allclose(dx, -(V0**2) / (2 * mus**2 * G), rtol=1e-4)


def test_where_friction_is_not_solved_with_the_reactions_it_is_refused():
    """Statics (equilibrium, linearisation, compliant equilibrium), joint coordinates
    and the compliant stepper take the applied forces without the reactions: each
    refuses joint friction by name instead of leaving it out."""
    mech = _pendulum()
    model, state = mech.build(), mech.initial_state()
    q = state.q
    k = rx.methods.joint_stiffness(model, 1e8)
    for call in (
        lambda: rx.equilibrium(model, q),
        lambda: rx.statics.linearize(model, q, jnp.zeros_like(q)),
        lambda: rx.statics.compliant_equilibrium(model, q, k),
        lambda: rx.joint_coordinates.joint_model(model, q),
        lambda: rx.simulate(model, state, 0.1, solver=rx.GonzalezStepper(h=1e-3)),
    ):
        with pytest.raises(rx.ModelError, match=r"force 0 \(joint friction in 'O'\)"):
            call()


def test_friction_on_the_block_sparse_path_is_refused():
    """A mechanism of 150 coordinates or more takes the null-space method's block-sparse
    path by default, which forms no multipliers at each evaluation: joint friction is
    refused there by name, with the way round (block=False)."""
    mech = models.n_four_bar(30)  # 183 coordinates
    friction = JointFriction("O0", coefficient=0.1, inputs={"radial force": 0.01})
    mech = dataclasses.replace(mech, forces=[friction])
    with pytest.raises(rx.ModelError, match=r"NullSpace\(block=False\)"):
        rx.simulate(mech.build(), mech.initial_state(), 0.1)
