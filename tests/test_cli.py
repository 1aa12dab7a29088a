"""The `redundax` command line: `analyze`, its JSON contract (DESIGN.md §7), help,
and one-line errors with exit status 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import redundax as rx
from helpers import four_bar_apart
from redundax.cli import COMMANDS, main
from redundax.io import load_config

ROOT = Path(__file__).resolve().parents[1]
MOBILE_ROBOT = ROOT / "configs" / "mobile_robot.toml"
FOUR_BAR = ROOT / "configs" / "four_bar.toml"

# DESIGN.md §6: the paper's verdicts for the mobile robot.
UNIQUE = ("A", "D", "E", "F", "G", "H", "drive", "W5")
NOT_UNIQUE = ("B", "C", "W1", "W2", "W3", "W4")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _check_mobile_robot_json(result: dict) -> None:
    for key in ("n", "m", "h", "rank", "redundancy", "dof", "pairs"):
        assert key in result
    assert (result["n"], result["m"], result["h"]) == (21, 17, 5)
    assert (result["rank"], result["redundancy"], result["dof"]) == (20, 2, 1)
    pairs = result["pairs"]
    assert list(pairs) == [*"ABCDEFGH", "drive", "W1", "W2", "W3", "W4", "W5"]  # file order
    assert {name for name, p in pairs.items() if p["unique"]} == set(UNIQUE)
    assert {name for name, p in pairs.items() if not p["unique"]} == set(NOT_UNIQUE)
    for p in pairs.values():
        assert set(p) >= {"rows", "unique", "multipliers_unique", "b_norm"}
        assert isinstance(p["b_norm"], float) and p["b_norm"] >= 0.0
        assert isinstance(p["unique"], bool) and isinstance(p["multipliers_unique"], bool)
    # Rows are 1-based, in file order, holonomic first: they tile 1..22.
    assert pairs["A"]["rows"] == [1, 2]
    assert pairs["C"]["rows"] == [5, 6]
    assert pairs["drive"]["rows"] == [17]
    assert pairs["W1"]["rows"] == [18]
    assert pairs["W4"]["rows"] == [21]
    assert sorted(r for p in pairs.values() for r in p["rows"]) == list(range(1, 23))


def test_analyze_prints_the_table(capsys):
    status, out, err = _run(capsys, "analyze", str(MOBILE_ROBOT))
    assert status == 0, err
    assert "degree of redundancy p = 2" in out and "mobility = 1" in out
    assert "rank C = 20" in out
    verdicts = {}
    for line in out.splitlines():
        words = line.split()
        if words and words[0] in UNIQUE + NOT_UNIQUE:
            verdicts[words[0]] = "NOT unique" not in line
    assert verdicts == {**dict.fromkeys(UNIQUE, True), **dict.fromkeys(NOT_UNIQUE, False)}


def test_analyze_json_follows_the_contract(capsys):
    status, out, err = _run(capsys, "analyze", str(MOBILE_ROBOT), "--json")
    assert status == 0, err
    _check_mobile_robot_json(json.loads(out))  # the whole of stdout is one JSON object


def test_analyze_json_with_rtol(capsys):
    status, out, err = _run(capsys, "analyze", str(FOUR_BAR), "--json", "--rtol", "1e-10")
    assert status == 0, err
    result = json.loads(out)
    assert (result["rank"], result["redundancy"], result["dof"]) == (8, 0, 1)
    assert all(p["unique"] for p in result["pairs"].values())


def test_console_entry_point_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "redundax.cli", "analyze", "configs/mobile_robot.toml", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _check_mobile_robot_json(json.loads(proc.stdout))


@pytest.mark.parametrize("argv", [["--help"], ["analyze", "--help"], ["simulate", "--help"]])
def test_help(capsys, argv):
    status, out, _ = _run(capsys, *argv)
    assert status == 0
    assert out.startswith("usage: redundax")
    assert "CONFIG" in out or "COMMAND" in out


def test_program_help_lists_every_command(capsys):
    _, out, _ = _run(capsys, "--help")
    for name, command in COMMANDS.items():
        assert name in out and command.summary.split()[0] in out


def test_no_command_prints_help_and_fails(capsys):
    status, _, err = _run(capsys)
    assert status == 2
    assert "usage: redundax" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["frobnicate", "x.toml"], "invalid choice: 'frobnicate'"),
        (["analyze"], "the following arguments are required: CONFIG"),
        (
            ["analyze", "x.toml", "--rtol", "-1"],
            "expected a number between 0 and 1 (exclusive), got '-1'",
        ),
    ],
)
def test_usage_errors(capsys, argv, message):
    status, out, err = _run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert message in err


def test_missing_file_is_one_line(capsys, tmp_path):
    path = tmp_path / "absent.toml"
    status, out, err = _run(capsys, "analyze", str(path), "--json")
    assert status == 2
    assert out == ""
    assert err.splitlines() == [f"redundax: error: {path}: no such file"]


def test_invalid_config_names_the_field(capsys, tmp_path):
    text = FOUR_BAR.read_text(encoding="utf-8")
    assert text.count("mass = 1.2\n") == 1
    path = tmp_path / "bad.toml"
    path.write_text(text.replace("mass = 1.2\n", "mass = -1.2\n"), encoding="utf-8")
    status, out, err = _run(capsys, "analyze", str(path))
    assert status == 2
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines() == [
        f"redundax: error: {path}: bodies[1] (\"coupler\") key 'mass': must be positive, got -1.2"
    ]


def test_several_problems_first_line_then_the_list(capsys, tmp_path):
    text = FOUR_BAR.read_text(encoding="utf-8")
    path = tmp_path / "bad.toml"
    path.write_text(
        text.replace("mass = 1.2\n", "masss = 1.2\n").replace("[simulation]", "[simulaton]"),
        encoding="utf-8",
    )
    status, _, err = _run(capsys, "analyze", str(path))
    assert status == 2
    first, *rest = err.splitlines()
    assert first.startswith(f"redundax: error: {path}: ")
    assert "(and 2 more problem(s), all listed below)" in first
    assert any("unknown key 'masss'" in line for line in rest)
    assert any("missing required key 'mass'" in line for line in rest)
    assert any("unknown table 'simulaton'" in line for line in rest)


def test_toml_syntax_error(capsys, tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('[mechanism]\nname = "broken\n', encoding="utf-8")
    status, _, err = _run(capsys, "analyze", str(path))
    assert status == 2
    assert err.startswith(f"redundax: error: {path}: TOML syntax error:")
    assert "line 2" in err


def _turned_robot(tmp_path: Path, project: bool) -> Path:
    """The mobile robot with its left wheel turned by 0.05 rad (its pair D and its
    knife edge W1 no longer fit), projected first when `project`."""
    text = MOBILE_ROBOT.read_text(encoding="utf-8")
    old = "position = [1.2000000000000002, 0.0]    # [24a, 0]\n"
    assert text.count(old) == 1 and text.count("\natol = 1e-10\n") == 1
    text = text.replace(old, old + "angle = 0.05\n")
    if project:
        text = text.replace("\natol = 1e-10\n", '\natol = 1e-10\ninitial = "project"\n')
    path = tmp_path / ("turned_projected.toml" if project else "turned.toml")
    path.write_text(text, encoding="utf-8")
    return path


def test_analyze_projects_the_initial_state_when_the_config_says_so(capsys, tmp_path):
    """`initial = "project"`: analyze reads the state simulate starts from, the
    projected one (rank 20, p = 2, the paper's verdicts), not the raw one (rank 21,
    p = 1), and reports the projection's correction."""
    path = _turned_robot(tmp_path, project=True)
    status, out, err = _run(capsys, "analyze", str(path), "--json")
    assert status == 0, err
    result = json.loads(out)
    _check_mobile_robot_json(result)
    assert result["initial"] == "project"
    dq, dqd = result["initial_correction"]
    assert 0.04 < dq < 0.06 and dqd > 0.0  # the wheel turned back by about 0.05 rad
    status, out, err = _run(capsys, "analyze", str(path))
    assert status == 0, err
    first = out.splitlines()[0]
    assert 'projected onto the constraints ([simulation] initial = "project"' in first
    assert "rank C = 20" in out and "degree of redundancy p = 2" in out
    # Without initial = "project" the inconsistent state is refused, as before.
    status, out, err = _run(capsys, "analyze", str(_turned_robot(tmp_path, project=False)))
    assert status == 2 and out == ""
    assert "inconsistent initial configuration: pair 'D'" in err and "pair 'W1'" in err
    # A consistent file is analysed as written, with no correction.
    status, out, err = _run(capsys, "analyze", str(FOUR_BAR), "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["initial"] == "refuse" and result["initial_correction"] == [0.0, 0.0]


def test_analyze_refuses_a_state_the_projection_cannot_assemble(capsys, tmp_path):
    """The four-bar with its ground pivots 3 m apart and `initial = "project"`: as
    simulate, exit 2 naming the file and "could not be projected"."""
    path = four_bar_apart(tmp_path)
    status, out, err = _run(capsys, "analyze", str(path), "--json")
    assert status == 2 and out == ""
    assert err.startswith(
        f"redundax: error: {path}: the initial state could not be projected onto the constraints"
    )
    assert "pair 'D': position residual" in err


@pytest.mark.parametrize("rtol", ["2", "1", "0", "-0.5", "nan"])
def test_analyze_rtol_outside_the_unit_interval_is_refused(capsys, rtol):
    status, out, err = _run(capsys, "analyze", str(FOUR_BAR), "--rtol", rtol)
    assert status == 2 and out == ""
    assert err.splitlines()[-1].startswith(
        f"redundax analyze: error: argument --rtol: expected a number between 0 and 1 "
        f"(exclusive), got {rtol!r}"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plot", "run.npz"], "--out: afile: exists and is not a directory"),
        (["plot", "run.npz", "--out", "afile/figures"], None),
        (
            ["sweep", str(ROOT / "configs" / "sweep_mobile_robot.toml")],
            "--out: afile: afile is a file, not a directory",
        ),
        (
            ["optimize", str(ROOT / "configs" / "design_mobile_robot.toml")],
            "--out: afile: exists and is not a folder",
        ),
    ],
)
def test_out_naming_a_file_where_a_folder_is_expected(capsys, tmp_path, monkeypatch, argv, message):
    """Exit 2, one line naming --out, before anything is computed or written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine")
    if "--out" not in argv:
        argv = [*argv, "--out", "afile"]
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    if message is None:
        message = "--out: afile/figures: afile is a file, not a directory"
    assert err.splitlines() == [f"redundax: error: {message}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert (tmp_path / "afile").read_text() == "mine"


def test_each_command_documents_which_verdict_it_reports(capsys):
    """analyze reports the verdicts at the configuration, simulate the stable ones
    (true also at a generic configuration next to it): --help and configs/README.md
    say so, and no longer that simulate's are "as `redundax analyze`"."""
    assert main(["analyze", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "uniquely determined at that configuration" in text
    assert "'redundax simulate' reports the stable verdicts instead" in text
    readme = (ROOT / "configs" / "README.md").read_text(encoding="utf-8")
    assert "decided at the initial configuration, as `redundax analyze`" not in readme
    assert "#### Which verdict each command reports" in readme
    assert "`Structure.stable_unique`" in readme and "`stable_row_unique`" in readme


def test_analyze_reports_the_verdicts_at_the_configuration(capsys):
    """The mobile robot's pair B at its initial configuration (wheels straight): its
    x force is determined there, so analyze says so (simulate, which reports the
    stable verdicts, does not: tests/test_cli_simulate.py)."""
    status, out, err = _run(capsys, "analyze", str(MOBILE_ROBOT), "--json")
    assert status == 0, err
    assert json.loads(out)["pairs"]["B"]["components"] == {"force x": True, "force y": False}


def test_elimination_rows_are_chosen_at_the_projected_state(tmp_path):
    """`method = "elimination"` with `initial = "project"`: the rows are chosen
    where the run starts. The turned robot's raw state has rank 21 (p = 1), the
    projected one the robot's rank 20 (p = 2): two rows are dropped, the same as
    `rx.methods.eliminate` chooses at the projected state itself."""
    path = _turned_robot(tmp_path, project=True)
    text = path.read_text(encoding="utf-8").replace(
        '\ninitial = "project"\n', '\ninitial = "project"\nmethod = "elimination"\n'
    )
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    method = config.simulation.method
    state = config.state
    q, _ = config.simulation.initial.projection(config.model, state.q, state.qd, state.t)
    assert len(method.eliminated) == 2
    assert method.eliminated == rx.methods.eliminate(config.model, q, state.t).eliminated
