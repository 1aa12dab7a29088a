"""What a user sees after a mistake (issue 6): for each of a dozen distinct mistakes
in configuration files and command-line arguments, `redundax` exits with status 2
and prints one line `redundax: error: FILE: where: what` on stderr (a hint may
follow on later lines) — the file, the table and key, and the fix where it is
obvious — never a traceback, and nothing on stdout. The messages are checked word
for word where they name things, so a change that makes one vaguer fails here."""

import dataclasses
import json
import os
import stat
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import four_bar_design
from redundax import cli
from redundax.optimize import DesignProblem, Evaluation

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
FOUR_BAR = (CONFIGS / "four_bar.toml").read_text()


def _run(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# (name, edit of configs/four_bar.toml, command, expected text in the first line)
CONFIG_MISTAKES = [
    (
        "non-positive mass",
        lambda s: s.replace("mass = 0.4", "mass = -0.4"),
        "analyze",
        "bodies[0] (\"crank\") key 'mass': must be positive, got -0.4",
    ),
    (
        "unknown body",
        lambda s: s.replace(
            'body_i = "rocker"\nbody_j = "ground"', 'body_i = "roker"\nbody_j = "ground"'
        ),
        "analyze",
        "pairs[3] (\"D\") key 'body_i': unknown body 'roker' (did you mean 'rocker'?",
    ),
    (
        "wrong vector length",
        lambda s: s.replace(
            "position = [0.10000000000000003, 0.17320508075688773]", "position = [0.1, 0.17, 0.0]"
        ),
        "analyze",
        "bodies[0] (\"crank\") key 'position': expected a vector [x, y] of 2 numbers, "
        "got an array of length 3",
    ),
    (
        "misspelt simulation key",
        lambda s: s.replace("t_final = 2.0", "t_final = 2.0\nrtoll = 1e-8"),
        "analyze",
        "simulation: unknown key 'rtoll' (did you mean 'rtol'?",
    ),
    (
        "code where a number belongs (a config never executes code)",
        lambda s: s.replace("mass = 0.4", "mass = \"__import__('os').system('touch pwned')\""),
        "analyze",
        "bodies[0] (\"crank\") key 'mass': expected a number, got "
        "\"__import__('os').system('touch pwned')\" (a string)",
    ),
    (
        "TOML syntax error",
        lambda s: s.replace("mass = 0.4", "mass = = 0.4"),
        "analyze",
        "TOML syntax error: Invalid value (at line",
    ),
    (
        "unknown pair type",
        lambda s: s.replace('type = "revolute"', 'type = "revolut"', 1),
        "analyze",
        "pairs[0] (\"O\") key 'type': unknown pair type 'revolut' (did you mean 'revolute'?",
    ),
    (
        "unknown redundancy method",
        lambda s: s.replace("t_final = 2.0", 't_final = 2.0\nmethod = "nullspace"'),
        "simulate",
        "simulation key 'method': unknown method 'nullspace' (did you mean 'null-space'?",
    ),
    (
        "inconsistent initial configuration",
        lambda s: s.replace("point_j = [1.0, 0.0]            # D", "point_j = [1.1, 0.0]"),
        "simulate",
        "inconsistent initial configuration: pair 'D': position residual 0.1",
    ),
]


CONFIG_MISTAKES += [
    (
        "Baumgarte gains of 1e308 (an OverflowError in beta**2, once)",
        lambda s: s.replace(
            "t_final = 2.0", "t_final = 2.0\nbaumgarte_alpha = 1e308\nbaumgarte_beta = 1e308"
        ),
        "simulate",
        "simulation key 'baumgarte_alpha': too large: its square must be a finite number, "
        "got 1e+308",
    ),
    (
        "n_save of 10^20 (an overflow, once)",
        lambda s: s.replace("t_final = 2.0", "t_final = 2.0\nn_save = 100000000000000000000"),
        "simulate",
        "simulation key 'n_save': must be at most 10,000,000, got 100,000,000,000,000,000,000",
    ),
    (
        "max_steps of 10^20 (an overflow, once)",
        lambda s: s.replace("t_final = 2.0", "t_final = 2.0\nmax_steps = 100000000000000000000"),
        "simulate",
        "simulation key 'max_steps': must be at most 1,000,000,000, "
        "got 100,000,000,000,000,000,000",
    ),
    (
        "arrays nested 10^5 deep (the TOML parser's recursion)",
        lambda s: s + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "analyze",
        "arrays or tables nested too deeply to read",
    ),
]


@pytest.mark.parametrize("name, edit, command, expected", CONFIG_MISTAKES)
def test_config_mistake(tmp_path, capsys, monkeypatch, name, edit, command, expected):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mechanism.toml"
    path.write_text(edit(FOUR_BAR))
    status, out, err = _run(capsys, command, path)
    assert status == 2, (name, err)
    assert out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"redundax: error: {path}: "), first
    assert expected in first, first
    assert "Traceback" not in err
    assert not (tmp_path / "pwned").exists()


def test_missing_config_file(tmp_path, capsys):
    status, out, err = _run(capsys, "analyze", tmp_path / "nope.toml")
    assert status == 2 and out == ""
    assert err.splitlines()[0] == f"redundax: error: {tmp_path / 'nope.toml'}: no such file"


def test_output_with_an_unknown_extension(tmp_path, capsys):
    status, _, err = _run(
        capsys, "simulate", CONFIGS / "four_bar.toml", "--out", tmp_path / "run.txt"
    )
    assert status == 2
    assert "unknown output format '.txt'; use a file name ending in .npz or .csv" in err


def test_existing_output_is_not_overwritten(tmp_path, capsys):
    target = tmp_path / "run.npz"
    target.write_bytes(b"the user's own file")
    status, _, err = _run(capsys, "simulate", CONFIGS / "four_bar.toml", "--out", target)
    assert status == 2
    assert f"{target}: already exists; pass --force to overwrite it" in err
    assert target.read_bytes() == b"the user's own file"


def test_bad_argument_value(capsys):
    status, _, err = _run(capsys, "analyze", CONFIGS / "four_bar.toml", "--rtol", "-1")
    assert status == 2
    assert "argument --rtol: expected a number between 0 and 1 (exclusive), got '-1'" in err


def test_a_newline_in_a_name_does_not_break_the_error_lines(tmp_path, capsys):
    """A body named "cr\\nank" (TOML escape): refused by name, and every message
    that mentions it stays on one line (the name shown escaped)."""
    path = tmp_path / "mechanism.toml"
    path.write_text(FOUR_BAR.replace('name = "crank"', 'name = "cr\\nank"', 1))
    status, out, err = _run(capsys, "analyze", path)
    assert (status, out) == (2, "")
    lines = err.splitlines()
    assert lines[0].startswith(
        f"redundax: error: {path}: bodies[0] ('cr\\nank') key 'name': must be printable"
    ), lines[0]
    assert all(line.startswith("  - ") for line in lines[1:]), lines
    assert "known bodies: coupler, 'cr\\nank', rocker, ground" in err


def test_infinite_end_time_is_a_usage_error(capsys):
    """`--t-final inf` is a mistake in the argument (exit 2 naming it), not an
    integration that fails (it was exit 1)."""
    status, out, err = _run(capsys, "simulate", CONFIGS / "four_bar.toml", "--t-final", "inf")
    assert (status, out) == (2, "")
    assert "argument --t-final: expected a finite number, got 'inf'" in err
    assert "Traceback" not in err


def test_unknown_command(capsys):
    status, _, err = _run(capsys, "simulat", CONFIGS / "four_bar.toml")
    assert status == 2
    assert "invalid choice: 'simulat'" in err


def test_unknown_sweep_parameter(tmp_path, capsys):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nmechanism = "{CONFIGS / "four_bar.toml"}"\n'
        '[[sweep.parameters]]\nname = "bodies.crnk.mass"\nvalues = [0.3, 0.5]\n'
    )
    status, out, err = _run(capsys, "sweep", sweep, "--out", tmp_path / "out")
    assert status == 2 and out == ""
    assert err.startswith(f"redundax: error: {sweep}: ")
    assert "unknown sweep parameter 'bodies.crnk.mass' (did you mean 'bodies.crank.mass'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("seed = -1", "sweep key 'seed': expected an integer from 0 to 2^63 − 1, got -1"),
        (
            "max_steps = 100000000000000000000",
            "sweep key 'max_steps': expected an integer from 1 to 1,000,000,000, "
            "got 100000000000000000000",
        ),
    ],
)
def test_sweep_key_out_of_range_is_named(tmp_path, capsys, line, expected):
    """A negative seed (it was `expected non-negative integer`, from NumPy, with
    no file or key) and an overflowing step count: the file and the key named."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nmechanism = "{CONFIGS / "four_bar.toml"}"\n{line}\n'
        '[[sweep.parameters]]\nname = "bodies.crank.mass"\nvalues = [0.3, 0.5]\n'
    )
    status, out, err = _run(capsys, "sweep", sweep, "--out", tmp_path / "out")
    assert (status, out) == (2, "")
    assert err.startswith(f"redundax: error: {sweep}: {expected}"), err
    assert not (tmp_path / "out").exists()


def test_optimising_a_reaction_that_is_not_unique(tmp_path, capsys):
    text = (CONFIGS / "design_mobile_robot.toml").read_text()
    text = text.replace('pair = "drive"', 'pair = "W1"').replace(
        'mechanism = "mobile_robot.toml"', f'mechanism = "{CONFIGS / "mobile_robot.toml"}"'
    )
    design = tmp_path / "design.toml"
    design.write_text(text)
    status, _, err = _run(capsys, "optimize", design, "--out", tmp_path / "out")
    assert status == 2
    assert (
        "objective[0] key 'pair': the reaction of W1 is not unique (degree of redundancy 2)" in err
    )
    assert not (tmp_path / "out").exists()


def test_a_byte_order_mark_is_accepted(tmp_path, capsys):
    """Some Windows editors start UTF-8 files with U+FEFF: the same file, not a
    syntax error."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + FOUR_BAR.encode("utf-8"))
    status, out, err = _run(capsys, "analyze", path, "--json")
    assert status == 0, err
    _, plain, _ = _run(capsys, "analyze", CONFIGS / "four_bar.toml", "--json")
    assert out == plain


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_honour_the_umask(tmp_path, capsys, umask, mode):
    """A run file gets the permissions any new file of the user's gets, not the
    private 0600 of the temporary file it is written through."""
    old = os.umask(umask)
    try:
        status, _, err = _run(
            capsys,
            "simulate",
            CONFIGS / "four_bar.toml",
            "--out",
            tmp_path / "run.npz",
            "--t-final",
            "0.1",
        )
    finally:
        os.umask(old)
    assert status == 0, err
    assert stat.S_IMODE((tmp_path / "run.npz").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]  # no temporary left


def test_ctrl_c_is_one_line(capsys, monkeypatch):
    """Ctrl-C during a command: `redundax: interrupted` and the shell's status 130,
    no KeyboardInterrupt traceback."""

    def interrupted(args):
        raise KeyboardInterrupt

    analyze = dataclasses.replace(cli.COMMANDS["analyze"], run=interrupted)
    monkeypatch.setitem(cli.COMMANDS, "analyze", analyze)
    status, out, err = _run(capsys, "analyze", CONFIGS / "four_bar.toml")
    assert (status, out, err) == (130, "", "redundax: interrupted\n")


def test_baumgarte_gains_that_overflow_are_refused_in_python():
    with pytest.raises(ValueError, match="Baumgarte: beta must be zero or positive with β²"):
        rx.drift.Baumgarte(alpha=10.0, beta=1e200)
    with pytest.raises(ValueError, match="Baumgarte: alpha must be zero or positive"):
        rx.drift.Baumgarte(alpha=-1.0)
    assert rx.drift.Baumgarte(1e3, 1e3).beta == 1e3


FREE_BODY = """[mechanism]
name = "free body"
dim = 2
gravity = [0.0, -9.81]

[[bodies]]
name = "puck"
mass = 1.0
inertia = 0.1
position = [0.0, 0.0]

[simulation]
t_final = 0.5
"""


def test_a_free_body_with_no_pairs_is_analysed_and_simulated(tmp_path, capsys):
    """No constraints at all (it was an IndexError inside the QR test): rank 0,
    three degrees of freedom, and free fall: y = −g t²/2 (closed form)."""
    path = tmp_path / "free.toml"
    path.write_text(FREE_BODY)
    status, out, err = _run(capsys, "analyze", path, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert (report["rank"], report["redundancy"], report["dof"], report["pairs"]) == (0, 0, 3, {})
    status, out, err = _run(capsys, "simulate", path, "--json")
    assert status == 0, err
    q = json.loads(out)["final_q"]
    assert q[0] == 0.0 and q[2] == 0.0
    assert abs(q[1] - (-0.5 * 9.81 * 0.5**2)) < 1e-10


def test_too_few_max_steps_say_to_raise_them(tmp_path, capsys):
    """A run that needs more steps than `max_steps` fails (exit 1) with one line
    that names the key and what to do (issue 14: IFToMM A01 needs more than the
    default for 2000 s), nothing on stdout."""
    path = tmp_path / "short.toml"
    path.write_text(FOUR_BAR.replace("t_final = 2.0", "t_final = 2.0\nmax_steps = 5"))
    status, out, err = _run(capsys, "simulate", path, "--json")
    assert status == 1 and out == ""
    assert err.startswith(
        f"redundax: error: {path}: the integrator took [simulation] max_steps = 5 steps "
        "before t_final = 2 s; raise max_steps"
    )
    assert len(err.splitlines()) == 1


# ------------------------------------------------- sweeps, designs, plots (issue 14)
def _sweep_file(tmp_path, body, head=""):
    """A sweep file over the four-bar: `head` in [sweep], then `body` (its
    [[sweep.parameters]] entries)."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'[sweep]\nmechanism = "{CONFIGS / "four_bar.toml"}"\n{head}\n{body}\n')
    return sweep


def _one_error_line(err):
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


MASS = '[[sweep.parameters]]\nname = "bodies.crank.mass"\n'
COUPLER = '[[sweep.parameters]]\nname = "bodies.coupler.mass"\n'
ROCKER = '[[sweep.parameters]]\nname = "bodies.rocker.mass"\n'


@pytest.mark.parametrize(
    "head, body, expected",
    [
        (
            'sample = "random"\nsamples = 1000000000000000',
            MASS + "range = [0.3, 0.5]",
            "sweep key 'samples': at most 10,000,000 variants, got 1,000,000,000,000,000; "
            "sweep fewer, or split the sweep into several files (seeds)",
        ),
        (
            "",
            "\n".join(p + "range = [0.3, 0.5]\ncount = 1000000" for p in (MASS, COUPLER, ROCKER)),
            "sweep key 'parameters': the grid has 1,000,000 × 1,000,000 × 1,000,000 = 1e+18 "
            "variants, more than 10,000,000; give fewer 'values' or a smaller 'count', or "
            'draw samples (sample = "random")',
        ),
        (
            "chunk_size = 100000000000000000000",
            MASS + "values = [0.3, 0.5]",
            "sweep key 'chunk_size': expected an integer from 1 to 10,000,000, "
            "got 100,000,000,000,000,000,000",
        ),
    ],
    ids=["10^15 samples", "a grid of 10^18", "chunk_size 10^20"],
)
def test_a_sweep_too_large_is_refused_before_anything_is_allocated(
    tmp_path, capsys, head, body, expected
):
    """10^15 samples or a grid of 10^18 points were 7 PiB and 7 EiB allocations
    (then an out-of-memory line that named no key), a chunk_size of 10^20 a
    traceback: the key and the limit are named before any table is made."""
    sweep = _sweep_file(tmp_path, body, head)
    status, out, err = _run(capsys, "sweep", sweep, "--out", tmp_path / "out")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == f"redundax: error: {sweep}: {expected}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            "range = [0.3, inf]\ncount = 3",
            "key 'range': expected finite numbers, got inf",
        ),
        (
            "range = [nan, 0.5]\ncount = 3",
            "key 'range': expected finite numbers, got nan",
        ),
        ("values = [0.3, nan]", "key 'values': expected finite numbers, got nan"),
        (
            "range = [-1.0, 1.0]\ncount = 3",
            "key 'range': a mass [kg] must be positive, but the range [-1, 1] reaches -1; "
            "give low > 0",
        ),
        (
            "values = [0.0, 0.5]",
            "key 'values': a mass [kg] must be positive, got 0; give values > 0",
        ),
    ],
    ids=["infinite end", "NaN end", "NaN value", "mass from -1 to 1", "zero mass"],
)
def test_a_sweep_outside_the_parameters_domain_is_refused(tmp_path, capsys, body, expected):
    """A range with an infinite end (a RuntimeWarning, then exit 0), NaN, or masses
    that are not positive (exit 0 with garbage): refused, naming the parameter."""
    sweep = _sweep_file(tmp_path, MASS + body)
    status, out, err = _run(capsys, "sweep", sweep, "--out", tmp_path / "out")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: {sweep}: parameters[0] ('bodies.crank.mass') {expected}"
    )
    assert not (tmp_path / "out").exists()


def test_a_sweep_leaves_the_users_own_files_alone(tmp_path, capsys):
    """A directory holding the user's own sweep.npz and summary.json, with no
    manifest of a redundax sweep, is not overwritten without --force."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.npz").write_bytes(b"mine")
    (out / "summary.json").write_text('{"mine": true}')
    sweep = _sweep_file(tmp_path, MASS + "values = [0.3, 0.5]")
    status, stdout, err = _run(capsys, "sweep", sweep, "--out", out)
    assert (status, stdout) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: {out}: holds sweep.npz, summary.json but no manifest.json of a "
        "redundax sweep, so they are not a sweep's to replace; use another output "
        "directory, or pass --force (force=True) to overwrite them"
    )
    assert (out / "sweep.npz").read_bytes() == b"mine"
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "sweep.npz"]


@pytest.mark.parametrize("command", ["sweep", "optimize"])
def test_a_binary_file_is_named(tmp_path, capsys, command):
    path = tmp_path / "file.toml"
    path.write_bytes(b"\x80\x81\xff\xfe[sweep]\n\x00")
    status, out, err = _run(capsys, command, path, "--out", tmp_path / "out")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: {path}: not a text file (TOML files are UTF-8)"
    )


VARIABLE = "variables[0] ('ground_pivot_x')"
ADDRESS = f"{VARIABLE} key 'addresses' ('pairs.D.point_j.x'): the coefficient must be"


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("= 1.0 }", "= inf }", f"{ADDRESS} a finite non-zero number of at least 2.23e-308 in "
                               "magnitude, got inf"),
        ("= 1.0 }", "= 5e-324 }", f"{ADDRESS} a finite non-zero number of at least 2.23e-308 "
                                  "in magnitude, got 5e-324"),
        ("scale = 0.01", "scale = inf", f"{VARIABLE} key 'scale': must be finite, got inf"),
        ("scale = 0.01", "scale = 5e-324", f"{VARIABLE} key 'scale': expected a positive "
                                           "number of at least 2.23e-308, got 5e-324"),
        ("t_final = 0.6", "t_final = inf", "optimize key 't_final': must be finite, got inf"),
        ("learning_rate = 0.5", "learning_rate = inf",
         "optimize key 'learning_rate': must be finite, got inf"),
        ("learning_rate = 0.5", "learning_rate = nan",
         "optimize key 'learning_rate': must be finite, got nan"),
        ("learning_rate = 0.5", "learning_rate = 0.0",
         "optimize key 'learning_rate': expected a positive number, got 0.0"),
    ],
    ids=["infinite coefficient", "subnormal coefficient", "infinite scale", "subnormal scale",
         "t_final inf", "learning_rate inf", "learning_rate NaN", "learning_rate 0"],
)  # fmt: skip
def test_a_design_number_out_of_range_is_named_before_simulating(
    tmp_path, capsys, old, new, expected
):
    """Infinite or subnormal coefficients and scales ran ~45 s and exited 1
    ("initial design cannot be simulated"); t_final = inf was `Expected None, got
    Array([0.])`; learning_rate = inf wrote -Infinity/NaN into design.json with
    exit 0. Each is exit 2 naming the key, before anything is simulated."""
    design = four_bar_design(tmp_path, lambda s: s.replace(old, new))
    status, out, err = _run(capsys, "optimize", design, "--out", tmp_path / "out", "--quiet")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == f"redundax: error: {design}: {expected}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["optimize", "sweep"])
def test_an_infinite_end_time_argument_is_refused(tmp_path, capsys, command):
    path = four_bar_design(tmp_path) if command == "optimize" else _sweep_file(tmp_path, MASS)
    status, out, err = _run(capsys, command, path, "--out", tmp_path / "o", "--t-final", "inf")
    assert (status, out) == (2, "")
    assert "argument --t-final: expected a finite number, got 'inf'" in err


class _Standin(DesignProblem):
    """The design problem of a design file with its simulation replaced by a
    closed form (the optimiser's loop, the checks and the files are the real
    ones): term(x) = `size` · (1 + 100 (x − 1.02)²) [N], x the ground pivot."""

    size = 50.0

    def __init__(self, design):
        super().__init__(design)
        self.value_and_grad = self._closed_form  # in place of the compiled simulation

    def _closed_form(self, z, reference):
        x = jnp.asarray(self.x(z))
        term = self.size * (1.0 + 100.0 * (x - 1.02) ** 2)
        objective = jnp.sum(term / reference)
        grad = self.size * 200.0 * (x - 1.02) * jnp.asarray(self.scale) / reference
        evaluation = Evaluation(
            objective=objective,
            penalty=jnp.zeros(()),
            terms=term,
            peaks=term,
            magnitude=jnp.stack([jnp.full(3, term[0])]),
            ts=jnp.linspace(0.0, 0.6, 3),
            min_ratio=jnp.ones(()),
            initial_correction=jnp.zeros(()),
        )
        return (objective, evaluation), grad


class _Unloaded(_Standin):
    size = 0.0


def test_an_objective_that_is_zero_throughout_is_named(tmp_path, capsys, monkeypatch):
    """A reaction that is zero over the whole manoeuvre has no scale to divide by:
    it was a ZeroDivisionError after the whole optimisation, with an empty output
    folder. Now exit 2 naming the objective term, after its first evaluation."""
    monkeypatch.setattr("redundax.optimize._optimizer.DesignProblem", _Unloaded)
    design = four_bar_design(tmp_path)
    status, out, err = _run(capsys, "optimize", design, "--out", tmp_path / "out", "--quiet")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: {design}: objective[0] key 'pair': the peak-reaction O is zero "
        "throughout the initial design's 0.6 s manoeuvre (0): there is nothing to minimise; "
        "choose a pair (or component) that carries load"
    )
    assert not (tmp_path / "out").exists()


def test_design_json_normalises_the_initial_and_final_objective_alike(
    tmp_path, capsys, monkeypatch
):
    """The initial objective was reported in newtons and the final one divided by
    the initial value (a 1.3 % gain read as 84 %): both are normalised, the file
    says how, and `decrease` is their relative difference."""
    monkeypatch.setattr("redundax.optimize._optimizer.DesignProblem", _Standin)
    design = four_bar_design(tmp_path)
    status, out, err = _run(
        capsys, "optimize", design, "--out", tmp_path / "out", "--quiet", "--json"
    )
    assert status == 0, err
    result = json.loads(out)
    assert result == json.loads((tmp_path / "out" / "design.json").read_text())
    initial, final = result["initial"], result["final"]
    assert initial["objective"] == 1.0 == result["history"][0]["objective"]
    assert result["objective_references"] == initial["terms"]
    assert final["objective"] == final["terms"][0] / initial["terms"][0] < 1.0
    assert result["decrease"] == 1.0 - final["objective"]
    assert result["objective_normalisation"].startswith(
        "objective = sum over the terms of weight * term / reference"
    )


def _archive(path, **arrays):
    np.savez(path, **{name.replace("__", "/"): value for name, value in arrays.items()})


RUN_META = json.dumps({"format": "redundax run 1", "dim": 2})


@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda p: p.write_bytes(Path(p).with_name("whole.npz").read_bytes()[:200]),
            "not a redundax run (not an NPZ archive: File is not a zip file)",
        ),
        (
            lambda p: p.write_bytes(
                Path(p).with_name("whole.npz").read_bytes().replace(b"\x11" * 64, b"\x22" * 64)
            ),
            "a damaged or incomplete redundax run (Bad CRC-32 for file 't.npy')",
        ),
        (lambda p: _archive(p, a=np.zeros(3)), "not a redundax run (no 'meta' entry)"),
        (
            lambda p: _archive(p, meta=np.asarray("[1, 2]")),
            "not a redundax run (its 'meta' entry is not a JSON object)",
        ),
        (
            lambda p: _archive(p, meta=np.asarray(RUN_META)),
            "a damaged or incomplete redundax run (t is not a file in the archive)",
        ),
        (
            lambda p: p.write_text("t,q\n0,1\n"),
            "not a redundax run (not an NPZ archive: not a zip file)",
        ),
        (
            lambda p: (
                np.save(p.with_suffix(".npy"), np.zeros(3)) or p.with_suffix(".npy").rename(p)
            ),
            "not a redundax run (a single NumPy array, not an NPZ archive)",
        ),
    ],
    ids=["truncated", "corrupt member", "foreign", "foreign meta", "incomplete", "text", "npy"],
)
def test_plot_names_a_file_that_is_not_a_run(tmp_path, capsys, make, expected):
    """A corrupt NPZ, a foreign NPZ (valid, without redundax's entries) and a file
    that is not an NPZ were AttributeError, KeyError and BadZipFile tracebacks."""
    _archive(tmp_path / "whole.npz", meta=np.asarray(RUN_META), t=np.full(64, 17, np.uint8))
    path = tmp_path / "run.npz"
    make(path)
    status, out, err = _run(capsys, "plot", path, "--out", tmp_path / "figures")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == f"redundax: error: {path}: {expected}"
    assert not (tmp_path / "figures").exists()


def test_the_solvability_figure_of_a_mechanism_without_redundancy_does_not_warn():
    """Every ‖B_X‖ = 0 (all pairs unique): the log axis got no positive value and
    matplotlib warned on stderr (an error under this suite's filterwarnings)."""
    from redundax import plot

    run = {
        "t": np.zeros(2),
        "reactions": {"O": None, "A": None},
        "unique": {"O": True, "A": True},
        "b_norm": {"O": 0.0, "A": 0.0},
        "solvability": {
            **{"t": 0.0, "utol": 1e-8, "unique": {"O": True, "A": True}},
            **{"rank": 8, "redundancy": 0, "dof": 1, "n": 9, "rows": 8},
        },
        "meta": {"mechanism": "four-bar linkage"},
    }
    figure = plot.plot_solvability(run)
    assert figure.axes[0].get_yscale() == "log"


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A directory the process may not write in (mode 0555; for root, who may,
    `os.access` answers as for another user)."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    if os.geteuid() == 0:
        access = os.access

        def denied(path, mode, **kwargs):
            if Path(path) == directory and mode & os.W_OK:
                return False
            return access(path, mode, **kwargs)

        monkeypatch.setattr(os, "access", denied)
    yield directory
    directory.chmod(0o755)


@pytest.mark.parametrize("command", ["sweep", "optimize"])
def test_a_read_only_output_directory_is_named_before_computing(
    tmp_path, capsys, read_only, command
):
    """It was reported after the whole computation, naming a temporary file."""
    path = (
        four_bar_design(tmp_path)
        if command == "optimize"
        else _sweep_file(tmp_path, MASS + "values = [0.3, 0.5]")
    )
    status, out, err = _run(capsys, command, path, "--out", read_only / "out", "--quiet")
    assert (status, out) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: --out: {read_only}: cannot write in this directory (it would be "
        f"created in {read_only}): no permission to write there, or a read-only file system; "
        "choose another output directory"
    )
    assert list(read_only.iterdir()) == []


def test_a_read_only_directory_for_a_run_file_is_named(capsys, read_only):
    status, out, err = _run(capsys, "simulate", CONFIGS / "four_bar.toml", "--out",
                            read_only / "run.npz")  # fmt: skip
    assert (status, out) == (2, "")
    assert _one_error_line(err) == (
        f"redundax: error: --out: {read_only / 'run.npz'}: cannot write in the directory "
        f"'{read_only}': no permission to write there, or a read-only file system"
    )


def test_an_augmented_lagrangian_penalty_beyond_float64_is_refused(tmp_path, capsys):
    """`penalty = 1e30` swamps M in M + α CᵀC: the mechanism never moved, exit 0.
    Refused above 1e11 (q̈ carries a relative error of about penalty · ε)."""
    with pytest.raises(ValueError, match=r"penalty must be at most 1e\+11, got 1e\+30: α CᵀC"):
        rx.methods.AugmentedLagrangian(penalty=1e30)
    with pytest.raises(ValueError, match="penalty must be a positive number, got -1.0"):
        rx.methods.AugmentedLagrangian(penalty=-1.0)
    assert rx.methods.AugmentedLagrangian(penalty=1e11).penalty == 1e11
    path = tmp_path / "mechanism.toml"
    path.write_text(
        FOUR_BAR.replace(
            "t_final = 2.0", 't_final = 2.0\nmethod = "augmented-lagrangian"\npenalty = 1e30'
        )
    )
    status, out, err = _run(capsys, "simulate", path)
    assert (status, out) == (2, "")
    assert _one_error_line(err).startswith(
        f"redundax: error: {path}: simulation key 'penalty': penalty must be at most 1e+11, "
        "got 1e+30"
    )


def test_an_elimination_built_by_hand_that_leaves_a_constraint_out_is_refused():
    """`Elimination(keep=...)` built by hand, dropping Bricard's row 32 (1-based: a
    rigid-body row that carries no self-stress) instead of a redundant one: the kept
    rows have rank 58 where C has 59 (checked here by an SVD of the kept rows), and
    `simulate` and `solve_dynamics` refuse it with the row named; dropping row 2
    (redundant) is accepted and gives the null-space method's q̈."""
    mech = rx.models.bricard()
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    C = np.asarray(rx.equations.constraint_matrix(model, state.q, state.t))
    wrong = rx.methods.Elimination(keep=tuple(k for k in range(60) if k != 31), n_rows=60)
    sigma = np.linalg.svd(C[np.asarray(wrong.keep)], compute_uv=False)
    assert int(np.sum(sigma > 1e-8 * sigma[0])) == 58
    expected = (
        "rows [32] (1-based) are not all redundant: the 59 rows kept do not span the rows "
        "of C (rank 59), so a constraint would be left out"
    )
    for call in (
        lambda: rx.simulate(model, state, 0.1, method=wrong, structure=structure),
        lambda: rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure, method=wrong),
    ):
        with pytest.raises(rx.ModelError) as caught:
            call()
        assert caught.value.problems == (expected,)
        assert caught.value.source == "method"
    right = rx.methods.Elimination(keep=tuple(k for k in range(60) if k != 1), n_rows=60)
    qdd, _ = rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure, method=right)
    reference, _ = rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure)
    scale = float(np.max(np.abs(np.asarray(reference))))
    assert float(np.max(np.abs(np.asarray(qdd - reference)))) < 1e-8 * scale
