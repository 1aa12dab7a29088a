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

import pytest

import redundax as rx
from redundax import cli

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
    assert "argument --rtol: expected a positive number, got '-1'" in err


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
        rx.Baumgarte(alpha=10.0, beta=1e200)
    with pytest.raises(ValueError, match="Baumgarte: alpha must be zero or positive"):
        rx.Baumgarte(alpha=-1.0)
    assert rx.Baumgarte(1e3, 1e3).beta == 1e3


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
