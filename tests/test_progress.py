"""`simulate(progress=...)`: a run in host-side segments of a fixed number of steps
makes the steps of the run in one piece (the second method here: the run in one
piece), carries its logs across, reports where it stands, and compiles to programs
with no host callback (what lets the persistent compilation cache keep them)."""

import dataclasses

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax import models
from redundax._progress import _advance, _begin
from redundax._simulate import tolerances
from redundax.methods import specialise
from redundax.monitors._singularity import Watch

# A pendulum driven by a torque that switches on smoothly between 0.3 and 0.6 s:
# the knots make the default controller a `ClipStepSizeController` (its state is
# carried across segments too), the pin makes the run monitored (its singularity
# log is carried in the solver state).
T1 = 2.0
PROFILE = rx.motions.SmoothSteps([0.3, 0.6], [0.0, 1.0])


@pytest.fixture(scope="module")
def pendulum():
    mech = dataclasses.replace(
        models.pendulum(angle=0.3),
        forces=[rx.forces.TimeDependentLoad("bob", torque=2.0, profile=PROFILE)],
    )
    return mech.build(), mech.initial_state()


class Recorder(rx.Progress):
    steps = 5

    def __init__(self):
        self.reports: list[tuple[float, float, int]] = []

    def report(self, t, t1, steps):
        self.reports.append((t, t1, steps))


@pytest.fixture(scope="module")
def runs(pendulum):
    model, state = pendulum
    whole = rx.simulate(model, state, T1, saveat=rx.SaveAt(n=41))
    recorder = Recorder()
    parts = rx.simulate(model, state, T1, saveat=rx.SaveAt(n=41), progress=recorder)
    return whole, parts, recorder


def test_segments_make_the_steps_of_the_run_in_one_piece(runs):
    whole, parts, _ = runs
    assert int(whole.num_steps) > 3 * Recorder.steps  # several segments
    for count in ("num_steps", "num_accepted_steps", "num_rejected_steps"):
        assert int(getattr(parts, count)) == int(getattr(whole, count))
    assert parts.result == diffrax.RESULTS.successful
    np.testing.assert_array_equal(parts.ts, whole.ts)
    # Saved states interpolated from the same steps (round-off apart).
    np.testing.assert_allclose(parts.q, whole.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(parts.qd, whole.qd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(parts.energy, whole.energy, rtol=0, atol=1e-12)
    # The singularity log, carried in the solver state, records the same steps.
    for a, b in zip(
        jax.tree.leaves(whole.singularities), jax.tree.leaves(parts.singularities), strict=True
    ):
        np.testing.assert_allclose(np.asarray(b, float), np.asarray(a, float), atol=1e-12)


def test_joint_coordinate_segments_make_the_run_in_one_piece():
    """`simulate(progress=...)` of a joint-coordinate model saves as the run in one
    piece does (the same solver-side saving, `redundax._saving`): the four-bar's 1 s
    in joint coordinates, segments of 5 steps, equal to the last bit."""
    mech = models.four_bar()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    start = rx.joint_coordinates.to_joint_state(jm, state)
    whole = rx.simulate(jm, start, 1.0, saveat=rx.SaveAt(n=21))
    recorder = Recorder()
    parts = rx.simulate(jm, start, 1.0, saveat=rx.SaveAt(n=21), progress=recorder)
    assert int(whole.num_steps) > 3 * Recorder.steps and len(recorder.reports) > 3
    assert int(parts.num_steps) == int(whole.num_steps)
    np.testing.assert_array_equal(np.asarray(parts.q), np.asarray(whole.q))
    np.testing.assert_array_equal(np.asarray(parts.qd), np.asarray(whole.qd))


def test_reports_after_every_segment(runs):
    whole, _, recorder = runs
    t, t1, steps = map(np.asarray, zip(*recorder.reports, strict=True))
    assert np.all(t1 == T1) and t[-1] == T1 and np.all(np.diff(t) > 0)
    assert steps[-1] == int(whole.num_steps)
    assert np.all(steps[:-1] == Recorder.steps * np.arange(1, len(steps)))


def test_the_segment_program_has_no_host_callback(pendulum):
    model, state = pendulum
    structure = rx.decide(model, state.q, state.t)
    method = specialise(rx.methods.NullSpace(), structure)
    drift = rx.drift.StepProjection().prepare(method, structure)
    stages = (
        model,
        jnp.asarray([0.0, 0.5, 1.0]),
        structure,
        method,
        diffrax.Tsit5(),
        rx.internal.default_controller(model, 1e-8, 1e-10),
        drift,
        Watch(0.1, "singular_values"),
    )
    run = _begin(*stages, (state.q, state.qd))
    tol = tolerances(drift, state.q, 1e-8)
    text = _advance.lower(*stages, tol, run, 4).as_text()
    assert "callback" not in text.lower()


def test_the_limit_on_steps_is_kept_between_segments(pendulum):
    model, state = pendulum
    run = rx.simulate(model, state, T1, max_steps=12, throw=False, progress=Recorder())
    assert run.result == diffrax.RESULTS.max_steps_reached and int(run.num_steps) == 15
    assert np.all(np.isinf(run.q[-1]))  # not reached: not saved
    with pytest.raises(RuntimeError, match=r"stopped at t = .* after 15 steps"):
        rx.simulate(model, state, T1, max_steps=12, progress=Recorder())


def test_progress_is_refused_where_it_cannot_report(pendulum):
    model, state = pendulum
    with pytest.raises(ValueError, match="'progress'.*cannot be used under jax.jit"):
        jax.jit(lambda s: rx.simulate(model, s, T1, progress=Recorder()).q)(state)
    # The pendulum's bob is a point mass (I = 0), which rx.drift.Projection refuses for
    # its M⁻¹ (test_validity): the four-bar.
    four_bar = models.four_bar()
    with pytest.raises(ValueError, match="'progress'.*Projection projects at saved times"):
        rx.simulate(
            four_bar.build(),
            four_bar.initial_state(),
            T1,
            drift_control=rx.drift.Projection(),
            progress=Recorder(),
        )
