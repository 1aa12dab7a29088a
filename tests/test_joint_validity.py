"""Joint-coordinate runs are judged as absolute runs are (issue 34, items 1 and 2):
drivers that push a mechanism out of its workspace make the run a failure at the
edge, not a run to `max_steps`; a feasible run stays valid; a flat plate voids
nothing in the joint path.

Independent sources: the edge of the 3-RRR's workspace and its platform's angle
inside it, from the closed-form geometry of its symmetric pose (a leg reaches the
platform joint while |E| − 0.3 m ≤ L_d ≤ |E| + 0.3 m, E the elbow), solved here
with SciPy; the smooth step's inverse; the dense joint-space solve (mass matrix
Jᵀ M J by autodiff of the forward kinematics, no M⁻¹ of a body)."""

import contextlib
import dataclasses
import io
import json
import math
import re
from pathlib import Path

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import redundax as rx
from helpers import CONFIGS
from redundax import models
from redundax.cli import main
from redundax.io import load_config, read_run

# Where the run stopped against the exact time the drivers reach the edge [s]:
# the steps stop at 1e-9 of the run, the velocities grow as (t* − t)^(-1/2).
TOL_EDGE_TIME = 1e-6
# The platform's angle after a feasible drive against the closed form [rad]
# (rtol 1e-8 over 1.5 s, the projection after every step).
TOL_PLATFORM_ANGLE = 1e-7
# The DCA's q̈ against the dense joint-space solve (round-off of two formulations).
TOL_SAME_QDD = 1e-9

ANGLES = (90.0, 210.0, 330.0)  # the legs' directions [deg]
STEP = 0.15  # the drivers' smooth step [rad] over 1 s; +STEP leaves the workspace
T_FINAL = 1.5
N_SAVE = 31  # saved every 0.05 s


def _leg(deg: float):
    """Base joint B, platform joint P, elbow E (0.3 m off the middle of the leg,
    clockwise) of one leg, and the lengths of its proximal and distal links."""
    a = math.radians(deg)
    u = np.array([math.cos(a), math.sin(a)])
    base, tip = 1.0 * u, 0.3 * u
    elbow = 0.5 * (base + tip) - 0.3 * np.array([-u[1], u[0]])
    return base, tip, elbow, float(np.hypot(*(elbow - base))), float(np.hypot(*(tip - elbow)))


def three_rrr(step: float) -> rx.Mechanism:
    """The planar 3-RRR: base joints on a 1 m circle at 90°, 210°, 330°, platform
    joints on a 0.3 m circle at the same angles, links of 1 kg/m with I = m L²/12,
    a 2 kg platform with 0.09 kg m²; each proximal link driven from its initial
    angle by a smooth step of `step` rad over 1 s."""
    bodies, pairs = [], []
    for k, deg in enumerate(ANGLES):
        base, tip, elbow, lp, ld = _leg(deg)
        for name, start, end in ((f"prox{k}", base, elbow), (f"dist{k}", elbow, tip)):
            d = end - start
            length = float(np.hypot(*d))
            bodies.append(
                rx.Body(
                    name,
                    mass=length,
                    inertia=length**3 / 12,
                    position=tuple(0.5 * (start + end)),
                    angle=math.atan2(d[1], d[0]),
                )
            )
        d0 = bodies[-2].angle
        pairs += [
            rx.joints.Revolute(f"A{k + 1}", f"prox{k}", "ground", (-lp / 2, 0.0), tuple(base)),
            rx.joints.Revolute(f"B{k + 1}", f"prox{k}", f"dist{k}", (lp / 2, 0.0), (-ld / 2, 0.0)),
            rx.joints.Revolute(f"C{k + 1}", f"dist{k}", "platform", (ld / 2, 0.0), tuple(tip)),
            rx.joints.RevoluteDriver(
                f"M{k + 1}", f"prox{k}", "ground", rx.motions.SmoothSteps([0.0, 1.0], [d0, d0 + step])
            ),
        ]
    bodies.append(rx.Body("platform", mass=2.0, inertia=0.09))
    return rx.Mechanism(bodies, pairs, gravity=(0.0, 0.0))


def three_rrr_config(folder: Path, step: float) -> Path:
    """The same mechanism as a configuration file (1.5 s, saved every 0.05 s)."""
    mech = three_rrr(step)
    lines = ["[mechanism]", 'name = "3-RRR"', "gravity = [0.0, 0.0]"]
    for b in mech.bodies:
        lines += ["[[bodies]]", f'name = "{b.name}"', f"mass = {b.mass!r}"]
        x, y = (float(v) for v in b.position)
        lines += [f"inertia = {b.inertia!r}", f"position = [{x!r}, {y!r}]", f"angle = {b.angle!r}"]
    for p in mech.pairs:
        lines += ["[[pairs]]", f'name = "{p.name}"', f'body_i = "{p.body_i}"']
        lines += [f'body_j = "{p.body_j}"']
        if isinstance(p, rx.joints.RevoluteDriver):
            times, values = (np.asarray(a).tolist() for a in (p.motion.times, p.motion.values))
            lines += ['type = "revolute-driver"']
            lines += [f'motion = {{ type = "smooth-steps", times = {times}, values = {values} }}']
        else:
            (xi, yi), (xj, yj) = ((float(v) for v in pt) for pt in (p.point_i, p.point_j))
            lines += ['type = "revolute"', f"point_i = [{xi!r}, {yi!r}]"]
            lines += [f"point_j = [{xj!r}, {yj!r}]"]
    lines += ["[simulation]", f"t_final = {T_FINAL}", f"n_save = {N_SAVE}"]
    lines += ["rtol = 1e-8", "atol = 1e-10"]
    path = folder / "three_rrr.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _closure(delta: float, psi: float) -> float:
    """|P(ψ) − E(δ)| − L_d of the first leg in the symmetric pose (platform centred,
    turned by ψ; every proximal link turned by δ): zero where the loop closes."""
    base, tip, elbow, lp, ld = _leg(ANGLES[0])
    phi = math.atan2(*(elbow - base)[::-1]) + delta
    e = base + lp * np.array([math.cos(phi), math.sin(phi)])
    a = math.radians(ANGLES[0]) + psi
    return float(np.hypot(*(0.3 * np.array([math.cos(a), math.sin(a)]) - e)) - ld)


def _edge_time(step: float) -> float:
    """t* at which the smooth step δ(t) reaches the edge of the workspace: the
    first δ beyond which no ψ closes the loop (|E| + 0.3 < L_d or |E| − 0.3 > L_d)."""

    def margin(delta):  # > 0 inside the workspace
        base, _, elbow, lp, ld = _leg(ANGLES[0])
        phi = math.atan2(*(elbow - base)[::-1]) + delta
        r = float(np.hypot(*(base + lp * np.array([math.cos(phi), math.sin(phi)]))))
        return min(ld - abs(r - 0.3), r + 0.3 - ld)

    grid = np.linspace(0.0, step, 3001)
    k = next(i for i, d in enumerate(grid) if margin(d) < 0)
    delta = brentq(margin, grid[k - 1], grid[k], xtol=1e-15)
    blend = lambda s: s**3 * (10 - 15 * s + 6 * s * s)  # noqa: E731
    return brentq(lambda s: step * blend(s) - delta, 0.0, 1.0, xtol=1e-15)


def _platform_angle(delta: float) -> float:
    """ψ closing the loop on the branch of the initial pose (ψ = 0 at δ = 0)."""
    grid = np.linspace(-0.5, 0.5, 2001)
    values = [_closure(delta, psi) for psi in grid]
    roots = [
        brentq(lambda p: _closure(delta, p), grid[i], grid[i + 1], xtol=1e-15)
        for i in range(grid.size - 1)
        if values[i] * values[i + 1] < 0
    ]
    return min(roots, key=abs)


def _joint(mech):
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    return model, jm, jstate, rx.joint_coordinates.decide_joint(jm, jstate)


def test_drivers_past_the_workspace_fail_at_its_edge():
    """The 3-RRR driven +0.15 rad: the loops stay closed (the DCA's projection) while
    the motion runs into the singular configuration at the edge of the workspace,
    where the joint rates grow without bound. The run stops there (about a hundred
    steps, not 100 000) within 1e-6 s of the exact time the drivers reach the edge;
    `valid` is true exactly at the saved times before it; throw=True raises
    ConstraintsLeftError naming the time. Driven −0.15 rad (inside the workspace),
    the same program runs to the end, valid, its platform turned as the closed form
    says."""
    model, jm, jstate, structure = _joint(three_rrr(+STEP))
    t_edge = _edge_time(STEP)
    assert 0.6 < t_edge < 0.65  # between two saved times
    kw = dict(structure=structure, saveat=rx.SaveAt(n=N_SAVE))
    traj = rx.simulate(jm, jstate, T_FINAL, throw=False, **kw)
    assert traj.result == diffrax.RESULTS.dt_min_reached
    assert bool(traj.left_constraints)
    assert abs(float(traj.left_at) - t_edge) < TOL_EDGE_TIME
    assert abs(float(traj.end.t) - t_edge) < TOL_EDGE_TIME
    assert int(traj.num_steps) < 1000
    np.testing.assert_array_equal(np.asarray(traj.valid), np.asarray(traj.ts) < t_edge)
    assert float(traj.left_violation) <= float(traj.tolerances.step)  # still on them
    with pytest.raises(rx.ConstraintsLeftError) as caught:
        rx.simulate(jm, jstate, T_FINAL, **kw)
    error = caught.value
    assert abs(error.t - t_edge) < TOL_EDGE_TIME and error.valid_until == pytest.approx(0.6)
    assert error.violation == float(traj.left_violation)
    assert f"the motion cannot go on past t = {error.t:.6g} s" in str(error)
    assert "at a singular configuration" in str(error)

    model, jm, jstate, structure = _joint(three_rrr(-STEP))
    traj = rx.simulate(jm, jstate, T_FINAL, structure=structure, saveat=rx.SaveAt(n=N_SAVE))
    assert bool(np.all(traj.valid)) and not bool(traj.left_constraints)
    assert float(traj.left_at) == np.inf and float(traj.end.t) == T_FINAL
    platform = 3 * model.bodies.names.index("platform") + 2
    psi = float(traj.x[-1, platform])
    assert abs(psi - _platform_angle(-STEP)) < TOL_PLATFORM_ANGLE


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def test_the_command_line_fails_a_run_past_the_workspace(tmp_path: Path, monkeypatch):
    """`redundax simulate --coordinates joint` of the 3-RRR driven +0.15 rad: exit
    status 1 and one error line naming the time (the edge's, to 1e-6 s) and max |Φ|;
    `--json` still prints the summary of the valid part with valid false,
    valid_until 0.6 s, left_constraints_at, and no reaction claimed unique; the run
    file holds that part, nothing flagged unique, its metadata not valid. Its
    progress lines show the simulated time and the steps (a run in segments)."""
    from redundax.cli import _common, _simulate_joint

    monkeypatch.setattr(_common, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(_common, "PROGRESS_INTERVAL", 0.002)
    monkeypatch.setattr(_simulate_joint._Progress, "steps", 16)  # several segments
    texts = []  # every status the heartbeat may show, in order

    class Recorded(_common.Status):
        def __setattr__(self, name, value):
            texts.append(value)
            super().__setattr__(name, value)

    monkeypatch.setattr(_common, "Status", Recorded)
    config, out = three_rrr_config(tmp_path, STEP), tmp_path / "run.npz"
    status, stdout, stderr = _run(
        "simulate", config, "--coordinates", "joint", "--json", "--out", out
    )
    t_edge = _edge_time(STEP)
    assert status == 1
    errors = [line for line in stderr.splitlines() if line.startswith("redundax: error: ")]
    others = [line for line in stderr.splitlines() if not re.match(r"redundax: .+ elapsed", line)]
    assert len(errors) == 1 and others == errors
    assert f"{config}: the motion cannot go on past t = 0.609284 s" in errors[0]
    assert "max |Φ|" in errors[0] and "until the saved time 0.6 s" in errors[0]
    s = json.loads(stdout)
    assert s["valid"] is False and s["valid_until"] == pytest.approx(0.6)
    assert abs(s["left_constraints_at"] - t_edge) < TOL_EDGE_TIME
    assert s["left_violation"] is not None and s["t_final"] == pytest.approx(0.6)
    assert not any(s["unique"].values()) and set(s["unique"]) == set(model_pairs(config))
    assert not any(f for flags in s["components"].values() for f in flags.values())
    assert s["decided_by"] == {}
    run = read_run(out)
    assert run["meta"]["valid"] is False and run["t"][-1] == pytest.approx(0.6)
    assert not any(run["unique"].values())
    assert not any(f for flags in run["component_unique"].values() for f in flags.values())
    # After every segment of 16 steps: the simulated time of 1.5 s and the steps.
    where = [re.fullmatch(r"t = (\S+) s of 1.5 s, (\d+) steps", str(t)) for t in texts]
    reached = [(float(m[1]), int(m[2])) for m in where if m]
    assert [n for _, n in reached] == [*range(16, s["steps"], 16), s["steps"]]
    assert np.all(np.diff([t for t, _ in reached]) >= 0)  # printed to 4 digits
    assert abs(reached[-1][0] - t_edge) < 1e-3


def model_pairs(config: Path) -> tuple[str, ...]:
    return load_config(config).model.pair_names


def test_a_feasible_joint_run_stays_valid():
    """The mobile robot's manoeuvre (10 s, steering ±0.02 m; `configs/mobile_robot.toml`)
    in joint coordinates: every step end on its constraints, no false alarm at the
    knots of the steering's smooth steps, where the steps shrink to 3e-4 s. (Saved
    at its ends only, as `test_write_run_of_a_joint_run_stores_the_verdicts_a_run_claims`
    runs it: one compiled program; the step ends are judged inside the integration.)"""
    model, jm, jstate, structure = _joint(models.mobile_robot())
    traj = rx.simulate(jm, jstate, 10.0, structure=structure, saveat=rx.SaveAt(n=2))
    assert traj.result == diffrax.RESULTS.successful
    assert bool(np.all(traj.valid)) and not bool(traj.left_constraints)
    assert float(traj.left_at) == np.inf and float(traj.end.t) == 10.0
    assert float(np.max(traj.position_violation)) < float(traj.tolerances.saved)


def _plate(mech: rx.Mechanism, body: int, moments) -> rx.Mechanism:
    bodies = list(mech.bodies)
    bodies[body] = dataclasses.replace(bodies[body], inertia=moments)
    return dataclasses.replace(mech, bodies=bodies)


# The dense joint-space solve as one program, compiled once for the plate and the
# solid crank (the same shapes; run op by op it compiled hundreds of small ones).
_dense = eqx.filter_jit(
    lambda jm, q, qd, t: rx.joint_coordinates.dense_joint_accelerations(rx.joint_coordinates.joint_space_terms(jm, q, qd, t))
)


def test_a_flat_plate_voids_nothing_in_joint_coordinates(tmp_path: Path):
    """The spatial slider-crank with its crank a flat plate (I_z = I_x + I_y: its
    mass matrix in natural coordinates is singular): the DCA's q̈ equals the dense
    joint-space solve, and its verdicts (its own and the stable ones) equal those of
    the same mechanism with a solid crank. The one step that needs M⁻¹ of a body,
    `initial = "project"`, is refused naming the body instead of reporting NaN
    residuals as an unassembled mechanism."""
    twin = models.spatial_twin(models.slider_crank())
    reports = {}
    for label, moments in (("plate", (0.03, 0.05, 0.08)), ("solid", (0.03, 0.05, 0.07))):
        model, jm, jstate, structure = _joint(_plate(twin, 0, moments))
        if label == "plate":
            assert not np.all(np.isfinite(np.asarray(model.bodies.inverse_mass_blocks()[0])))
        qdd = rx.joint_coordinates.dca_dynamics(jm, structure, jstate.q, jstate.qd, jstate.t).qdd
        dense = _dense(jm, jnp.asarray(jstate.q), jnp.asarray(jstate.qd), jstate.t)
        assert bool(np.all(np.isfinite(np.asarray(qdd))))
        scale = max(1.0, float(jnp.max(jnp.abs(dense))))
        np.testing.assert_allclose(qdd, dense, rtol=0, atol=TOL_SAME_QDD * scale)
        report = rx.joint_coordinates.joint_uniqueness(jm, structure, jstate)
        reports[label] = (report.unique, report.stable_unique, report.stable_row_unique)
    assert reports["plate"] == reports["solid"] and any(reports["plate"][1])

    text = (CONFIGS / "bricard.toml").read_text(encoding="utf-8")
    rod1 = "inertia = [0.001666666666666667, 0.08416666666666667, 0.08416666666666667]"
    assert text.count(rod1) == 2
    text = text.replace(rod1, "inertia = [0.03, 0.05, 0.08]", 1)
    path = tmp_path / "plate.toml"
    path.write_text(text.replace("[simulation]", '[simulation]\ninitial = "project"', 1))
    status, stdout, stderr = _run(
        "simulate", path, "--coordinates", "joint", "--t-final", "0.1", "--json"
    )
    assert status == 2 and stdout == "" and len(stderr.splitlines()) == 1
    assert "singular for body 'rod1' (principal moments 0.03, 0.05, 0.08: a flat plate" in stderr
