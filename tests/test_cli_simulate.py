"""`redundax simulate`: the JSON contract (DESIGN.md §7), the run files written by
`--out` (NPZ, CSV), refusing to overwrite, the redundancy methods of `[simulation]`,
and one-line errors naming the key.

Runs are short (`--t-final 1`): the cost is the compilation, once per mechanism and
method in this process."""

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import redundax as rx
from helpers import TOL_A02_POSITION, a02_config, a02_exact_b0, a02_flat_instants, four_bar_apart
from redundax.cli import main
from redundax.io import check_output, read_run

ROOT = Path(__file__).resolve().parents[1]
MOBILE_ROBOT = ROOT / "configs" / "mobile_robot.toml"
FOUR_BAR = ROOT / "configs" / "four_bar.toml"
MOBILE_TEXT = MOBILE_ROBOT.read_text(encoding="utf-8")

T_FINAL = "1.0"  # s: through the first steering step (0.5–1.5 s), yet fast
MARKERS = ("platform_centre", "W1", "W2", "W3", "W4", "W5")
# DESIGN.md §6: the paper's verdicts for the mobile robot.
UNIQUE = ("A", "D", "E", "F", "G", "H", "drive", "W5")
NOT_UNIQUE = ("B", "C", "W1", "W2", "W3", "W4")
# The defaults rtol 1e-8, atol 1e-10 and Baumgarte α = β = 10 /s keep the drift of
# the robot well below this over 1 s (about 4e-10 measured).
TOL_DRIFT = 1e-7
# Four-bar under gravity, 1 s at the default tolerances: 8e-8 J measured.
TOL_ENERGY = 1e-6
# The motion does not depend on the redundancy method: null space and elimination
# agree to the integrator's tolerance (1e-10 measured).
TOL_SAME_MOTION = 1e-7
# A heartbeat line (stderr not a terminal): the wall time, then what the run does.
HEARTBEAT = re.compile(r"redundax: .+: \d+ s elapsed(, .+)?")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def _messages(err: str) -> list[str]:
    """The lines of stderr less the heartbeat lines, which a run prints when it (its
    compilation included) lasts longer than PROGRESS_AFTER (30 s) of wall time: under
    other load, the runs of the tests below do (4 lines where 1 was expected, seen in
    a run of this file at load ~15)."""
    return [line for line in err.splitlines() if not HEARTBEAT.fullmatch(line)]


def _config_with(tmp_path: Path, table: str, name: str = "robot.toml") -> Path:
    """The mobile robot with `table` added to its [simulation] table."""
    path = tmp_path / name
    path.write_text(MOBILE_TEXT.rstrip("\n") + "\n" + table + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def robot(tmp_path_factory) -> dict:
    """One null-space run of the mobile robot with `--json --out run.npz`."""
    folder = tmp_path_factory.mktemp("robot")
    npz = folder / "run.npz"
    status, out, err = _run("simulate", MOBILE_ROBOT, "--t-final", T_FINAL, "--json", "--out", npz)
    assert status == 0, err
    return {"status": status, "out": out, "err": err, "npz": npz, "folder": folder}


def test_json_follows_the_contract(robot):
    # Not a terminal: at most the heartbeat lines of a long run on stderr.
    assert all(HEARTBEAT.fullmatch(line) for line in robot["err"].splitlines())
    summary = json.loads(robot["out"])  # the whole of stdout is one JSON object
    assert isinstance(summary["t_final"], float) and summary["t_final"] == 1.0
    assert isinstance(summary["steps"], int) and summary["steps"] > 0
    assert isinstance(summary["max_constraint_violation"], float)
    assert 0.0 <= summary["max_constraint_violation"] < TOL_DRIFT
    assert summary["max_constraint_violation"] == max(
        summary["max_position_violation"], summary["max_velocity_violation"]
    )
    assert len(summary["final_q"]) == 21
    assert all(isinstance(x, float) for x in summary["final_q"])
    assert list(summary["tracked"]) == list(MARKERS)
    for point in summary["tracked"].values():
        assert len(point) == 2 and all(isinstance(x, float) for x in point)
    # The platform centre is body 1's origin: its tracked point is q[0:2].
    assert summary["tracked"]["platform_centre"] == summary["final_q"][:2]
    assert summary["energy_error"] is None  # the driver does work
    assert summary["rheonomic"] == ["drive"]
    assert summary["method"] == "null-space" and summary["eliminated_rows"] is None
    assert {name for name, u in summary["unique"].items() if u} == set(UNIQUE)
    assert {name for name, u in summary["unique"].items() if not u} == set(NOT_UNIQUE)
    assert summary["out"] == str(robot["npz"])
    assert summary["dim"] == 2
    # Per pair, whether each labelled reaction component is unique: all of a unique
    # pair's components are, and a pair whose components all are is unique.
    assert list(summary["components"]) == list(summary["unique"])
    for name, flags in summary["components"].items():
        assert all(isinstance(u, bool) for u in flags.values())
        if summary["unique"][name]:
            assert all(flags.values()), name
    assert list(summary["components"]["A"]) == list(rx.joints.Revolute.components)


def test_npz_run_is_consistent_with_the_json(robot):
    summary = json.loads(robot["out"])
    run = read_run(robot["npz"])
    T = run["t"].shape[0]
    assert T == 201 and run["t"][-1] == summary["t_final"]
    assert run["q"].shape == run["qd"].shape == run["qdd"].shape == (T, 21)
    np.testing.assert_array_equal(run["q"][-1], summary["final_q"])
    assert list(run["tracked"]) == list(MARKERS)
    for name, point in summary["tracked"].items():
        np.testing.assert_array_equal(run["tracked"][name][-1], point)
    assert list(run["reactions"]) == [*"ABCDEFGH", "drive", "W1", "W2", "W3", "W4", "W5"]
    assert run["unique"]["D"] is True and run["unique"]["B"] is False
    assert run["unique"] == summary["unique"]
    assert run["reactions"]["B"].shape == (T, 7, 3)
    assert run["rows"]["C"] == (5, 6) and run["rows"]["W4"] == (21,)
    assert run["multipliers"].shape == (T, 22)
    # Sane minimum-norm multipliers all along (no rank flip off the manifold).
    assert np.all(np.isfinite(run["multipliers"])) and np.abs(run["multipliers"]).max() < 1e3
    assert run["meta"]["method"] == "null-space" and run["meta"]["config"] == str(MOBILE_ROBOT)
    assert run["position_violation"].max() <= summary["max_constraint_violation"]
    # Labelled reaction components: −λ of the pair's rows, with the JSON's flags.
    assert run["dim"] == 2 and run["component_unique"] == summary["components"]
    components = run["components"]["C"]
    assert list(components) == list(rx.joints.Revolute.components)
    np.testing.assert_array_equal(
        np.stack(list(components.values()), axis=1), -run["multipliers"][:, [4, 5]]
    )
    assert run["joint_moment"]["C"].shape == (T, 7)
    # Plain numpy reads it without pickles, with the documented names.
    with np.load(robot["npz"], allow_pickle=False) as npz:
        assert {"t", "q", "qd", "qdd", "tracked", "reaction/B", "unique/B"} <= set(npz.files)
        assert npz["tracked"].shape == (T, 6, 2) and not bool(npz["unique/B"])
        assert {"components/B", "component_labels/B", "component_unique/B"} <= set(npz.files)
        assert npz["joint_moment/B"].shape == (T, 7)


def test_csv_run_marks_the_non_unique_columns(robot):
    csv = robot["folder"] / "run.csv"
    status, out, err = _run("simulate", MOBILE_ROBOT, "--t-final", T_FINAL, "--json", "--out", csv)
    assert status == 0, err
    summary = json.loads(out)
    meta, header, *rows = csv.read_text(encoding="utf-8").splitlines()
    assert meta.startswith("# redundax run: ")
    assert json.loads(meta.removeprefix("# redundax run: "))["mechanism"].startswith("mobile")
    columns = header.split(",")
    assert len(rows) == 201 and all(len(r.split(",")) == len(columns) for r in rows)
    assert columns[:2] == ["t", "q[0]"] and "tracked.W3.x" in columns
    assert "reaction.B.platform.Fx (not unique)" in columns
    assert "reaction.B.wheel_left.Mz (not unique)" in columns
    assert "reaction.D.link_left.Fy" in columns
    for column in columns:
        pair = column.split(".")[1] if column.startswith(("reaction.", "joint_moment.")) else None
        if pair is not None:
            assert column.endswith("(not unique)") == (pair in NOT_UNIQUE), column
    assert "joint_moment.B.platform.Mz (not unique)" in columns
    assert "joint_moment.D.link_left.Mz" in columns
    # B's x component is unique at q⁰ (`redundax analyze`: "B: force x unique, force
    # y NOT unique") but not once the wheels turn: a verdict decided once for the
    # whole run (the Structure's stable verdict) does not claim it.
    x, y = rx.joints.Revolute.components
    assert f"component.B.{x} (not unique)" in columns
    assert f"component.B.{y} (not unique)" in columns
    assert f"component.D.{x}" in columns and f"component.D.{y}" in columns
    # One column per reaction component, suffixed as the JSON flags it.
    for pair, flags in summary["components"].items():
        for label, unique in flags.items():
            name = f"component.{pair}.{label}"
            assert (name if unique else name + " (not unique)") in columns
    table = np.array([[float(x) for x in r.split(",")] for r in rows])
    q = [columns.index(f"q[{k}]") for k in range(21)]
    np.testing.assert_array_equal(table[-1, q], summary["final_q"])
    x, y = columns.index("tracked.W3.x"), columns.index("tracked.W3.y")
    np.testing.assert_array_equal(table[-1, [x, y]], summary["tracked"]["W3"])
    assert sorted(p.name for p in robot["folder"].iterdir()) == ["run.csv", "run.npz"]  # no temp


def test_refuses_to_overwrite_without_force(robot, tmp_path):
    path = tmp_path / "run.npz"
    path.write_bytes(b"precious")
    status, out, err = _run("simulate", MOBILE_ROBOT, "--t-final", T_FINAL, "--out", path)
    assert status == 2 and out == ""
    assert err.splitlines() == [
        f"redundax: error: {path}: already exists; pass --force to overwrite it"
    ]
    assert path.read_bytes() == b"precious"
    # With --force it is replaced; the human summary this time.
    status, out, err = _run(
        "simulate", MOBILE_ROBOT, "--t-final", T_FINAL, "--out", path, "--force"
    )
    assert status == 0, err
    assert read_run(path)["unique"]["D"] is True
    assert "tracked points at t = 1 s" in out and "platform_centre" in out
    assert "NOT unique (the method's choice only): B, C, W1, W2, W3, W4" in out
    # B's x force is unique at q⁰ only (straight wheels), not along the run.
    assert not any(line.startswith("  B: unique components") for line in out.splitlines())
    assert "energy error: n/a" in out and f"wrote {path}" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]


def test_elimination_rows_from_the_config(robot, tmp_path):
    config = _config_with(tmp_path, 'method = "elimination"\neliminate = [6, 21]')
    npz = tmp_path / "elim.npz"
    status, out, err = _run("simulate", config, "--t-final", T_FINAL, "--json", "--out", npz)
    assert status == 0, err
    summary, reference = json.loads(out), json.loads(robot["out"])
    assert summary["method"] == "elimination" and summary["eliminated_rows"] == [6, 21]
    np.testing.assert_allclose(
        summary["final_q"], reference["final_q"], rtol=0.0, atol=TOL_SAME_MOTION
    )
    run = read_run(npz)
    assert np.all(run["multipliers"][:, [5, 20]] == 0.0)  # rows 6 and 21, exactly
    assert np.any(run["multipliers"][:, 4] != 0.0)
    # Unique reactions agree with the null-space run; the flags are the same.
    assert run["unique"] == read_run(robot["npz"])["unique"]


def test_four_bar_conserves_energy():
    status, out, err = _run("simulate", FOUR_BAR, "--t-final", T_FINAL, "--json")
    assert status == 0, err
    summary = json.loads(out)
    assert isinstance(summary["energy_error"], float)
    assert 0.0 <= summary["energy_error"] < TOL_ENERGY
    assert summary["rheonomic"] == [] and list(summary["tracked"]) == ["B"]
    assert len(summary["final_q"]) == 9 and all(summary["unique"].values())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_never_on_stdout():
    out, err = io.StringIO(), _Terminal()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["simulate", str(FOUR_BAR), "--t-final", T_FINAL, "--json"])
    assert status == 0, err.getvalue()
    assert json.loads(out.getvalue())["t_final"] == 1.0  # stdout: exactly the JSON object
    lines = err.getvalue().splitlines()
    assert lines and all(line.startswith("redundax: ") for line in lines)
    assert "simulating four-bar linkage to t = 1 s" in lines[0]
    # The progress bar of the integration, redrawn in place, ends at 100 %.
    assert any(line.endswith("% of t_final") for line in lines)
    assert "100.0 % of t_final" in err.getvalue()


def test_progress_lines_without_a_terminal(monkeypatch):
    """stderr a file (a batch job's log): after PROGRESS_AFTER (30 s), one line per
    PROGRESS_INTERVAL (10 s) of wall time while the run lasts, with the simulated
    time and the steps reached, stdout still exactly the JSON (issue 14: a long run
    printed nothing at all)."""
    from redundax.cli import _common, simulate

    monkeypatch.setattr(_common, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(_common, "PROGRESS_INTERVAL", 0.002)
    monkeypatch.setattr(simulate._Progress, "steps", 4)  # several segments
    texts = []  # every status the lines may show, in order

    class Recorded(_common.Status):
        def __setattr__(self, name, value):
            texts.append(value)
            super().__setattr__(name, value)

    monkeypatch.setattr(_common, "Status", Recorded)
    status, out, err = _run("simulate", FOUR_BAR, "--t-final", T_FINAL, "--json")
    summary = json.loads(out)
    assert status == 0 and summary["t_final"] == 1.0
    lines = err.splitlines()
    assert lines and all(
        line.startswith("redundax: simulating four-bar linkage to t = 1 s: ")
        and HEARTBEAT.fullmatch(line)
        and line.endswith((" s elapsed", *(f", {text}" for text in texts)))
        for line in lines
    )
    # After every segment of 4 steps: the simulated time and the steps reached.
    where = [re.fullmatch(r"t = (\S+) s of 1 s, (\d+) steps", text) for text in texts]
    reached = [(float(m[1]), int(m[2])) for m in where if m]
    steps = summary["steps"]
    assert [n for _, n in reached] == [*range(4, steps, 4), steps]
    assert np.all(np.diff([t for t, _ in reached]) > 0) and reached[-1][0] == 1.0
    assert texts[-1] == f"integrated ({steps} steps)"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            'method = "nullspace"',
            "simulation key 'method': unknown method 'nullspace' (did you mean 'null-space'?",
        ),
        ("max_step = 0.1", "simulation: unknown key 'max_step'"),
        ("t_final = -1.0", "simulation key 't_final': must be positive, got -1.0"),
        (
            'method = "elimination"\neliminate = [1, 21]',
            "simulation key 'eliminate': dropping rows 1 (pair 'A'), 21 (pair 'W4') changes "
            "the motion",
        ),
        ("stiffness = 1e6", "simulation key 'stiffness': applies only with method = 'penalty'"),
    ],
)
def test_bad_simulation_options_give_one_line_naming_the_key(tmp_path, table, message):
    if table.startswith("t_final"):
        path = tmp_path / "robot.toml"
        path.write_text(MOBILE_TEXT.replace("t_final = 10.0", table), encoding="utf-8")
    else:
        path = _config_with(tmp_path, table)
    status, out, err = _run("simulate", path, "--json")
    assert status == 2 and out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"redundax: error: {path}: {message}"), err


def test_bad_t_final_argument():
    status, out, err = _run("simulate", MOBILE_ROBOT, "--t-final", "-1")
    assert status == 2 and out == ""
    assert err.startswith("usage: redundax simulate")  # argparse: usage, then the error
    assert err.splitlines()[-1] == (
        "redundax simulate: error: argument --t-final: expected a positive number, got '-1'"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("run.txt", "unknown output format '.txt'; use a file name ending in .npz or .csv"),
        ("no/such/dir/run.npz", "no such directory 'no/such/dir'"),
    ],
)
def test_bad_out_is_refused_before_simulating(tmp_path, monkeypatch, name, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = _run("simulate", MOBILE_ROBOT, "--out", name)
    assert status == 2 and out == ""
    assert err.splitlines() == [f"redundax: error: --out: {name}: {message}"]
    assert list(tmp_path.iterdir()) == []


def test_check_output(tmp_path):
    assert check_output(tmp_path / "a.csv") == tmp_path / "a.csv"
    (tmp_path / "a.csv").write_text("x")
    exists = r"already exists; pass --force to overwrite it \(force=True in Python\)"
    with pytest.raises(FileExistsError, match=exists):
        check_output(tmp_path / "a.csv")
    assert check_output(tmp_path / "a.csv", force=True) == tmp_path / "a.csv"
    with pytest.raises(ValueError, match="unknown output format"):
        check_output(tmp_path / "a")
    with pytest.raises(ValueError, match="reads .npz runs only"):
        read_run(tmp_path / "a.csv")


def test_a_memory_budget_one_state_does_not_fit_is_refused_before_the_run(tmp_path):
    """Exit 2, one line naming the budget and the option, nothing on stdout, no
    file, and no simulation first (issue 14: the reactions of a long run used to
    die in a raw RESOURCE_EXHAUSTED traceback after the whole integration)."""
    npz = tmp_path / "run.npz"
    status, out, err = _run(
        "simulate", MOBILE_ROBOT, "--out", npz, "--memory-budget", "1e-9", "--json"
    )
    assert status == 2 and out == "" and not npz.exists()
    assert err.startswith("redundax: error: out of memory: the reactions at one state")
    assert "--memory-budget" in err and len(err.splitlines()) == 1


def test_an_xla_runtime_error_is_one_line(monkeypatch):
    """An error raised by XLA while running (here: out of memory) reaches the user
    as one line with what to change, never as a traceback."""
    import jax

    from redundax.cli import simulate as command

    def exhausted(*args, **kwargs):
        raise jax.errors.JaxRuntimeError(
            "RESOURCE_EXHAUSTED: Out of memory allocating 69871251984 bytes.\nmore detail"
        )

    monkeypatch.setattr(command, "cached_call", exhausted)
    status, out, err = _run("simulate", FOUR_BAR, "--json")
    assert status == 2 and out == ""
    assert err.startswith("redundax: error: out of memory while running the computation")
    assert "n_save" in err and len(err.splitlines()) == 1


def test_a_mechanism_that_cannot_be_assembled_is_not_projected_silently(tmp_path):
    """The four-bar with its ground pivots 3 m apart (links 0.4 + 1.2 + 0.8 m) and
    `initial = "project"`: no configuration closes the loop. Exit 2, the file named,
    nothing on stdout (issue 14: it exited 0 with violations of 0.02 to 0.8)."""
    path = four_bar_apart(tmp_path)
    status, out, err = _run("simulate", path, "--json")
    assert status == 2 and out == ""
    assert err.startswith(
        f"redundax: error: {path}: the initial state could not be projected onto the constraints"
    )
    assert "pair 'D': position residual" in err and "can the mechanism be assembled" in err


def test_numbers_that_overflow_are_an_error_not_nan(tmp_path):
    """A pendulum pivoted at (1e308, 1e308) under gravity: its potential energy is
    not a float64. Exit 2 with one line, never `NaN` in the JSON (issue 14)."""
    path = tmp_path / "far.toml"
    path.write_text(
        '[mechanism]\nname = "far pendulum"\ngravity = [0.0, -9.81]\n'
        '[[bodies]]\nname = "bob"\nmass = 1.0\ninertia = 0.1\nposition = [1e308, 1e308]\n'
        'angular_velocity = 1.0\n[[pairs]]\nname = "pivot"\ntype = "revolute"\n'
        'body_i = "bob"\nbody_j = "ground"\npoint_i = [0.0, 0.0]\npoint_j = [1e308, 1e308]\n',
        encoding="utf-8",
    )
    status, out, err = _run("simulate", path, "--json", "--t-final", "0.1")
    messages = _messages(err)
    assert status == 2 and out == "" and len(messages) == 1, err
    assert messages[0].startswith(f"redundax: error: {path}: the energy is not finite")


@pytest.mark.parametrize("n", [1, 10])
def test_a02_chains_keep_their_branch_through_the_command_line(tmp_path, n):
    """Issue 14's case: `redundax simulate` with no method key (nor solver, nor drift
    control) on IFToMM A02 chains of n parallelograms for 10 s, through about twenty
    flat poses where the rank of C drops by n. B0 within the benchmark's high
    precision (1e-3 m) of the exact 1-DOF motion integrated here (tests/helpers.py),
    every crank parallel to the first (the other branch differs by O(1) rad), the
    energy kept to 1e-4, and each flat pose of the exact motion listed once in the
    JSON's singular_passages (within 10 ms). With Baumgarte terms alone, n = 10
    ended 2.0 m off with 10 % of the energy gained, and said nothing."""
    path, npz = tmp_path / "a02.toml", tmp_path / "a02.npz"
    path.write_text(a02_config(n, 10.0, 1001), encoding="utf-8")
    status, out, err = _run("simulate", path, "--json", "--out", npz)
    assert status == 0 and "warning" not in err, err
    summary = json.loads(out)
    assert summary["method"] == "null-space" and summary["solver"] == "dopri8"
    run = read_run(npz)
    ts = np.asarray(run["t"])
    b0 = np.asarray(run["tracked"]["B0"])
    assert float(np.max(np.linalg.norm(b0 - a02_exact_b0(n, ts), axis=1))) < TOL_A02_POSITION
    cranks = np.asarray(run["q"]).reshape(len(ts), -1, 3)[:, : n + 1, 2]
    assert float(np.max(np.abs(cranks - cranks[:, :1]))) < 1e-4
    energy = np.asarray(run["energy"])
    assert float(np.max(np.abs(energy - energy[0]))) < 1e-4 * abs(float(energy[0]))
    flat = a02_flat_instants(n, 10.0)
    passages = summary["singular_passages"]
    assert len(flat) == 10 and len(passages) == len(flat)
    np.testing.assert_allclose([p["t"] for p in passages], flat, rtol=0, atol=1e-2)
    assert all(p["window"][0] <= p["t"] <= p["window"][1] for p in passages)
    assert all("every integrator step" in p["action"] for p in passages)
    assert summary["min_sigma_ratio"] < 1e-6 and summary["rank_changes"] == []
    if n == 1:
        # Baumgarte's terms alone (`projection = false`): the same passages, and a
        # warning line that the motion may have left its branch.
        risky = tmp_path / "risky.toml"
        text = a02_config(1, 2.0, 21).replace("n_save = 21", "n_save = 21\nprojection = false")
        risky.write_text(text, encoding="utf-8")
        status, out, err = _run("simulate", risky, "--json")
        assert status == 0
        assert len(json.loads(out)["singular_passages"]) == 2
        messages = _messages(err)
        assert len(messages) == 1, err
        assert messages[0].startswith(f"redundax: warning: {risky}: the motion passed 2 singular")
        assert 'projection = "steps"' in messages[0]


def test_a_terminated_run_leaves_no_temporary_file(tmp_path, monkeypatch):
    """SIGTERM (`kill`, a batch system's time limit) while the run file is being
    written: status 143, one line, no file under its final name and no
    `.run.npz.XXXX.tmp` left behind (issue 14: Python's default action skipped the
    clean-up)."""
    import os
    import signal

    from redundax.io import results

    def killed(file, **arrays):
        file.write(b"half a file")
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(results.np, "savez", killed)
    npz = tmp_path / "run.npz"
    # The four-bar's run of the tests above (same t_final): its program compiled once.
    status, out, err = _run("simulate", FOUR_BAR, "--t-final", T_FINAL, "--out", npz, "--json")
    assert (status, out) == (143, "") and err.endswith("redundax: terminated\n")
    assert all(HEARTBEAT.fullmatch(line) for line in err.splitlines()[:-1])
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler restored


@pytest.mark.parametrize("force", [False, True])
def test_out_naming_a_directory_is_refused_before_simulating(tmp_path, monkeypatch, force):
    """`--out d.npz` where d.npz is a directory: exit 2, one line naming --out, before
    the run (it used to end, after the whole run, in a raw `[Errno 21] Is a
    directory`), with --force too: a file cannot replace a directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.npz").mkdir()
    argv = ["simulate", FOUR_BAR, "--t-final", "0.1", "--out", "d.npz"]
    status, out, err = _run(*argv, *(["--force"] if force else []))
    assert status == 2 and out == ""
    assert err.splitlines() == [
        "redundax: error: --out: d.npz: is a directory; name a file (.npz or .csv)"
    ]
    assert list((tmp_path / "d.npz").iterdir()) == []
    with pytest.raises(IsADirectoryError, match="is a directory"):
        check_output(tmp_path / "d.npz", force=True)


def test_simulate_reports_the_stable_verdicts(robot):
    """simulate's `components` are the stable verdicts (configs/README.md, "Which
    verdict each command reports"): pair B's x force, unique at the initial
    configuration (what analyze reports), is not unique once the wheels turn."""
    summary = json.loads(robot["out"])
    assert summary["components"]["B"] == {"force x": False, "force y": False}
    assert summary["unique"]["B"] is False
    structure = rx.decide(*_robot_state())
    row = 2  # B's x row (0-based)
    assert bool(structure.row_unique[row]) and not bool(structure.stable_row_unique[row])


def _robot_state():
    mech = rx.models.mobile_robot()
    model, state = mech.build(), mech.initial_state()
    return model, state.q, state.t
