"""Issue 34 with the user's own mechanisms: a motion that leaves its constraints is a
failure (Python and command line), verdicts hold for a flat-plate inertia, and
gradients are finite at a 3-fold symmetric design.

The independent checks: a least-squares assembly by SciPy (no configuration
satisfies the constraints just after the time the run stopped, while one does just
before), a NumPy SVD of C for the verdicts, and central differences."""

import dataclasses
import json
import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import least_squares

import redundax as rx
from helpers import CONFIGS, central_difference, three_rrr
from redundax import cli, models

# A configuration assembled by least squares: residual round-off [m].
TOL_ASSEMBLED = 1e-9
# Off the workspace by at least this much a short time after the run stopped [m].
TOL_UNASSEMBLABLE = 1e-5
# Central differences through a projection and a reaction (h ~ eps^(1/3)).
TOL_GRADIENT = 1e-6
# The same at the steps below (measured: 7e-9 and 4e-8 relative).
TOL_GRADIENT_H = 1e-5


def _assembly_residual(model, q_guess, t):
    """max |Φ(q, t)| at the best least-squares assembly near `q_guess` (SciPy)."""
    phi = jax.jit(lambda q: rx.equations.position_residual(model, q, t))
    jac = jax.jit(jax.jacfwd(lambda q: rx.equations.position_residual(model, q, t)))
    fit = least_squares(
        lambda q: np.asarray(phi(q)), np.asarray(q_guess), jac=lambda q: np.asarray(jac(q)),
        xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200,
    )  # fmt: skip
    return float(np.max(np.abs(fit.fun)))


@pytest.fixture(scope="module")
def three_rrr_out():
    """The 3-RRR driven +0.15 rad: out of its workspace during the step."""
    mech = three_rrr(+0.15)
    return mech.build(), mech.initial_state()


def test_a_motion_out_of_the_workspace_is_a_failure(three_rrr_out):
    """The run stops where the mechanism can no longer be assembled: a SciPy
    least-squares assembly finds a configuration on the constraints at the last
    valid saved time and none 0.02 s after the stop. `throw=True` raises naming the
    time; `throw=False` returns the run with `valid` False from there on."""
    model, state = three_rrr_out
    traj = rx.simulate(model, state, 1.5, throw=False)
    assert bool(traj.left_constraints)
    t_left = float(traj.left_at)
    assert 0.0 < t_left < 1.0  # during the drivers' step
    assert float(traj.left_violation) > float(traj.tolerances.step)
    valid = np.asarray(traj.valid)
    ts = np.asarray(traj.ts)
    assert np.all(valid[ts < t_left - 1e-3]) and not np.any(valid[ts > t_left])
    last = int(np.flatnonzero(valid)[-1])
    assert float(np.max(traj.position_violation[: last + 1])) < 1e-8
    assert _assembly_residual(model, traj.q[last], ts[last]) < TOL_ASSEMBLED
    assert _assembly_residual(model, traj.q[last], t_left + 0.02) > TOL_UNASSEMBLABLE
    with pytest.raises(rx.ConstraintsLeftError, match=r"left its constraints at t = 0\.\d+ s") as e:
        rx.simulate(model, state, 1.5)
    # The same motion by a program that differs (throw): its step ends differ by
    # round-off amplified by the step-size control, within a small part of a step.
    assert e.value.t == pytest.approx(t_left, abs=1e-3)
    assert e.value.valid_until == pytest.approx(ts[last], abs=0.01)


def test_a_motion_inside_the_workspace_stays_valid():
    """Driven −0.15 rad the 3-RRR stays inside its workspace: valid throughout (no
    false alarm), the constraints held to the projection's round-off."""
    mech = three_rrr(-0.15)
    traj = rx.simulate(mech.build(), mech.initial_state(), 1.5)
    assert bool(np.all(traj.valid)) and not bool(traj.left_constraints)
    assert float(traj.left_at) == math.inf
    assert float(np.max(traj.position_violation)) < 1e-8


def test_a_run_out_of_steps_did_not_leave_its_constraints():
    """A run stopped by `max_steps` inside the workspace failed for that reason:
    `RuntimeError` naming Diffrax's reason (not `ConstraintsLeftError`), and with
    `throw=False` its unreached states are not valid while `left_constraints` is
    False — eagerly and under `jax.jit`, where `throw=True` stops the program."""
    mech = three_rrr(-0.15)
    model, state = mech.build(), mech.initial_state()
    with pytest.raises(RuntimeError, match="maximum number of solver steps") as caught:
        rx.simulate(model, state, 1.5, max_steps=5)
    assert not isinstance(caught.value, rx.ConstraintsLeftError)
    run = jax.jit(lambda q: rx.simulate(model, rx.State(state.t, q, state.qd), 1.5,
                                        max_steps=5, throw=False))
    for traj in (rx.simulate(model, state, 1.5, max_steps=5, throw=False), run(state.q)):
        assert traj.result == diffrax.RESULTS.max_steps_reached
        assert not bool(traj.left_constraints) and not bool(np.all(traj.valid))
        assert bool(traj.valid[0])
    # With throw=True under jax.jit the program stops, also when only q is used
    # (a check tied to one field of the trajectory was removed by XLA).
    final = jax.jit(lambda q: rx.simulate(model, rx.State(state.t, q, state.qd), 1.5,
                                          max_steps=5).q[-1])
    with pytest.raises(Exception, match="the integration stopped before t1"):
        jax.block_until_ready(final(state.q))


def test_the_spatial_twin_out_of_its_workspace_is_a_failure():
    """Modelled with 3-D revolutes (natural coordinates, p = 6) the same motion is
    refused the same way, near the planar model's time."""
    planar = three_rrr(+0.15)
    t_planar = float(rx.simulate(planar.build(), planar.initial_state(), 1.0, throw=False).left_at)
    mech = three_rrr(+0.15, spatial=True)
    model, state = mech.build(), mech.initial_state()
    assert int(rx.decide(model, state.q).redundancy) == 6
    traj = rx.simulate(model, state, 1.0, throw=False, saveat=rx.SaveAt(n=11))
    assert bool(traj.left_constraints)
    assert float(traj.left_at) == pytest.approx(t_planar, abs=0.01)


def _robot_file(tmp_path, amplitude):
    text = (CONFIGS / "mobile_robot.toml").read_text()
    old = "values = [-1.0, -1.0, -1.02, -1.02, -1.0, -1.0, -0.98, -0.98, -1.0]"
    assert old in text
    a = amplitude
    new = f"values = [-1.0, -1.0, {-1 - a}, {-1 - a}, -1.0, -1.0, {-1 + a}, {-1 + a}, -1.0]"
    path = tmp_path / f"robot_{amplitude}.toml"
    path.write_text(text.replace(old, new).replace("t_final = 10.0", "t_final = 2.0"))
    return path


def test_the_command_line_exits_1_naming_the_time(tmp_path, capsys):
    """The shipped robot with its steering's smooth steps at ±0.115 m (past the end
    of the slider's travel): exit 1, one line naming the time and the violation;
    `--json` still prints the object, `valid: false`, no reaction unique; the same
    file at ±0.02 m (the shipped manoeuvre) is valid, exit 0."""
    path = _robot_file(tmp_path, 0.115)
    status = cli.main(["simulate", str(path)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("redundax: error:")]
    assert status == 1 and len(lines) == 1
    assert "left its constraints at t = 1.2" in lines[0] and "max |Φ| = " in lines[0]
    status = cli.main(["simulate", str(path), "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert status == 1 and summary["valid"] is False
    assert 1.2 < summary["left_constraints_at"] < 1.3
    assert summary["valid_until"] <= summary["left_constraints_at"]
    assert not any(summary["unique"].values())
    assert "projection after every step" in summary["drift_control"]
    status = cli.main(["simulate", str(_robot_file(tmp_path, 0.02)), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 0 and summary["valid"] is True and summary["left_constraints_at"] is None
    assert summary["unique"]["D"] is True


def _flat(mech, body):
    """`mech` with `body` a lamina: I_z = I_x + I_y (a thin plate in the x-y plane)."""
    bodies = [
        dataclasses.replace(b, inertia=(0.5 * b.inertia[2], 0.5 * b.inertia[2], b.inertia[2]))
        if b.name == body
        else b
        for b in mech.bodies
    ]
    return dataclasses.replace(mech, bodies=bodies)


def _svd_row_verdicts(C):
    """Per row of C: unique iff its row of an orthonormal left null-space basis is
    zero (NumPy SVD; Wojtyra & Frączek's test for a single row)."""
    U, s, _ = np.linalg.svd(np.asarray(C))
    rank = int(np.sum(s > 1e-8 * s[0]))
    N = U[:, rank:]
    return np.linalg.norm(N, axis=1) <= 1e-8


def test_a_flat_plate_keeps_every_verdict():
    """The shipped four-bar's spatial twin with a flat coupler (a lamina, whose
    block of M is singular in natural coordinates): the stable verdicts equal those
    at the configuration and a NumPy SVD's, as with a solid coupler; a run claims
    the same unique rows."""
    solid = models.spatial_twin(models.four_bar())
    verdicts = []
    for mech in (solid, _flat(solid, "coupler")):
        model, state = mech.build(), mech.initial_state()
        structure = rx.decide(model, state.q, state.t)
        svd = _svd_row_verdicts(rx.equations.constraint_matrix(model, state.q, state.t))
        np.testing.assert_array_equal(np.asarray(structure.stable_row_unique), svd)
        np.testing.assert_array_equal(np.asarray(structure.row_unique), svd)
        assert int(structure.rank_nearby) == int(structure.rank)
        verdicts.append(np.asarray(structure.stable_row_unique))
    assert int(np.sum(verdicts[1])) == 21
    np.testing.assert_array_equal(verdicts[0], verdicts[1])
    assert not bool(np.asarray(structure.mass_definite)[1])  # the coupler


def test_gradients_at_a_symmetric_design_are_finite():
    """The 3-fold symmetric 3-RRR modelled with 3-D revolutes (identical legs: the
    Gram matrix of the projection has exactly repeated zero eigenvalues): the
    derivative of a reaction at the projected state with respect to a link's mass
    and to a joint's position is finite and equals central differences (it was NaN,
    the derivative of an eigendecomposition)."""
    mech = three_rrr(0.15, spatial=True)
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    row = next(r for r in range(structure.m) if bool(structure.stable_row_unique[r]))
    qd = state.qd + 1e-3 * jnp.cos(jnp.arange(state.qd.shape[0]))

    ranks = (structure.rank_holonomic, structure.rank)  # decided once, as a run does

    def reaction(m):
        q, v = rx.drift.Projection()(m, state.q, qd, 0.5, ranks)
        return rx.reactions(m, q, v, 0.5, structure=structure).multipliers[row]

    def by_mass_and_point(x):  # the first link's mass; joint A1's point on the
        # first proximal link, along its axis
        m = eqx.tree_at(lambda m: m.bodies.mass, model, model.bodies.mass.at[0].set(x[0]))
        s_i = m.holonomic[0].s_i
        return reaction(eqx.tree_at(lambda m: m.holonomic[0].s_i, m, s_i.at[0, 0].set(x[1])))

    # One compiled program gives both derivatives and the differences' values (every
    # call with a float64 NumPy vector of 2, so that the program is compiled once).
    value_and_grad = jax.jit(jax.value_and_grad(by_mass_and_point))
    x0 = np.array([float(model.bodies.mass[0]), float(model.holonomic[0].s_i[0, 0])])
    grad = np.asarray(value_and_grad(x0)[1])

    def along(k, y):  # the reaction with x0[k] set to y[0]
        x = x0.copy()
        x[k] = y[0]
        return value_and_grad(x)[0]

    # Steps measured where central differences settle: the reaction carries
    # round-off of ~1e-11, which a step of eps^(1/3) amplifies to 1e-6 in the mass
    # derivative; the point derivative has a larger third derivative.
    for k, h in ((0, 1e-3), (1, 1e-5)):
        fd = central_difference(lambda y, k=k: along(k, y), x0[k : k + 1], h=h)[0]
        g = float(grad[k])
        assert np.isfinite(g) and g == pytest.approx(fd, rel=TOL_GRADIENT_H, abs=TOL_GRADIENT)


def test_submodules_are_attributes_after_import_redundax():
    """`rx.sweep`, `rx.optimize` and `rx.plot` work after `import redundax` alone
    (a fresh interpreter: they raised AttributeError until imported by name)."""
    import subprocess
    import sys

    code = (
        "import redundax as rx; "
        "print(rx.sweep.Sweep.__name__, rx.optimize.__name__, rx.plot.plot_reactions.__name__); "
        "print(all(name in dir(rx) for name in ('sweep', 'optimize', 'plot')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Sweep", "redundax.optimize", "plot_reactions", "True"]


def test_a_projection_weighted_by_a_singular_mass_is_refused_by_body():
    """`rx.drift.Projection` (initial projection or drift control) weights by M⁻¹: with a
    flat coupler it would be NaN, and the run would report an unassemblable
    mechanism. Refused naming the body and the way out; the default drift control
    runs the same mechanism."""
    mech = _flat(models.spatial_twin(models.four_bar()), "coupler")
    model, state = mech.build(), mech.initial_state()
    for field, keywords in (
        ("initial", {"initial": rx.ProjectInitial(rx.drift.Projection())}),
        ("drift_control", {"drift_control": rx.drift.Projection()}),
    ):
        with pytest.raises(rx.ModelError, match=rf"field '{field}'.*\n  - body 'coupler'"):
            rx.simulate(model, state, 0.1, **keywords)
    traj = rx.simulate(model, state, 0.1)
    assert bool(np.all(traj.valid))
