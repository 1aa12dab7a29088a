"""Mistakes made through the Python API are refused with the field, body or pair
named, and results with a leading time axis are read along the right axis.

Each case here was once a silent wrong answer or a raw error from deep inside JAX
(found by a review as a first-time user); the command line's and the config
loader's mistakes are in `test_user_mistakes.py`."""

import warnings

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax import models


@pytest.fixture(scope="module")
def four_bar():
    mech = models.four_bar()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def robot_run(robot):
    model, state = robot
    return rx.simulate(model, state, 0.5, saveat=rx.SaveAt(n=3))


# ----------------------------------------------------------------- reaction histories


def test_a_history_is_read_pair_by_pair_along_its_time_axis(robot, robot_run):
    """`pair`, `at_joint` and `components` of a history give that pair at every
    saved time: the same numbers as `rx.reactions` at each saved state alone."""
    model, _ = robot
    history = rx.reaction_history(model, robot_run)
    for k in (0, robot_run.ts.shape[0] - 1):
        one = rx.reactions(
            model,
            robot_run.q[k],
            robot_run.qd[k],
            robot_run.ts[k],
            structure=robot_run.structure,
            drift_control=robot_run.drift_control,
        )
        for name in ("A", "B", "W5"):
            wrench, unique = history.pair(name)
            assert wrench.shape == (robot_run.ts.shape[0], *one.pair(name)[0].shape)
            np.testing.assert_allclose(wrench[k], one.pair(name)[0], rtol=1e-9, atol=1e-12)
            assert bool(unique[k]) == bool(one.pair(name)[1])
            force, moment, _ = history.at_joint(name)
            np.testing.assert_allclose(force[k], one.at_joint(name)[0], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(moment[k], one.at_joint(name)[1], rtol=1e-9, atol=1e-12)
    # The robot's documented verdicts (DESIGN.md §6): A unique, B not.
    assert bool(history.pair("A")[1].all()) and not bool(history.pair("B")[1].any())


def test_unknown_pair_names_are_refused_with_the_known_ones(robot, robot_run):
    model, state = robot
    r = rx.reactions(model, state.q, state.qd, structure=robot_run.structure)
    for read in (r.pair, r.at_joint, r.components):
        with pytest.raises(KeyError, match="no pair named 'Z'; known pairs: A, B"):
            read("Z")
    report = rx.analyze_solvability(model, state.q)
    with pytest.raises(KeyError, match="no pair or group named 'Z'"):
        report.verdict("Z")


def test_a_mechanism_without_pairs_has_an_empty_reaction_history():
    """One free body under gravity: no pairs, so no wrenches; the motion is the
    closed-form free fall y = −g t²/2."""
    mech = rx.Mechanism([rx.Body("b", 2.0, 0.1, (0.0, 0.0))], [], gravity=(0.0, -9.81))
    model, state = mech.build(), mech.initial_state()
    run = rx.simulate(model, state, 0.5, saveat=rx.SaveAt(n=3))
    np.testing.assert_allclose(run.q[:, 1], -0.5 * 9.81 * np.asarray(run.ts) ** 2, atol=1e-12)
    history = rx.reaction_history(model, run)
    assert history.wrench.shape == (3, 0, 1, 3) and history.unique.shape == (3, 0)


def test_a_history_of_another_mechanism_is_refused(four_bar, robot_run):
    model, _ = four_bar
    with pytest.raises(rx.ModelError, match="21 coordinates, the model 9"):
        rx.reaction_history(model, robot_run)


# --------------------------------------------------------------------- simulate's times


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        (
            {"saveat": rx.SaveAt(ts=[0.5, 1.0])},
            r"ts\[0\] = 0.5 differs from the initial state's time",
        ),
        ({"saveat": rx.SaveAt(ts=[0.0, 0.2])}, r"ts\[-1\] = 0.2 differs from t1 = 1.0"),
        ({"saveat": rx.SaveAt(ts=[0.0, 0.6, 0.4, 1.0])}, "without turning back"),
        ({"saveat": rx.SaveAt(ts=[0.0, np.nan, 1.0])}, "NaN"),
        ({"max_steps": 0}, "max_steps: expected a positive integer"),
        ({"stepsize_controller": diffrax.PIDController(rtol=-1e-8, atol=1e-10)}, "rtol, atol"),
        ({"stepsize_controller": diffrax.PIDController(rtol=0.0, atol=0.0)}, "not both zero"),
    ],
)
def test_simulate_refuses_times_and_tolerances_that_would_mislead(four_bar, keywords, message):
    model, state = four_bar
    with pytest.raises(rx.ModelError, match=message):
        rx.simulate(model, state, 1.0, **keywords)


@pytest.mark.parametrize("t1", [float("nan"), float("inf")])
def test_simulate_refuses_a_final_time_that_is_not_finite(four_bar, t1):
    model, state = four_bar
    with pytest.raises(rx.ModelError, match="t1 is .*; expected a finite time"):
        rx.simulate(model, state, t1)


def test_simulate_refuses_a_state_of_the_wrong_length(four_bar, robot):
    model, _ = four_bar
    _, robot_state = robot
    with pytest.raises(rx.ModelError, match=r"state0.q has shape \(21,\); the model has 9"):
        rx.simulate(model, robot_state, 0.1)


def test_simulate_checks_what_it_is_given_as_a_method(four_bar):
    model, state = four_bar
    problem = "simulate: method: expected a redundancy method"
    with pytest.raises(rx.ModelError, match=problem):
        rx._simulate._check_arguments(model, state, 1.0, 3, None, 10, 1e-8, 1e-10, "nullspace")
    with pytest.raises(rx.ModelError, match=problem):
        rx._simulate._check_arguments(
            model, state, 1.0, 3, None, 10, 1e-8, 1e-10, rx.methods.NullSpace
        )


# ------------------------------------------------------- a structure of another mechanism


def test_a_structure_decided_for_another_mechanism_is_refused(four_bar, robot):
    model, state = robot
    other = rx.decide(*four_bar[:1], four_bar[1].q)
    for method in (rx.methods.NullSpace(), rx.methods.BlockSparse()):
        with pytest.raises(rx.ModelError, match="structure: decided for another mechanism"):
            rx.simulate(model, state, 0.1, structure=other, method=method)
    with pytest.raises(rx.ModelError, match="pairs O, A, B, D"):
        rx.reactions(model, state.q, state.qd, structure=other)


# ------------------------------------------------------------------ configurations q


@pytest.mark.parametrize("name", ["decide", "analyze_solvability"])
def test_a_configuration_of_the_wrong_length_or_not_finite_is_refused(four_bar, name):
    model, state = four_bar
    function = getattr(rx, name)
    with pytest.raises(rx.ModelError, match=r"q has shape \(12,\); the model has 9 coordinates"):
        function(model, jnp.zeros(12))
    with pytest.raises(rx.ModelError, match=r"q is not finite at entries \[2\]"):
        function(model, state.q.at[2].set(jnp.nan))
    with pytest.raises(rx.ModelError, match=r"reactions: q has shape \(5,\)"):
        rx.reactions(model, jnp.zeros(5), jnp.zeros(5))


def test_an_unassembled_configuration_is_analysed_with_a_warning():
    """Bricard's linkage moved off its constraints by 1e-3: the rank there is full
    (the redundancy p = 1 is gone), so the analysis warns, naming the pairs."""
    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    off = state.q + 1e-3 * jnp.sin(jnp.arange(state.q.shape[0]))
    with pytest.warns(RuntimeWarning, match="not an assembled configuration.*pairs 'J"):
        report = rx.analyze_solvability(model, off)
    assert int(report.redundancy) == 0  # what the warning is about
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert int(rx.analyze_solvability(model, state.q).redundancy) == 1
    # With Pfaffian pairs too: the robot's left wheel turned by 0.05 rad (index 5 is
    # its angle) breaks its revolute D, not its knife edge W1 (a velocity constraint).
    robot = models.mobile_robot()
    model, state = robot.build(), robot.initial_state()
    with pytest.warns(RuntimeWarning, match=r"pairs 'D' \("):
        rx.analyze_solvability(model, state.q.at[5].add(0.05))


# ------------------------------------------------------------------- method options


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: rx.methods.BlockSparse(pivot_rtol=0.0), "pivot_rtol"),
        (lambda: rx.methods.BlockSparse(pivot_rtol=-1.0), "pivot_rtol"),
        (lambda: rx.methods.BlockSparse(pivot_rtol=10.0), "pivot_rtol"),
        (lambda: rx.methods.Penalty(stiffness=-1.0), "stiffness"),
        (lambda: rx.methods.Penalty(omega=float("nan")), "omega"),
        (lambda: rx.drift.Projection(iterations=0), "iterations"),
        (lambda: rx.drift.Projection(tolerance=-1.0), "tolerance"),
        (lambda: rx.methods.WeightedMinimumNorm(weights=jnp.asarray([1.0, -1.0, 1.0])), "weights"),
        (lambda: rx.methods.Elimination(keep=(0, 1, 40), n_rows=22), "keep"),
        (lambda: rx.methods.Elimination(keep=(0, 1, 1), n_rows=22), "keep"),
    ],
)
def test_method_options_out_of_range_are_refused_by_name(build, field):
    with pytest.raises(ValueError, match=f"field '{field}'"):
        build()


def test_weights_for_another_number_of_rows_are_refused(robot):
    model, state = robot
    method = rx.methods.WeightedMinimumNorm(weights=jnp.ones(3))
    with pytest.raises(rx.ModelError, match=r"'weights': shape \(3,\), but C has 22 rows"):
        rx.reactions(model, state.q, state.qd, method=method)


def test_eliminate_refuses_a_row_given_twice(robot):
    model, state = robot
    with pytest.raises(rx.ModelError, match=r"rows \[6\] given more than once"):
        rx.methods.eliminate(model, state.q, rows=(6, 6))


# -------------------------------------------------------------- models and mechanisms


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: models.four_bar(crank=0.1, coupler=0.1, rocker=0.1), "cannot be assembled"),
        (
            lambda: models.four_bar(crank=1.0, coupler=1.0, rocker=1.0, crank_angle=0.0),
            "cannot be assembled",
        ),
        (lambda: models.four_bar(rocker=-0.8), "rocker must be a positive length"),
        (lambda: models.spherical_chain(0), "n must be an integer ≥ 1"),
        (lambda: models.n_four_bar(0), "n must be an integer ≥ 1"),
        (lambda: models.parallelogram(1), "n_cranks must be an integer ≥ 2"),
    ],
)
def test_model_builders_refuse_what_cannot_be_built(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_four_bar_that_closes_is_built_on_its_loop():
    """The builder's closure test does not refuse a linkage that closes: its
    initial configuration satisfies the constraints."""
    mech = models.four_bar(crank=0.5, coupler=1.0, rocker=1.0, crank_angle=0.3)
    model, state = mech.build(), mech.initial_state()
    assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, state.q, 0.0)))) < 1e-12


def _problems(mechanism) -> tuple[str, ...]:
    with pytest.raises(rx.ModelError) as caught:
        mechanism.build()
    return caught.value.problems


def test_an_unknown_body_is_one_problem_not_two():
    bodies = [rx.Body("crank", 1.0, 0.1, (0.5, 0.0))]
    problems = _problems(
        rx.Mechanism(bodies, [rx.joints.Revolute("O", "cranck", "ground", (-0.5, 0.0), (0.0, 0.0))])
    )
    assert len(problems) == 1 and "unknown body 'cranck'" in problems[0]


def test_pairs_and_loads_on_the_ground_alone_are_refused():
    bodies = [rx.Body("cart", 1.0, 0.1, (0.0, 0.0))]
    problems = _problems(
        rx.Mechanism(
            bodies,
            [rx.joints.KnifeEdge("W", "ground", (0.0, 0.0), (0.0, 1.0))],
            loads=[rx.Load("ground", force=(1.0, 0.0)), rx.Load("cart")],
        )
    )
    assert any("pair 'W': attached to the ground alone" in p for p in problems)
    assert any("load 0 field 'body': the ground does not move" in p for p in problems)
    assert any("load 1 (body 'cart'): neither force nor torque given" in p for p in problems)


def test_build_validates_the_initial_poses_once_each():
    """`build()` validates everything, the bodies' initial poses too, and a field
    read by two checks is one problem."""
    planar = _problems(rx.Mechanism([rx.Body("b", 1.0, 0.1, (0.0, 0.5, 0.0))], []))
    assert planar == ("body 'b' field 'position': expected a vector of length 2, got shape (3,)",)
    bad_rotation = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 2.0))
    body = rx.SpatialBody("b", 1.0, (0.1, 0.1, 0.1), position=(0.0, 0.5), rotation=bad_rotation)
    spatial = _problems(rx.Mechanism([body], [], gravity=(0.0, 0.0, -9.81)))
    assert len(spatial) == 2 and "'position'" in spatial[0] and "'rotation'" in spatial[1]


def test_a_mass_whose_weight_overflows_is_refused():
    """1e308 kg is a finite, positive mass, but its weight is inf: the run would
    fail far from the cause (it ended at max_steps after a minute)."""
    body = rx.Body("b", 1e308, 0.1, (0.0, 0.5))
    problems = _problems(rx.Mechanism([body], [], gravity=(0.0, -9.81)))
    message = "body 'b' field 'mass': its weight m·|g| overflows float64 (mass 1e+308 kg)"
    assert problems == (message,)
    rx.Mechanism([body], []).build()  # no gravity: no weight to overflow


def test_signatures_are_checked_at_run_time_in_the_type_checked_files(request):
    """`make test` runs this file under jaxtyping's import hook with beartype
    (`tests/run_files.py`'s `TYPECHECKED`): an annotated function given an array of
    the wrong shape is refused at the call. Skipped in a process started without
    the hook (`pytest` by hand)."""
    import jaxtyping

    from redundax._math import cross2

    if not request.config.getoption("--jaxtyping-packages", default=None):
        pytest.skip("not a type-checked process (tests/run_files.py TYPECHECKED)")
    assert float(cross2(jnp.asarray([1.0, 0.0]), jnp.asarray([0.0, 2.0]))) == 2.0
    with pytest.raises(jaxtyping.TypeCheckError, match="cross2"):
        cross2(jnp.asarray([1.0, 0.0, 0.0]), jnp.asarray([0.0, 2.0, 0.0]))
