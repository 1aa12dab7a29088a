"""One door (issue 36): `rx.simulate` runs absolute-coordinate models, joint-coordinate
models (the model's type decides) and González's compliant stepper (the solver
decides), with one object per concern, and returns one trajectory family.

The Bricard references below were computed by redundax at commit 943b86d, before the
door, with `rx.simulate(model, s0, 1.0)`, `rx.simulate_joint(jm, js, 1.0)` and
`rx.simulate_gonzalez(model, s0, 1.0, h=1e-3, compliance=rx.Compliance(1e-9),
save_every=100)` at XLA's default optimisation level: the door must give the results
those three gave (to 1e-9: the suite compiles at another level, which rounds
differently — 1.2e-10 on the joint run; the runs' own accuracy is 1e-8), with the
same defaults (the joint run's projection after every step).
"""

import inspect

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import assert_similar_steps
from redundax import models

# Bricard (IFToMM A04), 1 s from its initial state, redundax 943b86d.
ABSOLUTE_STEPS = 10
ABSOLUTE_Q = [0.2552507305994115, 9.07e-15, -0.42993844271951015, 0.5105014611988231, 1.82e-14,
              -0.8598768854390203]  # fmt: skip
ABSOLUTE_ENERGY = -29.429999999672262
JOINT_STEPS = 8
JOINT_X = [0.25525073048892827, 0.0, -0.42993844278555565, 0.5105014609778565, 0.0,
           -0.8598768855711113]  # fmt: skip
GONZALEZ_Q = [0.2548139850910936, -4.7690263123137296e-08, -0.4301986424424965,
              0.5096279633975631, -4.278577197218745e-08, -0.8603972841588241]  # fmt: skip
GONZALEZ_LAMBDA = [-26.289815655018955, 3.3837297981807315, 0.3755905288206205]


@pytest.fixture(scope="module")
def bricard():
    mech = models.bricard()
    return mech.build(), mech.initial_state()


def test_bricard_through_the_door_gives_the_former_doors_results(bricard):
    model, s0 = bricard
    absolute = rx.simulate(model, s0, 1.0)
    assert isinstance(absolute, rx.Trajectory)
    assert_similar_steps(absolute.num_steps, ABSOLUTE_STEPS, "absolute")
    assert isinstance(absolute.drift_control, rx.drift.StepProjection)
    np.testing.assert_allclose(absolute.q[-1, :6], ABSOLUTE_Q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(absolute.energy[-1], ABSOLUTE_ENERGY, rtol=1e-10)

    jm = rx.joint_coordinates.joint_model(model, s0.q)
    joint = rx.simulate(jm, rx.joint_coordinates.to_joint_state(jm, s0), 1.0)
    assert isinstance(joint, rx.JointTrajectory)
    assert_similar_steps(joint.num_steps, JOINT_STEPS, "joint")
    assert joint.projected  # the default drift control: a projection after every step
    np.testing.assert_allclose(joint.x[-1, :6], JOINT_X, rtol=0, atol=1e-9)
    # The two formulations agree on the motion to the integration's accuracy.
    np.testing.assert_allclose(joint.x[-1, :6], absolute.q[-1, :6], atol=1e-8)

    stepper = rx.GonzalezStepper(h=1e-3, compliance=rx.Compliance(1e-9))
    gonzalez = rx.simulate(model, s0, 1.0, solver=stepper, saveat=rx.SaveAt(n=11))
    assert isinstance(gonzalez, rx.GonzalezTrajectory)
    np.testing.assert_allclose(gonzalez.ts, np.linspace(0.0, 1.0, 11), atol=1e-12)
    np.testing.assert_allclose(gonzalez.q[-1, :6], GONZALEZ_Q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(gonzalez.multipliers[-1, :3], GONZALEZ_LAMBDA, rtol=1e-8)

    for run in (absolute, joint, gonzalez):  # one family, the shared fields
        assert isinstance(run, rx.AbstractTrajectory)
        state = run.state(3)
        np.testing.assert_array_equal(state.q, run.q[3])
        assert run.position_violation.shape == run.energy.shape == run.ts.shape


def test_simulate_has_one_object_per_concern():
    """At most 14 parameters (issue 36), none of the former pairs."""
    names = list(inspect.signature(rx.simulate).parameters)
    assert len(names) <= 14, names
    for former in ("rtol", "atol", "n_save", "ts", "initial_projection", "consistency_tol",
                   "progress_meter", "monitor_singularities", "singular_threshold",
                   "stabilisation", "projection"):  # fmt: skip
        assert former not in names
    for gone in ("simulate_joint", "simulate_gonzalez"):
        assert not hasattr(rx, gone)


@pytest.fixture(scope="module")
def four_bar():
    mech = models.four_bar()
    model, s0 = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, s0.q)
    js = rx.joint_coordinates.to_joint_state(jm, s0)
    return model, s0, jm, js, rx.joint_coordinates.decide_joint(jm, js)


def test_joint_runs_eager_jit_vmap_alike(four_bar):
    """The joint-coordinate path through the door: an eager run, the same under
    `jax.jit` and each member of a `jax.vmap` batch run the same numerics (to
    round-off: the eager program takes t1 and the tolerances as inputs, the traced
    ones fold them in as constants), with the same steps."""
    _, _, jm, js, structure = four_bar

    def run(state):
        return rx.simulate(jm, state, 0.3, structure=structure, saveat=rx.SaveAt(n=4))

    eager = run(js)
    jitted = jax.jit(run)(js)
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), js)
    batched = jax.vmap(run)(batch)
    for other in (jitted.q[-1], batched.q[0, -1], batched.q[1, -1]):
        np.testing.assert_allclose(other, eager.q[-1], rtol=0, atol=1e-10)
    assert_similar_steps(jitted.num_steps, eager.num_steps, "jit")
    assert_similar_steps(batched.num_steps[0], eager.num_steps, "vmap")


def test_gonzalez_runs_eager_jit_vmap_alike(four_bar):
    model, s0, *_ = four_bar
    stepper = rx.GonzalezStepper(h=1e-2, compliance=rx.Compliance(1e-8))

    def run(state):
        return rx.simulate(model, state, 0.3, solver=stepper, saveat=rx.SaveAt(n=4))

    eager = run(s0)
    jitted = jax.jit(run)(s0)
    batched = jax.vmap(run)(jax.tree.map(lambda x: jnp.stack([x, x]), s0))
    for other in (jitted.q[-1], batched.q[0, -1], batched.q[1, -1]):
        np.testing.assert_allclose(other, eager.q[-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eager.ts, [0.0, 0.1, 0.2, 0.3], atol=1e-12)


def test_a_pid_controller_of_your_own_steps_as_the_default(four_bar):
    """A `diffrax.PIDController` given at the default tolerances is completed as the
    default one (the knots of the prescribed motions, the stall floor): the same
    run to the last bit. Other tolerances change the run (and the default solver)."""
    model, s0, *_ = four_bar
    default = rx.simulate(model, s0, 0.5, saveat=rx.SaveAt(n=3))
    same = rx.simulate(
        model, s0, 0.5, saveat=rx.SaveAt(n=3),
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
    )  # fmt: skip
    np.testing.assert_array_equal(same.q, default.q)  # one program: to the last bit
    assert int(same.num_steps) == int(default.num_steps)
    loose = rx.simulate(
        model, s0, 0.5, saveat=rx.SaveAt(n=3),
        stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6),
    )  # fmt: skip
    assert int(loose.num_steps) < int(default.num_steps)
    np.testing.assert_allclose(loose.q[-1], default.q[-1], atol=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": rx.methods.BlockSparse()}, "joint-coordinate model runs the divide-and-conquer"),
        ({"initial": rx.ProjectInitial()}, "joint-coordinate model starts from the state given"),
        ({"monitor": rx.Singularities("pivots")}, "keeps no singularity log"),
        ({"stepsize_controller": diffrax.ConstantStepSize()}, "takes a diffrax.PIDController"),
    ],
)
def test_joint_models_refuse_what_they_do_not_run(four_bar, kwargs, match):
    _, _, jm, js, _ = four_bar
    with pytest.raises(TypeError, match=match):
        rx.simulate(jm, js, 0.1, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"drift_control": rx.drift.StepProjection()}, TypeError, "'drift_control': GonzalezStepper"),
        ({"saveat": rx.SaveAt(n=4)}, ValueError, r"n − 1 to divide the number of steps"),
        ({"saveat": rx.SaveAt(ts=[0.0, 0.5])}, TypeError, "saves every k steps"),
        ({"stepsize_controller": diffrax.PIDController(rtol=1e-6, atol=1e-8)}, TypeError,
         "'stepsize_controller': GonzalezStepper"),  # fmt: skip
    ],
)
def test_the_gonzalez_stepper_refuses_what_it_does_not_take(four_bar, kwargs, error, match):
    model, s0, *_ = four_bar
    with pytest.raises(error, match=match):
        rx.simulate(model, s0, 0.5, solver=rx.GonzalezStepper(h=0.1), **kwargs)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: rx.SaveAt(n=1), "SaveAt field 'n'"),
        (lambda: rx.SaveAt(n=3, ts=[0.0, 1.0]), "not both"),
        (lambda: rx.Singularities("eigenvalues"), "Singularities field 'measure'"),
        (lambda: rx.Singularities(threshold=1.5), "Singularities field 'threshold'"),
        (lambda: rx.CheckInitial(tol=-1.0), "CheckInitial field 'tol'"),
        (lambda: rx.GonzalezStepper(h=0.0), "GonzalezStepper field 'h'"),
    ],
)
def test_options_refuse_bad_values_by_name(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_options_of_the_wrong_kind_are_refused_by_name(four_bar):
    model, s0, *_ = four_bar
    # (TypeError by the door's own check; under the suite's jaxtyping hook, the
    # hook's TypeCheckError, a TypeError, naming the parameter first.)
    with pytest.raises(TypeError, match="'saveat'"):
        rx.simulate(model, s0, 0.1, saveat=11)
    with pytest.raises(TypeError, match="'initial'"):
        rx.simulate(model, s0, 0.1, initial=rx.drift.Projection())
