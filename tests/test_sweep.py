"""Sweeps (`redundax.sweep`): the batched evaluation of 1,000 variants equals a Python
loop over them, parameter addresses reach the leaves `Mechanism.build` fills, the
nominal row of a simulated sweep is `rx.simulate` of the same file, a sweep killed
after its first chunk resumes to a byte-identical file, local processes write the
files one process writes, and invalid parameter names are named."""

import argparse
import dataclasses
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import diffrax
import equinox as eqx
import jax
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_EXACT, TOL_ZERO_B, assert_similar_steps
from redundax import models, sweep as sw
from redundax.cli import sweep as sweep_command
from redundax.io import ConfigError, SimulationOptions

ROOT = Path(__file__).resolve().parents[1]
MOBILE_ROBOT = ROOT / "configs" / "mobile_robot.toml"
EXAMPLE = ROOT / "configs" / "sweep_mobile_robot.toml"

# Batched and single simulations of the same variant (rtol = 1e-8, atol = 1e-10, 1 s):
# the same equations and steps, so they differ by round-off that the step-size
# controller may amplify a little, far below the integration error [m].
TOL_SWEEP_SIMULATION = 1e-9
# The largest constraint violation a run projected after every step keeps at rtol
# 1e-8 (measured ~2e-9 on the robot's 1 s run, batched and single).
VIOLATION_LEVEL = 1e-8

# 2 × 5 × 100 = 1,000 variants. A knife edge W4 whose normal is turned (normal.x ≠ 0)
# resists the forward motion too; moving joint D's point on the left link turns the
# left wheel in the assembled (projected) initial configuration, so the wheel axes no
# longer meet. Either way rank C rises from 20 to 21 (the robot is locked). The
# platform mass changes nothing in the analysis.
D_SHIFTS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3)  # [m]


def _big_grid(nominal_d: float) -> tuple[sw.Parameter, ...]:
    return (
        sw.Parameter("pairs.W4.normal.x", values=(0.0, 0.05)),
        sw.Parameter("pairs.D.point_i.x", values=tuple(nominal_d + d for d in D_SHIFTS)),
        sw.Parameter("bodies.platform.mass", low=5.0, high=15.0, count=100),
    )


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    return mech, mech.build(), mech.initial_state()


def _with_body(mech, name, **fields):
    """`mech` with body `name`'s spec fields replaced (a variant as a user writes it)."""
    bodies = [dataclasses.replace(b, **fields) if b.name == name else b for b in mech.bodies]
    return dataclasses.replace(mech, bodies=bodies)


def _variant_mechanism(mech, w4_normal_x, d_point_x, platform_mass):
    """The variant written the way a user would: by editing the mechanism's spec."""
    bodies = _with_body(mech, "platform", mass=platform_mass).bodies
    pairs = []
    for p in mech.pairs:
        if p.name == "W4":
            p = dataclasses.replace(p, normal=(w4_normal_x, 1.0))
        elif p.name == "D":
            p = dataclasses.replace(p, point_i=(d_point_x, p.point_i[1]))
        pairs.append(p)
    return dataclasses.replace(mech, bodies=bodies, pairs=pairs)


@eqx.filter_jit
def _project_and_analyze(model, state):
    q, qd = rx.drift.Projection()(model, state.q, state.qd, state.t)
    return rx.analyze_solvability(model, q, state.t), q


def test_vmap_over_1000_variants_equals_a_loop(robot):
    mech, model, state = robot
    nominal_d = sw.parameter_targets(model, state)["pairs.D.point_i.x"].nominal
    sweep = sw.Sweep(model, state, _big_grid(nominal_d), project_initial=True)
    values = sweep.table()
    assert values.shape == (1000, 3)
    batched = sw.Evaluator(sweep)(values)
    targets = sweep.targets

    @jax.jit
    def one(x):
        m, s = sw.apply_parameters(model, state, targets, x)
        violation = sw._violation(m, s.q, s.qd, s.t)
        q, qd = rx.drift.Projection()(m, s.q, s.qd, s.t)
        report = rx.analyze_solvability(m, q, s.t)
        return report.rank, report.unique, report.b_norm, violation

    for k, x in enumerate(values):
        rank, unique, b_norm, violation = one(x)
        assert int(rank) == int(batched["rank"][k]), k
        np.testing.assert_array_equal(np.asarray(unique), batched["unique"][k])
        np.testing.assert_allclose(np.asarray(b_norm), batched["b_norm"][k], atol=TOL_ZERO_B)
        np.testing.assert_allclose(
            float(violation), batched["initial_violation"][k], atol=TOL_EXACT
        )
    # A turned wheel or a moved joint D locks the robot.
    turned, moved = values[:, 0] != 0.0, values[:, 1] != nominal_d
    np.testing.assert_array_equal(batched["rank"], np.where(turned | moved, 21, 20))
    assert np.all(batched["consistent"])  # after the projection
    assert np.all(batched["initial_violation"][turned | moved] > 0.0)
    assert np.all(batched["initial_violation"][~(turned | moved)] < TOL_EXACT)

    # Independent oracle: the same variants built from an edited Mechanism spec.
    for k in (0, 313, 999):  # nominal geometry; D moved; W4 turned and D moved
        w4, d_x, mass = values[k]
        variant = _variant_mechanism(mech, w4, d_x, mass)
        built = variant.build()
        swept, _ = sw.apply_parameters(model, state, targets, values[k])
        for a, b in zip(jax.tree.leaves(built), jax.tree.leaves(swept), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=TOL_EXACT, atol=TOL_EXACT)
        report, _ = _project_and_analyze(built, variant.initial_state())
        assert int(report.rank) == int(batched["rank"][k])
        np.testing.assert_array_equal(np.asarray(report.unique), batched["unique"][k])


def test_batched_simulations_equal_single_ones(robot):
    _, model, state = robot
    options = SimulationOptions(t_final=1.0)  # Dopri8, rtol 1e-8, atol 1e-10, 201 states
    sweep = sw.Sweep(
        model,
        state,
        (
            sw.Parameter("pairs.drive.motion.amplitude", low=0.015, high=0.025),
            sw.Parameter("initial.speed", low=0.08, high=0.12),
            sw.Parameter("bodies.platform.mass", low=9.0, high=11.0),
        ),
        sample=sw.RandomSample(20, seed=1),
        analyze=False,
        simulate=True,
        simulation=options,
    )
    values = sweep.table()
    # Vmapped (the accelerators' default; on CPUs the variants run one after
    # another, which the nominal row's test below compares with `simulate`).
    batched = sw.Evaluator(sweep, batch=len(values))(values)
    assert np.all(batched["success"]) and np.all(batched["time_reached"] == 1.0)
    assert np.all(batched["rank_min"] == 20) and np.all(batched["rank_max"] == 20)
    for k in (0, 7, 19):
        amplitude, speed, mass = values[k]
        mech = models.mobile_robot(models.mobile_robot_steering(amplitude), speed=speed)
        mech = _with_body(mech, "platform", mass=mass)
        m, s = mech.build(), mech.initial_state()
        trajectory = rx.simulate(
            m, s, 1.0, stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10)
        )
        markers = np.asarray(rx.equations.marker_positions(m, trajectory.q[-1]))
        np.testing.assert_allclose(batched["final_markers"][k], markers, atol=TOL_SWEEP_SIMULATION)
        violation = max(
            float(trajectory.position_violation.max()), float(trajectory.velocity_violation.max())
        )
        # Both keep the constraints at the drift control's level (a projection after
        # every step); the two programs round differently, so their largest
        # violations (~1e-9) are compared with that level, not with each other.
        assert violation < VIOLATION_LEVEL, violation
        assert batched["max_constraint_violation"][k] < VIOLATION_LEVEL, k
        # About the same steps (the batch is another compiled program).
        assert_similar_steps(batched["steps"][k], trajectory.num_steps, k)


RESUME_SWEEP = """\
[sweep]
mechanism = "{mechanism}"
initial = "project"
chunk_size = 4

[[sweep.parameters]]
name = "pairs.W4.normal.x"
values = [0.0, 0.05]

[[sweep.parameters]]
name = "bodies.platform.mass"
range = [8.0, 12.0]
count = 5
"""


@pytest.fixture(scope="module")
def resumable(tmp_path_factory):
    """A 10-variant sweep file in chunks of 4 (3 chunks with the nominal row), its
    Evaluator (compiled once for every run below) and an uninterrupted run's files."""
    folder = tmp_path_factory.mktemp("sweep")
    path = folder / "sweep.toml"
    path.write_text(RESUME_SWEEP.format(mechanism=MOBILE_ROBOT.as_posix()))
    sweep = sw.load_sweep(path)
    evaluator = sw.Evaluator(sweep)
    reference = sw.run_sweep(sweep, folder / "reference", evaluator=evaluator)
    return path, sweep, evaluator, reference


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_interrupted_sweep_resumes_to_the_same_file(resumable, tmp_path):
    _, sweep, evaluator, reference = resumable
    out = tmp_path / "run"

    def stop_after_first(progress):
        if progress.computed == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sw.run_sweep(sweep, out, on_chunk=stop_after_first, evaluator=evaluator)
    assert sorted(p.name for p in (out / "chunks").iterdir()) == ["chunk-000000.npz"]
    assert not (out / "sweep.npz").exists()

    seen = []
    result = sw.run_sweep(sweep, out, on_chunk=seen.append, evaluator=evaluator)
    assert [p.resumed for p in seen] == [1, 1, 1] and seen[-1].computed == 2
    assert _sha(result) == _sha(reference)  # byte-identical
    assert _sha(out / "summary.json") == _sha(reference.parent / "summary.json")

    data = sw.read_sweep(result)
    assert data["values"].shape == (10, 2) and data["rank"].shape == (10,)
    assert int(data["nominal/rank"]) == 20
    turned = data["values"][:, 0] != 0.0
    np.testing.assert_array_equal(data["changed/rank"], turned)
    # A finished sweep run again computes nothing.
    again = []
    sw.run_sweep(sweep, out, on_chunk=again.append, evaluator=evaluator)
    assert again[-1].computed == 0 and _sha(result) == _sha(reference)


def test_killed_sweep_resumes_to_the_same_file(resumable, tmp_path):
    """A real `kill -9` of a process after its first chunk, on two CPU devices (the
    chunk of 4 sharded 2 + 2), then resumed on one: the same bytes."""
    path, sweep, evaluator, reference = resumable
    out = tmp_path / "killed"
    script = textwrap.dedent(
        f"""
        import os, signal
        from redundax import sweep as sw

        def kill_after_first(progress):
            if progress.computed == 1:
                os.kill(os.getpid(), signal.SIGKILL)

        sw.run_sweep(sw.load_sweep({str(path)!r}), {str(out)!r}, on_chunk=kill_after_first)
        """
    )
    # Two devices, and this process's own XLA flags (tests/run_files.py sets an LLVM
    # level): code generated with other flags may round differently, not the same bytes.
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": flags.strip()}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert sorted(p.name for p in (out / "chunks").iterdir()) == ["chunk-000000.npz"]
    # What a kill during a write leaves behind: a temporary file, never read.
    (out / "chunks" / ".chunk-000001.npz.abc123.tmp").write_bytes(b"half a chunk")
    result = sw.run_sweep(sweep, out, evaluator=evaluator)
    assert _sha(result) == _sha(reference)
    assert not list((out / "chunks").glob(".*.tmp"))


SIMULATED_SWEEP = """\
[sweep]
mechanism = "{mechanism}"
analyze = false
simulate = true
t_final = 0.5

[[sweep.parameters]]
name = "pairs.drive.motion.amplitude"
values = [0.015, 0.025]

[[sweep.parameters]]
name = "bodies.platform.mass"
values = [9.0, 10.0, 11.0]
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """A 6-variant simulated sweep file of the robot (0.5 s), and its files in
    chunks of 2 (4 chunks with the nominal row) from this process."""
    folder = tmp_path_factory.mktemp("simulated")
    path = folder / "sweep.toml"
    path.write_text(SIMULATED_SWEEP.format(mechanism=MOBILE_ROBOT.as_posix()))
    sweep = sw.load_sweep(path)
    evaluator = sw.Evaluator(sweep)
    reference = sw.run_sweep(sweep, folder / "reference", chunk_size=2, evaluator=evaluator)
    return path, sweep, reference, evaluator


def test_the_nominal_row_is_a_single_simulate_of_the_same_file(simulated):
    """The sweep's nominal row is `rx.simulate` of the mechanism file with its
    `[simulation]` options (drift control: a projection after every step), to the
    last bits: the same steps and the same largest violations (issue 35). On CPUs
    the variants of a chunk run one after another, each the program `simulate`
    runs for it alone (in a vmapped batch, round-off differs, and the Schur path's
    solve of Bricard's singular C M⁻¹ Cᵀ at rtol 5e-6 made it 2e-3 of the
    velocity violation). The rank along the motion is the run's own log."""
    from redundax.io import load_config

    _, sweep, reference, _ = simulated
    config = load_config(MOBILE_ROBOT)
    assert isinstance(config.simulation.drift_control, rx.drift.StepProjection)
    trajectory = rx.simulate(config.model, config.state, 0.5, **config.simulation.keywords())
    data = sw.read_sweep(reference)
    assert int(data["nominal/steps"]) == int(trajectory.num_steps)
    for name, field in (
        ("max_position_violation", trajectory.position_violation),
        ("max_velocity_violation", trajectory.velocity_violation),
    ):
        single = float(np.max(field))
        assert single > 0.0
        np.testing.assert_allclose(float(data[f"nominal/{name}"]), single, rtol=1e-12, atol=0.0)
    log = trajectory.singularities
    assert float(data["nominal/sigma_ratio_min"]) == pytest.approx(float(log.min_ratio), rel=1e-12)
    assert int(data["nominal/rank_start"]) == int(log.regular_rank) == 20
    assert int(data["nominal/rank_min"]) == int(data["nominal/rank_max"]) == 20
    np.testing.assert_allclose(
        data["nominal/final_q"], np.asarray(trajectory.q[-1]), rtol=0.0, atol=1e-13
    )


def test_workers_write_the_files_of_one_process(simulated, tmp_path):
    """`run_sweep(..., worker=(i, n))` in a prepared directory computes the missing
    chunks k with k mod n = i and combines nothing; after every worker, a last
    `run_sweep` combines the chunks into the files of one process."""
    _, sweep, reference, evaluator = simulated
    out = tmp_path / "workers"
    with pytest.raises(ValueError, match="a worker needs the directory prepared"):
        sw.run_sweep(sweep, out, chunk_size=2, evaluator=evaluator, worker=(0, 2))
    plan = sw.plan_sweep(sweep, out, chunk_size=2, start=True)
    assert (plan.chunk_size, plan.chunks, plan.pending) == (2, 4, 4)
    seen = []
    sw.run_sweep(sweep, out, chunk_size=2, evaluator=evaluator, worker=(1, 2), on_chunk=seen.append)
    assert [p.chunk for p in seen] == [1, 3] and not (out / "sweep.npz").exists()
    assert sw.plan_sweep(sweep, out).pending == 2  # the manifest's chunk size
    sw.run_sweep(sweep, out, chunk_size=2, evaluator=evaluator, worker=(0, 2))
    result = sw.run_sweep(sweep, out, evaluator=evaluator)
    assert _sha(result) == _sha(reference)
    assert _sha(out / "summary.json") == _sha(reference.parent / "summary.json")


def test_local_processes_write_the_files_of_one_process(simulated, tmp_path):
    """`redundax sweep --processes 2`: two local worker processes (one CPU device
    each, the program one process runs) share the chunks; the command combines
    them into the same bytes as one process with the same chunk size and prints
    the summary once (one JSON object on stdout)."""
    path, _, reference, _ = simulated
    out = tmp_path / "two"
    proc = subprocess.run(
        [sys.executable, "-m", "redundax.cli", "sweep", str(path), "--out", str(out)]
        + ["--processes", "2", "--chunk-size", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "in 2 local processes" in proc.stderr
    summary = json.loads(proc.stdout)  # one object
    assert summary["variants"] == 6 and summary["counts"]["any"] == 0
    for name in ("sweep.npz", "summary.json", "manifest.json"):
        assert _sha(out / name) == _sha(reference.parent / name), name


def test_the_local_processes_by_default(simulated, tmp_path, monkeypatch):
    """By default one local process per core, no more than the chunks to compute
    (one per default chunk of 64 simulations), none where XLA_FLAGS sets a device
    count; `--processes 1` is this process alone; not with --num-processes."""
    from redundax.cli import sweep as command

    path, sweep, reference, _ = simulated
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)

    def choice(*argv, cores=4):
        monkeypatch.setattr(command, "_cores", lambda: cores)
        args = parser.parse_args([str(path), "--out", str(tmp_path / "new"), *argv])
        return command._local_processes(args, sweep, args.processes)

    assert choice() is None  # 7 rows: one chunk of 7
    assert choice("--chunk-size", "2") == (4, 2)
    assert choice("--chunk-size", "2", cores=2) == (2, 2)
    assert choice("--chunk-size", "3", cores=16) == (3, 3)
    assert choice("--processes", "2") == (2, 4)  # chunks of a process's share
    assert choice("--processes", "3") == (3, 3)
    flags = os.environ.get("XLA_FLAGS", "")
    monkeypatch.setenv("XLA_FLAGS", f"{flags} --xla_force_host_platform_device_count=2")
    assert choice("--chunk-size", "2") is None
    assert choice("--processes", "2") == (2, 4)  # asked for: one device each
    monkeypatch.setenv("XLA_FLAGS", flags)
    # A finished sweep: nothing to divide.
    args = parser.parse_args([str(path), "--out", str(reference.parent), "--chunk-size", "2"])
    assert command._local_processes(args, sweep, 2) is None
    with pytest.raises(ValueError, match="--processes: not with --num-processes"):
        command.run(
            parser.parse_args([str(path), "--out", "x", "--processes", "2", "--num-processes", "2"])
        )


def test_the_first_failed_worker_gives_the_exit_status():
    """The command waits for every worker (independent processes: the others
    finish their chunks) and exits with the status of the first that failed."""
    from redundax.cli import sweep as command

    children = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"]),
        subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1); raise SystemExit(3)"]),
    ]
    assert command._wait(children) == 2
    assert [child.returncode for child in children] == [0, 2, 3]


def test_the_rank_along_the_motion_is_read_from_the_singularity_log(robot):
    """`rank_start`, `rank_min`, `rank_max`, `sigma_ratio_min` from a run's
    `SingularityLog` (no decomposition at the saved states): the start rank is the
    structure's, the rank changes logged at step ends widen the range, and a rank
    that falls below the start's marks the variant `singular_along`."""
    from redundax.monitors._singularity import SingularityLog
    from redundax.sweep._evaluate import _rank_along

    _, model, state = robot
    structure = rx.decide(model, state.q, state.t)
    assert int(structure.rank) == 20

    def singular_values(rank):  # descending; σ_20 / σ_1 the measure (r = 20)
        return jax.numpy.where(jax.numpy.arange(22) < rank, 1.0, 0.0)

    log = SingularityLog.start(structure, 0.0, capacity=4)
    steady = _rank_along(structure, log.record(0.0, 0.1, singular_values(20)))
    assert [int(steady[k]) for k in ("rank_start", "rank_min", "rank_max")] == [20, 20, 20]
    assert float(steady["sigma_ratio_min"]) == 1.0
    # Rank 19 for a step (σ_20 = 0), then 21, then 20 again.
    for k, rank in enumerate((19, 21, 20)):
        log = log.record(0.1 * k, 0.1 * (k + 1), singular_values(rank))
    out = _rank_along(structure, log)
    assert [int(out[k]) for k in ("rank_start", "rank_min", "rank_max")] == [20, 19, 21]
    assert float(out["sigma_ratio_min"]) == 0.0
    nominal = {"rank_min": np.int32(20), "rank_start": np.int32(20)}
    data = {
        "consistent": np.ones(2, bool),
        "success": np.ones(2, bool),
        "left_constraints": np.zeros(2, bool),
        "path_accurate": np.ones(2, bool),
        "rank_start": np.array([20, 20]),
        "rank_min": np.array([20, int(out["rank_min"])]),
    }
    sweep = sw.Sweep(
        model,
        state,
        (sw.Parameter("bodies.platform.mass", values=(9.0, 11.0)),),
        analyze=False,
        simulate=True,
    )
    masks = sw._store._changes(sweep, nominal, data)
    assert masks["singular_along"].tolist() == [False, True]
    # No monitor (a mechanism without constraints): the start rank, no ratio.
    alone = _rank_along(structure, None)
    assert int(alone["rank_min"]) == int(alone["rank_max"]) == 20
    assert np.isnan(float(alone["sigma_ratio_min"]))


def test_a_directory_of_another_sweep_is_refused(resumable, tmp_path):
    _, sweep, evaluator, reference = resumable
    other = dataclasses.replace(sweep, chunk_size=5)
    with pytest.raises(ValueError, match=r"holds another sweep .*chunk_size.*--force"):
        sw.run_sweep(other, reference.parent)


def test_invalid_parameter_names_are_named(robot, tmp_path):
    _, model, state = robot
    with pytest.raises(
        ValueError,
        match=r"unknown sweep parameter 'bodies\.platfrom\.mass' "
        r"\(did you mean 'bodies\.platform\.mass'",
    ):
        sw.resolve_parameters(model, state, ["bodies.platfrom.mass"])
    path = tmp_path / "typo.toml"
    path.write_text(
        RESUME_SWEEP.format(mechanism=MOBILE_ROBOT.as_posix()).replace(
            "pairs.W4.normal.x", "pairs.W9.normal.x"
        )
    )
    with pytest.raises(ConfigError) as error:
        sw.load_sweep(path)
    first = str(error.value).splitlines()[0]
    assert (
        "typo.toml: parameters[0] ('pairs.W9.normal.x') key 'name': unknown sweep parameter"
        in first
    )
    assert "did you mean" in first and "'pairs.W4.normal.x'" in first


NORMAL_SWEEP = """\
[sweep]
mechanism = "{mechanism}"
sample = "random"
samples = 4000
seed = 7

[[sweep.parameters]]
name = "pairs.W4.normal.x"
mean = 0.01
std = 0.002

[[sweep.parameters]]
name = "bodies.platform.mass"
range = [8.0, 12.0]
"""


def test_normal_draws_and_their_refusals(tmp_path):
    """`mean` and `std` draw a parameter from a normal distribution (a random sample
    only): the sample's mean and standard deviation within four standard errors of
    the file's; the uniform column keeps to its range. Refused, each named: a
    negative standard deviation, a mean without a standard deviation, normal draws
    in a grid, and a normal mass (it could be drawn ≤ 0)."""
    mechanism = MOBILE_ROBOT.as_posix()
    path = tmp_path / "normal.toml"
    path.write_text(NORMAL_SWEEP.format(mechanism=mechanism))
    sweep = sw.load_sweep(path)
    table = sweep.table()
    n = table.shape[0]
    assert n == 4000
    assert abs(table[:, 0].mean() - 0.01) < 4 * 0.002 / math.sqrt(n)
    assert table[:, 0].std() == pytest.approx(0.002, rel=4 / math.sqrt(2 * n))
    assert 8.0 <= table[:, 1].min() and table[:, 1].max() <= 12.0
    text = NORMAL_SWEEP.format(mechanism=mechanism)
    for edit, message in (
        (("std = 0.002", "std = -0.002"), "key 'std': expected a standard deviation ≥ 0"),
        (("std = 0.002", ""), "a normal distribution needs both 'mean' and 'std'"),
        (
            ('sample = "random"\nsamples = 4000', 'sample = "grid"'),
            "'mean' and 'std' draw random values: use sample = \"random\"",
        ),
        (
            ("range = [8.0, 12.0]", "mean = 10.0\nstd = 1.0"),
            "a mass [kg] must be positive, and a normal distribution draws values of any sign",
        ),
    ):
        path.write_text(text.replace(*edit))
        with pytest.raises(ConfigError) as error:
            sw.load_sweep(path)
        assert message in str(error.value), str(error.value)


def test_command_line_lists_parameters_and_runs_the_example(capsys):
    parser = argparse.ArgumentParser()
    sweep_command.add_arguments(parser)
    assert sweep_command.run(parser.parse_args([str(EXAMPLE), "--list-parameters"])) == 0
    listing = capsys.readouterr().out
    for name in ("bodies.platform.mass", "pairs.drive.motion.amplitude", "initial.speed"):
        assert name in listing
    example = sw.load_sweep(EXAMPLE)
    assert example.simulate and len(example.table()) >= 1000


def test_sweep_command_success_path(tmp_path, capsys):
    """`redundax sweep FILE --out DIR --json`: a 3 × 2 grid of the four-bar (ground
    pivot D moved, projected; crank mass) analysed at each variant's initial state.
    The four-bar is not overconstrained (rank 8 = rows, p = 0) for every variant, so
    nothing changes against the nominal model; the files are written."""
    from redundax import cli

    sweep = tmp_path / "sweep.toml"
    four_bar = Path(__file__).resolve().parents[1] / "configs" / "four_bar.toml"
    sweep.write_text(
        f'[sweep]\nmechanism = "{four_bar}"\ninitial = "project"\n'
        '[[sweep.parameters]]\nname = "pairs.D.point_j.x"\nvalues = [0.9, 1.0, 1.1]\n'
        '[[sweep.parameters]]\nname = "bodies.crank.mass"\nvalues = [0.3, 0.4]\n'
    )
    out = tmp_path / "out"
    status = cli.main(["sweep", str(sweep), "--out", str(out), "--json", "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["variants"] == 6
    assert summary["nominal"]["rank"] == 8 and summary["nominal"]["redundancy"] == 0
    assert summary["counts"]["any"] == 0
    assert {p.name for p in out.iterdir()} >= {"manifest.json", "summary.json", "sweep.npz"}
    data = np.load(out / "sweep.npz")
    np.testing.assert_array_equal(data["rank"], np.full(6, 8))
    assert bool(np.all(data["consistent"]))


def test_a_variant_the_nominal_path_does_not_suit_is_flagged(tmp_path):
    """IFToMM A02's chain of two parallelograms, one coupler's inertia swept down to
    1e-8 kg m²: the nominal mechanism takes the Schur path (ŝ = 0.14), which is
    wrong by a factor 5 for that variant (ŝ = 8e-8; against the augmented
    Lagrangian) although its integration succeeds. The sweep says so per variant
    (`path_accurate`) and in the summary (`changed["inaccurate_path"]`); the
    nominal inertia and 1e-6 (ŝ = 8e-6, Schur within 2e-6) are not flagged."""
    mech = models.n_four_bar(2)
    model, state = mech.build(), mech.initial_state()
    inertias = (1e-6, 1e-8)
    sweep = sw.Sweep(
        model,
        state,
        (sw.Parameter("bodies.coupler1.inertia", values=inertias),),
        analyze=False,
        simulate=True,
        simulation=SimulationOptions(t_final=0.05, saveat=rx.SaveAt(n=3)),
    )
    out = sw.Evaluator(sweep)(np.concatenate([sweep.nominal()[None, :], sweep.table()]))
    np.testing.assert_array_equal(out["path_accurate"], [True, True, False])
    # The wrong path's projection cannot keep the variant on its constraints: its
    # run stops where it leaves them (it reached t_final before the validity check,
    # a silent wrong answer but for `path_accurate`).
    np.testing.assert_array_equal(out["left_constraints"], [False, False, True])
    np.testing.assert_array_equal(out["success"], [True, True, False])
    for inertia, bound in zip(inertias, (1e-5, None), strict=True):
        variant = _with_body(mech, "coupler1", inertia=inertia)
        m, s = variant.build(), variant.initial_state()
        structure = rx.decide(m, s.q, s.t)

        def solve(method, m=m, s=s, structure=structure):
            return np.asarray(
                rx.equations.solve_dynamics(m, s.q, s.qd, structure=structure, method=method)[0]
            )

        reference = solve(rx.methods.AugmentedLagrangian())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rx.AccuracyWarning)  # forced, on purpose
            error = np.max(np.abs(solve(rx.methods.NullSpace(schur=True)) - reference))
        error /= np.max(np.abs(reference))
        assert error < bound if bound else error > 1.0, (inertia, error)
    summary = json.loads(
        (sw.run_sweep(sweep, tmp_path / "out").parent / "summary.json").read_text()
    )
    assert summary["changed"]["inaccurate_path"] == [1]
    assert summary["changed"]["off_constraints"] == [1] and summary["changed"]["failed"] == []


def test_an_elimination_whose_rows_do_not_span_a_variant_is_flagged(robot):
    """The mobile robot's elimination of rows 19 and 20 (0-based), chosen on the
    nominal robot (rank 20 of 22 rows). Turning knife edge W4's normal locks the
    robot (rank 21): the 20 kept rows leave a constraint out, and the integration
    still succeeds (with a violation of 5e-3 where the nominal's is round-off).
    The variant is flagged; the nominal one is not."""
    _, model, state = robot
    method = rx.methods.eliminate(model, state.q, state.t)
    assert method.eliminated == (19, 20)
    sweep = sw.Sweep(
        model,
        state,
        (sw.Parameter("pairs.W4.normal.x", values=(0.0, 0.05)),),
        analyze=True,
        simulate=True,
        simulation=SimulationOptions(t_final=0.2, saveat=rx.SaveAt(n=3), method=method),
    )
    out = sw.Evaluator(sweep)(sweep.table())
    np.testing.assert_array_equal(out["rank"], [20, 21])
    np.testing.assert_array_equal(out["success"], [True, True])
    np.testing.assert_array_equal(out["path_accurate"], [True, False])
    assert out["max_constraint_violation"][1] > 1e-4 > 1e-12 > out["max_constraint_violation"][0]


def test_path_accurate_tells_a_spanning_elimination_from_one_that_is_not():
    """Bricard (rank 59 of 60 rows; its self-stress loads every joint row and some
    rigid-body rows, not row 31): dropping row 1 keeps rows that span C's, dropping
    row 31 does not (the kept rows are dependent) — eagerly and under `jit`, with
    the independent check that the kept rows' rank is 59 or 58."""
    from redundax._qr import pivoted_qr
    from redundax.methods import path_accurate

    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    C = rx.equations.constraint_matrix(model, state.q, state.t)
    for drop, spans in ((1, True), (31, False)):
        keep = tuple(k for k in range(60) if k != drop)
        method = rx.methods.Elimination(keep=keep, n_rows=60)
        assert (int(pivoted_qr(C[np.asarray(keep)].T, 1e-8).rank) == 59) == spans
        assert bool(path_accurate(method, structure, model)) == spans
        jitted = eqx.filter_jit(path_accurate)(method, structure, model)
        assert bool(jitted) == spans


def test_the_default_chunk_on_a_cpu_fits_the_memory_budget():
    """64 simulations per CPU device, unless their saved states and matrices would
    exceed the 1 GiB budget (issue 14): IFToMM A02 with 40 loops and 401 saved
    states (~0.09 GB a variant by the estimate) gets 11 per chunk. Given the
    sweep's rows and processes, no more than a process's share (issue 35)."""
    from redundax._reactions import MEMORY_BUDGET
    from redundax.sweep._evaluate import default_chunk_size

    cpu = jax.devices("cpu")[:1]
    sweeps = {}
    for n, expected in ((1, 64), (40, 11)):
        mech = models.n_four_bar(n)
        sweep = sw.Sweep(
            mech.build(),
            mech.initial_state(),
            (sw.Parameter("bodies.crank0.mass", low=0.9, high=1.1),),
            sample=sw.RandomSample(4, seed=1),
            analyze=False,
            simulate=True,
            simulation=SimulationOptions(t_final=1.0, saveat=rx.SaveAt(n=401)),
        )
        assert default_chunk_size(sweep, cpu) == expected
        sweeps[n] = sweep
    model = mech.build()
    nq, nc = model.n_coordinates, model.n_constraints
    per_variant = 8 * (401 * 4 * nq + 64 * (nc * nq + nq * nq + nc * nc))
    assert 11 * per_variant <= MEMORY_BUDGET < 12 * per_variant
    # Every process gets work: 512 variants and the nominal on 2 processes in
    # chunks of 64 (5 and 4), 64 and the nominal in chunks of 33 (not 64 and 1).
    sweep = sweeps[1]
    assert default_chunk_size(sweep, cpu, rows=513, processes=2) == 64
    assert default_chunk_size(sweep, cpu, rows=65, processes=2) == 33
    assert default_chunk_size(sweep, cpu, rows=65, processes=1) == 64
    assert default_chunk_size(sweep, cpu, rows=5, processes=8) == 1


@pytest.mark.parametrize("list_parameters", [False, True])
def test_a_missing_mechanism_file_names_the_sweep_file_and_its_key(
    tmp_path, capsys, list_parameters
):
    """`[sweep] mechanism = "nothere.toml"`: the error names the sweep file, the
    table and the key (it used to say only `swbad/nothere.toml: no such file`),
    also with --list-parameters (exit 2)."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[sweep]\nmechanism = "nothere.toml"\n'
        '[[sweep.parameters]]\nname = "bodies.crank.mass"\nvalues = [0.3]\n'
    )
    with pytest.raises(ConfigError) as info:
        sw.load_sweep(path)
    assert (info.value.path, info.value.table, info.value.key) == (str(path), "sweep", "mechanism")
    expected = (
        f"redundax: error: {path}: sweep key 'mechanism': no such file "
        f"'{tmp_path / 'nothere.toml'}' ('nothere.toml' is relative to the folder of sweep.toml)"
    )
    from redundax import cli

    argv = ["--list-parameters"] if list_parameters else ["--out", str(tmp_path / "out")]
    status = cli.main(["sweep", str(path), *argv])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.splitlines() == [expected]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-1.0"])
def test_a_sweep_t_final_that_is_not_a_positive_finite_time_is_refused(tmp_path, capsys, value):
    """`[sweep] t_final = inf` used to run and exit 0: refused naming the file, the
    table and the key (exit 2), like NaN and negative times."""
    from redundax import cli

    (tmp_path / "four_bar.toml").write_text((ROOT / "configs" / "four_bar.toml").read_text())
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nmechanism = "four_bar.toml"\nsimulate = true\nt_final = {value}\n'
        '[[sweep.parameters]]\nname = "bodies.crank.mass"\nvalues = [0.3]\n'
    )
    with pytest.raises(ConfigError) as info:
        sw.load_sweep(path)
    assert (info.value.path, info.value.table, info.value.key) == (str(path), "sweep", "t_final")
    assert "a positive finite number [s]" in str(info.value)
    status = cli.main(["sweep", str(path), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 2 and "t_final" in captured.err and len(captured.err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_initial_velocity_of_a_mechanism_at_rest_is_not_sweepable(tmp_path, capsys):
    """The four-bar starts at rest: `initial.speed` is refused saying so (not "unknown"
    while listed among the addresses), and neither it nor `initial.velocity_scale`
    (no effect on q̇⁰ = 0) is listed, in the error or by --list-parameters."""
    from redundax import cli

    (tmp_path / "four_bar.toml").write_text((ROOT / "configs" / "four_bar.toml").read_text())
    path = tmp_path / "speed.toml"
    path.write_text(
        '[sweep]\nmechanism = "four_bar.toml"\nsimulate = true\n'
        '[[sweep.parameters]]\nname = "initial.speed"\nvalues = [0.5, 1.0]\n'
    )
    with pytest.raises(ConfigError) as info:
        sw.load_sweep(path)
    error = info.value
    assert (error.table, error.key) == ("parameters[0] ('initial.speed')", "name")
    message = error.problems[0].message
    assert message.startswith(
        "sweep parameter 'initial.speed' has no effect on this mechanism: the mechanism "
        "starts at rest (every initial velocity is 0), so its initial speed cannot be scaled"
    )
    assert "unknown" not in message
    path.write_text(path.read_text().replace("initial.speed", "initial.velocity_scale"))
    with pytest.raises(ConfigError, match="'initial.velocity_scale' has no effect"):
        sw.load_sweep(path)
    # A misspelt address lists the forms of this mechanism's addresses only.
    path.write_text(path.read_text().replace("initial.velocity_scale", "bodies.crnak.mass"))
    with pytest.raises(ConfigError) as info:
        sw.load_sweep(path)
    message = info.value.problems[0].message
    assert "this mechanism's addresses are bodies.<BODY>.mass|inertia, " in message
    assert "initial." not in message and "loads[k]" not in message
    status = cli.main(["sweep", str(path), "--list-parameters"])
    out = capsys.readouterr().out
    assert status == 0 and "bodies.crank.mass" in out
    assert "initial." not in out
    # The moving robot keeps both (its platform moves at 0.1 m/s).
    status = cli.main(["sweep", str(EXAMPLE), "--list-parameters"])
    out = capsys.readouterr().out
    assert status == 0 and "initial.speed" in out and "initial.velocity_scale" in out


def test_a_variant_that_leaves_its_constraints_is_flagged_and_its_run_stops(robot):
    """The robot's steering driven past the end of its travel (amplitude 0.115 m
    instead of 0.02 m, as in configs/sweep_mobile_robot.toml) has no motion on its
    constraints after about 1.29 s: the variant's run stops there (`left_at`), is
    flagged under `changed/off_constraints` and in `any` — not as a success, and not
    under `failed` — while the nominal amplitude and a small one are not flagged.
    Compared with a single `rx.simulate` of the same variant (a second run)."""
    _, model, state = robot
    parameters = (sw.Parameter("pairs.drive.motion.amplitude", values=(0.01, 0.115)),)
    options = SimulationOptions(t_final=1.5)
    sweep = sw.Sweep(model, state, parameters, analyze=False, simulate=True, simulation=options)
    table = sweep.table()
    data = sw.Evaluator(sweep)(table)
    assert data["left_constraints"].tolist() == [False, True]
    assert data["success"].tolist() == [True, False]
    mech = models.mobile_robot(models.mobile_robot_steering(0.115))
    single = rx.simulate(mech.build(), mech.initial_state(), 1.5, throw=False)
    assert bool(single.left_constraints)
    # Found at a step end: the batched program's steps differ from the single run's
    # by round-off, so the two step ends differ by a small part of a step.
    assert data["left_at"][1] == pytest.approx(float(single.left_at), abs=1e-3)
    assert 1.0 < data["left_at"][1] < 1.5 and np.isnan(data["left_at"][0])
    nominal = {key: value[0] for key, value in data.items()}
    masks = sw._store._changes(sweep, nominal, data)
    assert masks["off_constraints"].tolist() == [False, True]
    assert masks["failed"].tolist() == [False, False]
    assert masks["any"].tolist() == [False, True]


def test_the_masks_read_the_validity_criterion_not_the_rank(robot):
    """`changed/off_constraints` is the runs' own validity verdict; a rank that rose
    (which Bricard's geometric redundancy shows off the manifold by 1e-8) flags
    nothing by itself, and a run that stopped for another reason is `failed`."""
    _, model, state = robot
    parameters = (sw.Parameter("pairs.drive.motion.amplitude", values=(0.02, 0.115)),)
    simulation = SimulationOptions(t_final=0.2)
    sweep = sw.Sweep(model, state, parameters, analyze=False, simulate=True, simulation=simulation)
    nominal = {"max_constraint_violation": np.float64(4e-9)}
    data = {
        "consistent": np.ones(4, dtype=bool),
        "success": np.array([True, False, True, False]),
        "left_constraints": np.array([False, True, False, False]),
        "path_accurate": np.ones(4, dtype=bool),
        "max_constraint_violation": np.array([5e-9, 0.7, 1e-7, np.nan]),
        "rank_start": np.full(4, 20),
        "rank_min": np.full(4, 20),
        "rank_max": np.array([20, 21, 21, 20]),
    }
    masks = sw._store._changes(sweep, nominal, data)
    assert masks["off_constraints"].tolist() == [False, True, False, False]
    assert masks["failed"].tolist() == [False, False, False, True]
    assert masks["any"].tolist() == [False, True, False, True]


def test_the_python_api_offers_no_initial_velocity_of_a_mechanism_at_rest(robot):
    """`parameter_targets` (what `Sweep` and `resolve_parameters` read) offers the
    initial velocity's scale and speed only when the mechanism moves at the start:
    the four-bar starts at rest, the robot at 0.1 m/s."""
    mech = models.four_bar()
    at_rest = sw.parameter_targets(mech.build(), mech.initial_state())
    assert "initial.velocity_scale" not in at_rest and "initial.speed" not in at_rest
    _, model, state = robot
    moving = sw.parameter_targets(model, state)
    assert moving["initial.speed"].nominal == pytest.approx(0.1)
    assert moving["initial.velocity_scale"].nominal == 1.0
