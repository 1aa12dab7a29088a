"""Runs in joint coordinates (issue 12): the projection after every step solved by
the DCA, rotation vectors re-charted before their singular length, reactions with
seed 002's verdicts, and `redundax simulate --coordinates joint` with its JSON and
run files.

Independent sources: the dense joint-space Newton step computed here (mass matrix
and loop rows by autodiff, a pseudo-inverse in NumPy), the absolute-coordinate
simulation and reactions of the same mechanism, and the exact motion of IFToMM A02
(`helpers.a02_exact_b0`, SciPy on the 1-DOF reduction) with its flat poses."""

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import (
    TOL_A02_POSITION,
    a02_config,
    a02_exact_b0,
    a02_flat_instants,
    central_difference,
    consistent_states,
    four_bar_apart,
)
from redundax import models
from redundax._reactions import MEMORY_BUDGET
from redundax.cli import main
from redundax.io import load_config, read_run

# One Newton step of two formulations (round-off of the mappings), relative.
TOL_SAME_STEP = 1e-9
# Autodiff through a motion against central differences of the same program.
TOL_GRADIENT = 1e-6
# Invariants of the top over 1 s at rtol 1e-10, relative.
TOL_INVARIANT = 1e-8
# Unique reactions of the two formulations, relative to the largest.
TOL_SAME_REACTION = 1e-7
# The DCA's accelerations of a pendulum bob of J = 1e-10 m L², relative: it inverts
# the bob's inertia, so round-off grows like m L² / J (measured 1.3e-5 at J = 1e-12).
TOL_POINT_MASS = 1e-5


def _dense_newton_step(jm, structure, q):
    """Δq = M⁻¹ C_kᵀ (C_k M⁻¹ C_kᵀ)⁻¹ r: the least kinetic-metric joint increment
    with C_k Δq = r, C_k the loop rows less those the DCA dropped (off the
    manifold they are no longer dependent: which rows hold is part of the step),
    r their Φ; dense."""
    terms = rx.joint_coordinates.joint_space_terms(jm, q, jnp.zeros_like(q), 0.0)
    dropped = {structure.rows.rows[i] for i in structure.active.dropped}
    keep = [k for k, row in enumerate(jm.closure_rows) if row not in dropped]
    assert len(keep) == len(jm.closure_rows) - structure.redundancy
    M, C = np.asarray(terms.M), np.asarray(terms.C)[keep]
    x = jm.absolute_coordinates(q)
    rows = np.asarray(jm.closure_rows)[keep]
    r = np.asarray(rx.equations.position_residual(jm.model, x, 0.0))[rows]
    Minv = np.linalg.inv(M)
    return Minv @ C.T @ np.linalg.solve(C @ Minv @ C.T, r)


def test_the_dca_projection_is_the_dense_newton_step():
    """On Bricard's linkage (p = 1) one position step of `project_joint_state` from
    a configuration off the loop equals the dense mass-weighted Newton step on the
    rows the DCA keeps; three steps close the loop to round-off, and the velocity
    step leaves C ẋ + b at round-off."""
    mech = models.bricard()
    model, state0 = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state0.q)
    (state,) = consistent_states(model, state0, 1, seed=3)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, js)
    rng = np.random.default_rng(0)
    q = js.q + 1e-3 * rng.standard_normal(js.q.shape)  # off the loop, on the tree
    qd = js.qd + 1e-2 * rng.standard_normal(js.q.shape)
    one = rx.joint_coordinates.project_joint_state(
        jm, structure, rx.drift.StepProjection(iterations=1), q, qd, 0.0
    )[0]
    dense = q - _dense_newton_step(jm, structure, q)
    step = np.asarray(q - dense)
    assert np.max(np.abs(step)) > 1e-5  # a real correction
    np.testing.assert_allclose(one, dense, rtol=0, atol=TOL_SAME_STEP * np.max(np.abs(step)))
    q3, qd3 = q, qd
    for _ in range(3):  # the same program three times: Newton's convergence
        q3, qd3 = rx.joint_coordinates.project_joint_state(
            jm, structure, rx.drift.StepProjection(iterations=1), q3, qd3, 0.0
        )
    x, xd = jax.jvp(jm.absolute_coordinates, (q3,), (qd3,))
    assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, x, 0.0)))) < 1e-13
    assert float(jnp.max(jnp.abs(rx.equations.velocity_residual(model, x, xd, 0.0)))) < 1e-12


TOP_MASS, TOP_INERTIA = 1.0, (0.012, 0.012, 0.02)


def _spinning_top():
    """A symmetric top on a spherical joint at its tip, tilted 0.3 rad, spinning
    at 30 rad/s about its axis: 1 s turns its rotation vector through about 30
    rad, so the joint coordinates must be re-charted five times."""
    tilt = 0.3
    axis = (0.0, -np.sin(tilt), np.cos(tilt))
    c, s = np.cos(tilt), np.sin(tilt)
    rotation = ((1.0, 0.0, 0.0), (0.0, c, -s), (0.0, s, c))
    top = rx.SpatialBody(
        "top",
        TOP_MASS,
        TOP_INERTIA,
        position=tuple(0.1 * a for a in axis),
        rotation=rotation,
        angular_velocity=tuple(30.0 * a for a in axis),
    )
    return rx.Mechanism(
        [top],
        [rx.joints.Spherical("S", "top", "ground", point=(0.0, 0.0, 0.0))],
        gravity=(0.0, 0.0, -9.81),
        markers=[rx.Marker("rim", "top", (0.05, 0.0, 0.0))],
    )


def _tumbling_body():
    """A free body (no joint: a free-3d joint in joint coordinates) turning about an
    axis off its principal axes, 1 s at about 20 rad/s."""
    body = rx.SpatialBody("box", 2.0, (0.05, 0.08, 0.11), angular_velocity=(3.0, 1.0, 20.0))
    return rx.Mechanism([body], [], gravity=(0.0, 0.0, 0.0),
                        markers=[rx.Marker("corner", "box", (0.1, 0.05, 0.02))])  # fmt: skip


def _long_rotation_vector(mech):
    """The joint model of a one-joint mechanism, a state, the rotation vector's
    slots, and the state with that vector lengthened to |θ| ≈ 5 rad."""
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    (group,) = jm.joints
    slots = group.coordinates[0, -3:]  # the rotation vector (spherical, or free-3d's last 3)
    long = js.q.at[slots].set(js.q[slots] + 5.0 * jnp.asarray([0.6, 0.0, 0.8]))
    return model, state, jm, js, slots, long


def _top_invariants(x, xd):
    """Energy-independent invariants of the symmetric top pivoted at the origin under
    gravity along −z: L_z (angular momentum about the vertical through the pivot)
    and ω·w (the spin about its axis), from natural coordinates r, u, v, w."""
    r, R = x[:, 0:3], np.stack([x[:, 3:6], x[:, 6:9], x[:, 9:12]], axis=2)  # columns u, v, w
    rd, Rd = xd[:, 0:3], np.stack([xd[:, 3:6], xd[:, 6:9], xd[:, 9:12]], axis=2)
    Omega = np.einsum("tij,tkj->tik", Rd, R)  # Ṙ Rᵀ = [ω]×
    omega = np.stack([Omega[:, 2, 1], Omega[:, 0, 2], Omega[:, 1, 0]], axis=1)
    inertia = np.einsum("tij,j,tkj->tik", R, np.asarray(TOP_INERTIA), R)
    L = np.einsum("tij,tj->ti", inertia, omega) + TOP_MASS * np.cross(r, rd)
    return L[:, 2], np.einsum("ti,ti->t", omega, R[:, :, 2])


def test_rotation_vectors_are_recharted_and_the_top_keeps_its_invariants():
    """Re-charting keeps the state (the same pose and twist in absolute
    coordinates: spherical and free joints) and brings |θ| below 4π/3. The spinning
    top through five re-chartings in 1 s keeps its energy, its angular momentum
    about the vertical and its spin (closed-form invariants of a symmetric top)."""
    from redundax.joint_coordinates._kinematics import RECHART, rechart_rotation_vectors

    for mech in (_tumbling_body(), _spinning_top()):
        model, state, jm, js, slots, long = _long_rotation_vector(mech)
        x_long, xd_long = jax.jvp(jm.absolute_coordinates, (long,), (js.qd,))
        q2, qd2 = rechart_rotation_vectors(jm.joints, long, js.qd)
        assert float(jnp.linalg.norm(q2[slots])) < RECHART < float(jnp.linalg.norm(long[slots]))
        x2, xd2 = jax.jvp(jm.absolute_coordinates, (q2,), (qd2,))
        np.testing.assert_allclose(x2, x_long, rtol=0, atol=1e-13)
        np.testing.assert_allclose(xd2, xd_long, rtol=0, atol=1e-12)

    traj = rx.simulate(
        jm,
        js,
        1.0,
        saveat=rx.SaveAt(n=201),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    theta = np.linalg.norm(np.asarray(traj.q)[:, np.asarray(slots)], axis=1)
    # Saved states are interpolated inside a step, before its end re-charts them.
    assert theta.max() < 2.0 * np.pi - 1.0
    assert np.sum(np.abs(np.diff(theta)) > 1.0) >= 4  # the chart changed, again and again
    energy = np.asarray(traj.energy)
    lz, spin = _top_invariants(np.asarray(traj.x), np.asarray(traj.xd))
    assert abs(spin[0] - 30.0) < 1e-9
    for invariant in (energy, lz, spin):
        assert np.max(np.abs(invariant - invariant[0])) < TOL_INVARIANT * np.max(np.abs(invariant))


def test_joint_reactions_are_the_absolute_reactions():
    """At consistent states of the four-bar (every reaction unique) the DCA's
    wrenches, joint moments and total reaction F − M ẍ equal the absolute
    null-space method's; the verdicts are the report's. jit and vmap over states ≡
    a loop. (Bricard, where nothing is unique: `test_joint_coordinates` checks its
    accelerations, hence its total reaction.)"""
    for mechanism, all_unique in ((models.four_bar, True),):
        mech = mechanism()
        model, state0 = mech.build(), mech.initial_state()
        jm = rx.joint_coordinates.joint_model(model, state0.q)
        states = consistent_states(model, state0, 2, seed=5)
        js = [rx.joint_coordinates.to_joint_state(jm, s) for s in states]
        structure = rx.joint_coordinates.decide_joint(jm, js[0])
        report = rx.joint_coordinates.joint_uniqueness(jm, structure, js[0])
        assert all(report.unique) == all_unique and any(report.unique) == all_unique
        batched = jax.jit(
            jax.vmap(
                lambda q, qd: rx.joint_coordinates.joint_reactions(
                    jm, structure, report, q, qd, 0.0
                )
            )
        )(jnp.stack([s.q for s in js]), jnp.stack([s.qd for s in js]))
        for k, (s, j) in enumerate(zip(states, js, strict=True)):
            mine = rx.joint_coordinates.joint_reactions(jm, structure, report, j.q, j.qd, 0.0)
            ref = rx.reactions(model, s.q, s.qd, s.t)
            np.testing.assert_array_equal(mine.unique, report.stable_unique)
            scale = float(jnp.max(jnp.abs(ref.total)))
            np.testing.assert_allclose(
                mine.total, ref.total, rtol=0, atol=TOL_SAME_REACTION * scale
            )
            if all_unique:
                scale = float(jnp.max(jnp.abs(ref.wrench)))
                for field in ("wrench", "joint_moment"):
                    np.testing.assert_allclose(
                        getattr(mine, field), getattr(ref, field), rtol=0,
                        atol=TOL_SAME_REACTION * scale,
                    )  # fmt: skip
            np.testing.assert_allclose(batched.wrench[k], mine.wrench, rtol=0, atol=1e-10)


def test_joint_runs_claim_the_verdicts_of_absolute_runs():
    """What a run claims is what holds at the generic configuration next to the
    initial one too (README step 4), in joint coordinates as in absolute ones: the
    DCA's reactions of the mobile robot and of Bricard's linkage carry, per pair
    and per component, the verdicts of the absolute path's reactions at the same
    state (`rx.reactions`, its `Structure`'s stable verdicts). The robot's B and C
    x forces are unique at its initial configuration (wheels straight ahead: the
    analysis there says so) but not in a turn, so neither path claims them."""
    reports = {}
    for name, mechanism in (("robot", models.mobile_robot), ("bricard", models.bricard)):
        mech = mechanism()
        model, state = mech.build(), mech.initial_state()
        jm = rx.joint_coordinates.joint_model(model, state.q)
        js = rx.joint_coordinates.to_joint_state(jm, state)
        structure = rx.joint_coordinates.decide_joint(jm, js)
        report = reports[name] = rx.joint_coordinates.joint_uniqueness(jm, structure, js)
        mine = rx.joint_coordinates.joint_reactions(jm, structure, report, js.q, js.qd, js.t)
        ref = rx.reactions(model, state.q, state.qd, state.t)
        np.testing.assert_array_equal(mine.unique, ref.unique)
        rows = [r for pair in model.pairs for r in pair.rows]  # the pairs' rows of C
        np.testing.assert_array_equal(
            np.asarray(mine.component_unique)[rows], np.asarray(ref.component_unique)[rows]
        )
        np.testing.assert_array_equal(report.stable_unique, np.asarray(ref.unique))
        for k, pair in enumerate(model.pairs):
            flags = tuple(bool(ref.component_unique[r]) for r in pair.rows)
            assert report.stable_row_unique[k] == flags, pair.name
    robot = reports["robot"]
    for name in ("B", "C"):
        k = robot.names.index(name)
        assert robot.row_unique[k] == (True, False), name  # at the configuration
        assert robot.stable_row_unique[k] == (False, False), name  # what a run claims
        assert not robot.unique[k] and robot.stable_step[k] == robot.step[k]
    # A pair unique here but not nearby would name that as what decided it.
    a = robot.names.index("A")
    assert robot.unique[a] and robot.stable_unique[a] and robot.stable_step[a] == robot.step[a]
    flipped = robot.stable_unique[:a] + (False,) + robot.stable_unique[a + 1 :]
    assert dataclasses.replace(robot, stable_unique=flipped).stable_step[a] == "nearby"


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def test_simulate_in_joint_coordinates_from_the_command_line(tmp_path: Path):
    """IFToMM A02 (one parallelogram) for 3 s in joint coordinates from its
    configuration file: B0 follows the exact motion through the three flat poses
    (each reported inside its save interval), every reaction unique with the step
    that decided it, and the run file holds the DCA's reactions, the joint
    histories and seed 002's verdicts; the file's `redundax plot` draws."""
    config = tmp_path / "a02.toml"
    config.write_text(a02_config(1, 3.0, 61), encoding="utf-8")
    out = tmp_path / "run.npz"
    status, stdout, stderr = _run(
        "simulate", config, "--coordinates", "joint", "--json", "--out", out
    )
    assert status == 0, stderr
    s = json.loads(stdout)
    assert s["coordinates"] == "joint" and s["method"] == "DCA"
    assert s["joint_coordinates"] == ["O0.angle", "O1.angle", "A1.angle"]
    assert s["cut_joints"] == ["B1"] and s["redundancy"] == 0
    assert all(s["unique"].values()) and set(s["decided_by"]) == set(s["unique"])
    exact = a02_exact_b0(1, np.asarray([s["t_final"]]))[0]
    assert np.max(np.abs(np.asarray(s["tracked"]["B0"]) - exact)) < TOL_A02_POSITION
    flat = a02_flat_instants(1, 3.0)
    passages = s["singular_passages"]
    assert len(passages) == len(flat)
    for passage, t in zip(passages, flat, strict=True):
        lo, hi = passage["window"]
        assert lo <= t <= hi and hi - lo <= 3.0 / 60 + 1e-12
    run = read_run(out)
    assert run["meta"]["method"] == "DCA" and run["solvability"]["coordinates"] == "joint"
    assert run["joint"]["names"] == tuple(s["joint_coordinates"])
    b0 = run["tracked"]["B0"]
    assert np.max(np.abs(b0 - a02_exact_b0(1, run["t"]))) < TOL_A02_POSITION
    np.testing.assert_allclose(run["joint"]["q"][-1], s["final_joint_q"], rtol=0, atol=1e-12)
    assert all(run["unique"].values())
    # The reactions balance the motion: the sum of the pairs' forces on each body
    # equals m a − m g (a body's generalised reaction is F − M ẍ).
    forces = sum(run["reactions"][name][..., :2] for name in run["reactions"])
    q, qdd = run["q"].reshape(len(run["t"]), -1, 3), run["qdd"].reshape(len(run["t"]), -1, 3)
    assert q.shape[1] == 3
    np.testing.assert_allclose(forces, qdd[..., :2] - np.asarray([0.0, -9.81]), rtol=0, atol=1e-6)
    status, _, stderr = _run("plot", out, "--only", "solvability")
    assert status == 0, stderr


def test_joint_runs_refuse_what_they_do_not_offer(tmp_path: Path):
    """A projection at the saved states only is refused naming the key; a
    configuration that breaks a tree joint is refused naming the joint."""
    config = tmp_path / "a02.toml"
    config.write_text(
        a02_config(1, 0.1, 3).replace("[simulation]", "[simulation]\nprojection = true"),
        encoding="utf-8",
    )
    status, _, stderr = _run("simulate", config, "--coordinates", "joint")
    assert status == 2 and "projection = true" in stderr and "joint coordinates" in stderr
    with pytest.raises(TypeError, match="Projection is not offered in joint coordinates"):
        mech = models.four_bar()
        model, state = mech.build(), mech.initial_state()
        jm = rx.joint_coordinates.joint_model(model, state.q)
        rx.simulate(
            jm,
            rx.joint_coordinates.to_joint_state(jm, state),
            0.1,
            drift_control=rx.drift.Projection(),
        )


def test_simulate_joint_under_grad():
    """The gradient of the final x of the four-bar's crank centre with respect to
    the crank's length (its pin A moved along it, through 0.3 s of motion in joint
    coordinates) equals central differences."""
    mech = models.four_bar()
    model, state0 = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state0.q)
    states = [
        rx.joint_coordinates.to_joint_state(jm, s)
        for s in consistent_states(model, state0, 2, seed=1)
    ]
    structure = rx.joint_coordinates.decide_joint(jm, states[0])
    (revolutes,) = model.holonomic
    a = model.pair_names.index("A")

    def final(jm, q, qd):
        state = rx.State(jnp.asarray(0.0), q, qd)
        traj = rx.simulate(
            jm,
            state,
            0.3,
            structure=structure,
            saveat=rx.SaveAt(n=2),
            drift_control=rx.drift.Baumgarte(),
        )
        return traj.x[-1]

    def crank_x(scale):
        moved = eqx.tree_at(
            lambda m: m.model.holonomic[0].s_i, jm, revolutes.s_i.at[a].multiply(scale)
        )
        return final(moved, states[0].q, states[0].qd)[0]

    # One compiled program serves the gradient and the differences' values: every
    # call passes a NumPy float64 scalar (a Python float is weakly typed and would
    # compile the program a second time).
    value_and_grad = jax.jit(jax.value_and_grad(crank_x))
    grad = float(value_and_grad(np.float64(1.0))[1])
    fd = float(central_difference(lambda s: value_and_grad(s[0])[0], np.asarray([1.0]))[0])
    assert abs(grad) > 1e-3
    assert abs(grad - fd) < TOL_GRADIENT * max(1.0, abs(fd))
    # Motions from several states at once (`vmap`) equal the motions one by one: the
    # joint-coordinate path through the one door, eager ≡ `jit` ≡ `vmap`, is
    # test_door.py::test_joint_runs_eager_jit_vmap_alike.


# The working memory `redundax simulate` gives the reactions along a run by default
# (`--memory-budget`), in bytes as it passes them: the same chunks, the same program.
_CLI_MEMORY_BUDGET = int(MEMORY_BUDGET / 2**30 * 2**30)


@pytest.fixture(scope="module")
def robot_joint_run():
    """The mobile robot of `configs/mobile_robot.toml` run 1.6 s in joint
    coordinates with the options `redundax simulate --coordinates joint` takes from
    that file (201 saved states, rtol 1e-8, atol 1e-10, Dopri8, a projection after
    every step, in segments for progress reports, throw=False): the programs of
    the command-line run of `test_joint_coordinates.py` (the one process of the two
    files compiles them once; t1 is an array, so 1.6 s and the command's 0.2 s are
    one program): `(model, joint model, report, trajectory)`."""
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "mobile_robot.toml")
    model, state, options = config.model, config.state, config.simulation
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, jstate)
    report = rx.joint_coordinates.joint_uniqueness(jm, structure, jstate)
    trajectory = rx.simulate(
        jm,
        jstate,
        1.6,
        structure=structure,
        saveat=options.saveat,
        stepsize_controller=options.stepsize_controller,
        solver=options.solver,
        drift_control=options.drift_control,
        max_steps=options.max_steps,
        throw=False,
        progress=rx.Progress(),
    )
    assert bool(np.all(trajectory.valid))
    return model, jm, report, trajectory


def test_write_run_of_a_joint_run_stores_the_verdicts_a_run_claims(robot_joint_run, tmp_path):
    """`write_run(..., joint_report=report)` with no verdicts of its own stores the
    report's stable ones (what the command line passes, and what an absolute run's
    file holds): the robot's B x force is unique at the start only, so not claimed;
    the run file's solvability keeps the verdicts at the initial configuration."""
    from redundax.io import write_run

    model, jm, report, trajectory = robot_joint_run
    history = rx.joint_coordinates.joint_reaction_history(
        jm, trajectory, report, memory_budget=_CLI_MEMORY_BUDGET
    )
    out = write_run(tmp_path / "run.npz", model, trajectory, history, joint_report=report)
    run = read_run(out)
    assert run["component_unique"]["B"] == {"force x": False, "force y": False}
    assert run["unique"] == dict(zip(report.names, report.stable_unique, strict=True))
    assert dict(zip(report.names, report.row_unique, strict=True))["B"] == (True, False)


def test_a_joint_run_refuses_a_state_the_projection_cannot_assemble(tmp_path: Path):
    """The four-bar with its ground pivots 3 m apart (links 0.4 + 1.2 + 0.8 m) and
    `initial = "project"`: no configuration closes the loop, so `--coordinates
    joint` exits 2 as the absolute run does, instead of starting from the state the
    projection left."""
    path = four_bar_apart(tmp_path)
    status, out, err = _run("simulate", path, "--coordinates", "joint", "--json")
    assert status == 2 and out == ""
    assert "the initial state could not be projected onto the constraints" in err
    assert "pair 'D': position residual" in err


def _pendulum_on_a_parallelogram():
    """The parallelogram with a third crank (p = 1: no reaction of its pairs is
    unique) at rest with its cranks upright, and a pendulum (a 2 kg bob, its centre
    0.5 m below the pin) hung by one revolute joint at the coupler's centre."""
    base = models.parallelogram(3)
    (coupler,) = [b for b in base.bodies if b.name == "coupler"]
    cx, cy = coupler.position
    bob = rx.Body("bob", mass=2.0, inertia=0.1, position=(cx, cy - 0.5), angle=-np.pi / 2)
    pin = rx.joints.Revolute("pin", "bob", "coupler", point_i=(-0.5, 0.0), point_j=(0.0, 0.0))
    return dataclasses.replace(base, bodies=[*base.bodies, bob], pairs=[*base.pairs, pin])


def test_step_2_decides_a_body_with_one_pair():
    """Seed 002's step 2 ("a body with one pair") fires: the pendulum's pin on the
    coupler of a redundant parallelogram (p = 1) is the bob's only pair, so its
    reaction balances the bob's inertia and weight alone and is unique, while
    the assembly that owns the pin cannot say so (its handles, the coupler's
    cranks, are not unique). The verdicts, per pair and at the generic
    configuration next to it, are the absolute model's `rx.decide`'s, and the pin's
    wrench on the bob at rest under gravity is the bob's own balance, (0, m g, 0)
    (and the absolute path's)."""
    mech = _pendulum_on_a_parallelogram()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, js)
    report = rx.joint_coordinates.joint_uniqueness(jm, structure, js)
    assert report.redundancy == 1
    decided = dict(zip(report.names, report.step, strict=True))
    assert decided["pin"] == "one pair" and report.verdict("pin")
    assert dict(zip(report.names, report.stable_step, strict=True))["pin"] == "one pair"
    assert [n for n, u in zip(report.names, report.unique, strict=True) if u] == ["pin"]
    # The independent reference: the QR test on the absolute-coordinate C.
    ref = rx.decide(model, state.q, state.t)
    np.testing.assert_array_equal(report.unique, np.asarray(ref.unique))
    np.testing.assert_array_equal(report.stable_unique, np.asarray(ref.stable_unique))
    # At rest (cranks upright, the bob straight below the pin) nothing accelerates:
    # the pin holds the bob's weight, its moment is zero.
    assert float(jnp.max(jnp.abs(js.qd))) == 0.0
    reactions = rx.joint_coordinates.joint_reactions(jm, structure, report, js.q, js.qd, js.t)
    wrench, unique = reactions.pair("pin")
    weight = 2.0 * 9.81
    bob = model.bodies.names.index("bob")
    assert bool(unique)
    np.testing.assert_allclose(wrench[bob], [0.0, weight, 0.0], rtol=0, atol=1e-12 * weight)
    absolute = rx.reactions(model, state.q, state.qd, state.t).pair("pin")[0]
    np.testing.assert_allclose(wrench, absolute, rtol=0, atol=TOL_SAME_REACTION * weight)


# The mobile robot's platform pose (x, y, φ) at t = 1.6 s, past the steering's knots
# at 0.5 and 1.5 s: the absolute-coordinate run (`rx.simulate(model, state, 1.6)`,
# PIDController(rtol=1e-12, atol=1e-14), 31 + 4 steps; at rtol 1e-10 it agrees to
# 1.2e-14), computed 2026-11-28.
ROBOT_POSE_AT_1_6 = (1.157574171640257, -0.00278253694755995, -0.08767039536618802)
# Steps (accepted + rejected) of the absolute run over those 1.6 s at the default
# tolerances (12 + 4, with its steps clipped onto the knots); the joint run took 37 +
# 55 before its steps were clipped too, 13 + 3 after.
ROBOT_ABSOLUTE_STEPS = 16


def test_joint_runs_step_onto_the_drivers_knots(robot_joint_run):
    """A joint-coordinate run's steps end on the knots of the drivers' motions, as
    an absolute run's do (`completed_controller`): the mobile robot steered by its
    `SmoothSteps` profile (knots at 0.5 and 1.5 s; q̈ is not smooth across them)
    for 1.6 s takes as many steps as the absolute run (16; 92 before, most of them
    rejected across the knots) and ends at the absolute run's platform pose."""
    from redundax.joint_coordinates._run_validity import controller

    model, jm, _, trajectory = robot_joint_run
    clipped = controller(jm, 1e-8, 1e-10, 0.0, 1.6)
    assert isinstance(clipped, diffrax.ClipStepSizeController)
    np.testing.assert_array_equal(clipped.step_ts, [0.0, 0.5, 1.5, 2.5, 3.5, 5.5, 6.5, 7.5, 8.5])
    assert abs(float(trajectory.ts[-1]) - 1.6) < 1e-12
    assert int(trajectory.num_steps) <= 1.5 * ROBOT_ABSOLUTE_STEPS
    platform = model.bodies.names.index("platform")
    pose = np.asarray(trajectory.x[-1]).reshape(-1, 3)[platform]
    np.testing.assert_allclose(pose, ROBOT_POSE_AT_1_6, rtol=0, atol=1e-8)


def _near_point_masses(mech, ratio: float):
    """`mech` with every planar body's rotational inertia `ratio` · m L² (L: the
    largest distance from its centre to one of its pairs' points, else 1 m)."""
    bodies = []
    for b in mech.bodies:
        arms = [
            np.hypot(*point)
            for pair in mech.pairs
            for name, point in ((pair.body_i, pair.point_i), (pair.body_j, pair.point_j))
            if name == b.name
        ]
        length = max(arms, default=1.0)
        bodies.append(dataclasses.replace(b, inertia=ratio * b.mass * length**2))
    return dataclasses.replace(mech, bodies=bodies)


@pytest.mark.parametrize(
    "name, mech",
    [
        # A pendulum bob, J = 1e-10 m L².
        ("pendulum", models.pendulum(angle=0.3, inertia=1e-10)),
        # The parallelogram with a third crank (p = 1), its links point masses.
        ("parallelogram", _near_point_masses(models.parallelogram(3), 1e-11)),
        # Bricard's linkage of thin wires: axial moments 2e-10 of the transverse ones.
        ("bricard", models.bricard(side=1e-5)),
    ],
)
def test_decisions_do_not_depend_on_how_the_inertia_is_spread(name, mech):
    """Which rows are dependent is kinematic, but the DCA's decision weighed the rows
    by M⁻¹: a body of small rotational inertia J pinned at a distance L makes its
    pin's two rows meet at an angle with sin² ≈ J/(m L²) in that metric, and below
    the decision's 1e-8 one was dropped. A pendulum with J = 1e-10 m L² then fell
    off its pin and its run ended at the wrong angle, reported a success (J = 1e-12:
    ConstraintsLeftError). The redundancy and the verdicts are now the absolute
    model's (`rx.decide`, the QR of C: no masses), and at rest the DCA's
    accelerations are the pendulum's closed form."""
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, js)
    report = rx.joint_coordinates.joint_uniqueness(jm, structure, js)
    ref = rx.decide(model, state.q, state.t)
    assert report.redundancy == int(ref.redundancy)
    np.testing.assert_array_equal(report.unique, np.asarray(ref.unique))
    if name == "pendulum":
        # Released at rest, angle a from −x: a'' = g cos a · m L² / (m L² + J); the
        # bob at (−L cos a, −L sin a) accelerates along the tangent (sin a, −cos a).
        (bob,) = mech.bodies
        a, length, g = bob.angle, 1.0, 9.81
        add = g * np.cos(a) / length * bob.mass * length**2 / (bob.mass * length**2 + bob.inertia)
        expected = [length * np.sin(a) * add, -length * np.cos(a) * add, add]
        xdd = rx.joint_coordinates.dca_dynamics(jm, structure, js.q, js.qd, js.t).xdd
        np.testing.assert_allclose(xdd, expected, rtol=TOL_POINT_MASS)


def test_a_failed_joint_run_names_the_bodies_whose_inertia_the_dca_cannot_invert():
    """A pendulum bob of J = 1e-14 m L²: the DCA's accelerations carry round-off
    amplified 1e14 and the run grinds to `max_steps`; the error says which body and
    what to do (absolute coordinates never invert M), not only "raise max_steps"."""
    mech = models.pendulum(angle=0.3, inertia=1e-14)
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    with pytest.raises(RuntimeError, match=r"'bob' \(1e\+14\).*absolute coordinates"):
        rx.simulate(jm, js, 1.0, max_steps=200)
