"""`redundax.plot` and `redundax plot RUN`: the rank and solvability stored by
`write_run`, every figure drawn and written (atomically, never overwriting without
--force), non-unique reactions drawn dashed, bars and rank lines equal to the
stored values, and one-line errors naming the file or pair.

Runs are short (mobile robot 0.5 s, Bricard 0.2 s): the cost is the compilation,
once per mechanism in this process."""

import contextlib
import io
import json
import shutil
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

import redundax as rx
from helpers import TOL_EXACT, TOL_ZERO_B
from redundax import plot
from redundax.cli import main
from redundax.io import load_config, read_run

ROOT = Path(__file__).resolve().parents[1]
MOBILE_ROBOT = ROOT / "configs" / "mobile_robot.toml"
BRICARD = ROOT / "configs" / "bricard.toml"
PNG = b"\x89PNG\r\n\x1a\n"
# DESIGN.md §6: the paper's verdicts for the mobile robot; rank C = 20 of 22 rows.
NOT_UNIQUE = ("B", "C", "W1", "W2", "W3", "W4")
ROBOT_RANK, ROBOT_ROWS = 20, 22


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def robot(tmp_path_factory) -> Path:
    """A 0.5 s null-space run of the mobile robot, written by `simulate --out`."""
    npz = tmp_path_factory.mktemp("robot") / "run.npz"
    status, _, err = _run("simulate", MOBILE_ROBOT, "--t-final", "0.5", "--json", "--out", npz)
    assert status == 0, err
    return npz


@pytest.fixture(scope="module")
def bricard(tmp_path_factory) -> Path:
    """0.2 s of configs/bricard.toml with the block solver (`method = "block"`, so
    that the run also stores its active-set log), Tsit5 at the default tolerances
    instead of its Dopri8 at 1e-10 (a cheaper compilation; the figures do not care)."""
    text = BRICARD.read_text(encoding="utf-8")
    for old, new in (
        ('"dopri8"', '"tsit5"'),
        ("rtol = 1e-10", "rtol = 1e-8"),
        ("atol = 1e-12", "atol = 1e-10"),
        ('method = "null-space"', 'method = "block"'),
    ):
        assert old in text
        text = text.replace(old, new)
    folder = tmp_path_factory.mktemp("bricard")
    config, npz = folder / "bricard.toml", folder / "bricard.npz"
    config.write_text(text, encoding="utf-8")
    status, _, err = _run("simulate", config, "--t-final", "0.2", "--json", "--out", npz)
    assert status == 0, err
    return npz


def _lines(fig: Figure) -> dict[str, object]:
    return {line.get_gid(): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()}


def test_write_run_stores_the_rank_and_the_solvability_report(robot):
    run = read_run(robot)
    config = load_config(MOBILE_ROBOT)
    # An independent decision: pivoted QR at the first saved state (the file's
    # rank history is decided by SVD).
    report = rx.analyze_solvability(config.model, jnp.asarray(run["q"][0]), float(run["t"][0]))
    assert int(report.rank) == ROBOT_RANK
    assert run["rank"].dtype.kind == "i" and run["rank"].shape == run["t"].shape
    assert np.all(run["rank"] == int(report.rank))  # regular all along
    assert np.all((run["rank_gap"] > 0.0) & (run["rank_gap"] <= 1.0))
    expected = np.asarray(report.b_norm)
    np.testing.assert_allclose(
        [run["b_norm"][name] for name in report.names], expected, rtol=TOL_EXACT, atol=TOL_ZERO_B
    )
    solvability = run["solvability"]
    assert (solvability["rank"], solvability["redundancy"], solvability["dof"]) == (20, 2, 1)
    assert solvability["rows"] == ROBOT_ROWS and solvability["n"] == 21
    assert solvability["unique"] == run["unique"]
    assert {name for name, u in run["unique"].items() if not u} == set(NOT_UNIQUE)
    assert run["pair_bodies"]["D"] == ("link_left", "wheel_left")
    assert run["pair_bodies"]["W3"] == ("platform",)
    # Per component: B's x force is unique, its y force is not.
    x, y = rx.joints.Revolute.components
    assert run["component_b_norm"]["B"][x] < TOL_ZERO_B < run["component_b_norm"]["B"][y]
    assert run["meta"]["rheonomic"] == ["drive"]


def test_csv_has_a_rank_column(robot, tmp_path):
    csv = tmp_path / "run.csv"
    status, _, err = _run("simulate", MOBILE_ROBOT, "--t-final", "0.5", "--out", csv)
    assert status == 0, err
    _, header, *rows = csv.read_text(encoding="utf-8").splitlines()
    assert header.split(",")[-1] == "rank"
    assert {row.split(",")[-1] for row in rows} == {str(ROBOT_RANK)}


def test_save_all_writes_every_figure(robot, tmp_path):
    out = tmp_path / "figures"
    paths = plot.save_all(robot, out)
    assert [p.name for p in paths] == [f"{name}.png" for name in plot.FIGURES]
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 1000 and data.startswith(PNG), path
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)  # no temp


def test_each_function_returns_a_figure(robot):
    run = read_run(robot)
    for draw in (
        plot.plot_trajectories,
        plot.plot_reactions,
        plot.plot_violation_energy,
        plot.plot_solvability,
        plot.plot_rank,
    ):
        fig = draw(run)
        assert isinstance(fig, Figure) and fig.axes, draw.__name__


def test_reactions_dash_exactly_the_non_unique_pairs(robot):
    run = read_run(robot)
    fig = plot.plot_reactions(run)
    lines = _lines(fig)
    assert set(lines) == set(run["unique"])
    for name, line in lines.items():
        assert (line.get_linestyle() == "--") == (not run["unique"][name]), name
    assert {name for name, line in lines.items() if line.get_linestyle() == "--"} == set(NOT_UNIQUE)
    # The magnitude of the force on the pair's first moving body: D acts on
    # link_left (configs/mobile_robot.toml), W3 on the platform.
    bodies = run["bodies"]
    for pair, body in (("D", "link_left"), ("W3", "platform")):
        force = run["reactions"][pair][:, bodies.index(body), :2]
        np.testing.assert_allclose(
            lines[pair].get_ydata(), np.hypot(force[:, 0], force[:, 1]), rtol=TOL_EXACT
        )
    texts = [text.get_text() for legend in fig.legends for text in legend.get_texts()]
    assert plot.NOT_UNIQUE_LABEL in texts
    assert "a rigid model does not determine it (the values are the method's choice)" in (
        plot.NOT_UNIQUE_LABEL
    )


def test_reaction_components_dash_the_non_unique_components(robot):
    run = read_run(robot)
    fig = plot.plot_reactions(run, pairs=["B", "D"], components=True)
    lines = _lines(fig)
    expected = {f"{p}:{label}" for p in ("B", "D") for label in run["components"][p]}
    assert set(lines) == expected
    for gid, line in lines.items():
        pair, label = gid.split(":")
        assert (line.get_linestyle() == "--") == (not run["component_unique"][pair][label])
        np.testing.assert_array_equal(line.get_ydata(), run["components"][pair][label])
    # D is unique; B is not, and neither is its x force along a run (it is unique
    # only while the wheels point straight ahead).
    x, y = rx.joints.Revolute.components
    assert lines[f"D:{x}"].get_linestyle() == "-" and lines[f"D:{y}"].get_linestyle() == "-"
    assert lines[f"B:{x}"].get_linestyle() == "--" and lines[f"B:{y}"].get_linestyle() == "--"


def test_solvability_bars_are_the_b_norms(robot):
    run = read_run(robot)
    fig = plot.plot_solvability(run)
    (ax,) = fig.axes
    bars = {patch.get_gid(): patch for patch in ax.patches if patch.get_gid()}
    assert list(bars) == list(run["unique"])
    for name, bar in bars.items():
        assert bar.get_height() == run["b_norm"][name]
        colour = plot._BAR_UNIQUE if run["unique"][name] else plot._BAR_NOT_UNIQUE
        assert bar.get_facecolor() == to_rgba(colour), name
    assert ax.get_yscale() == "log"
    title = ax.get_title()
    assert "rank C = 20" in title and "p = 2" in title and "dof = 1" in title
    # A subset, in the order asked for.
    (ax,) = plot.plot_solvability(run, pairs=["W4", "A"]).axes
    assert [p.get_gid() for p in ax.patches if p.get_gid()] == ["W4", "A"]


def test_rank_plot_draws_the_stored_rank(robot):
    run = read_run(robot)
    lines = _lines(plot.plot_rank(run))
    np.testing.assert_array_equal(lines["rank"].get_ydata(), run["rank"])
    np.testing.assert_array_equal(lines["rank"].get_xdata(), run["t"])
    assert set(lines["rows"].get_ydata()) == {ROBOT_ROWS}
    assert set(lines["nominal"].get_ydata()) == {ROBOT_RANK}
    np.testing.assert_array_equal(lines["gap"].get_ydata(), run["rank_gap"])
    assert set(lines["rank_rtol"].get_ydata()) == {run["solvability"]["rank_rtol"]}


def test_rank_plot_draws_the_active_set_of_the_block_solver(bricard):
    """A run of the block solver stores its partitioning's log; the rank figure
    draws the number of active rows next to the rank: on Bricard (p = 1) it keeps
    as many rows as the SVD rank of C, and a change written into the log moves
    the line at the end of its step."""
    run = read_run(bricard)
    log = run["active_set"]
    assert log["steps"].shape == (0, 2)  # no change in 0.2 s
    assert int(log["initial"].sum()) == run["rank"][0] == 59
    active = _lines(plot.plot_rank(run))["active"]
    assert set(active.get_ydata()) == {59}
    # A change (one row dropped in the step [0.04, 0.05]) drawn from 0.05 s on.
    dropped = log["initial"].copy()
    dropped[np.flatnonzero(dropped)[0]] = False
    run["active_set"] = {**log, "steps": np.asarray([[0.04, 0.05]]), "active": dropped[None]}
    active = _lines(plot.plot_rank(run))["active"]
    np.testing.assert_array_equal(active.get_xdata(), [run["t"][0], 0.05, run["t"][-1]])
    np.testing.assert_array_equal(active.get_ydata(), [59, 58, 58])


def test_trajectories_draw_the_tracked_points(robot):
    run = read_run(robot)
    lines = _lines(plot.plot_trajectories(run, markers=["W1", "W5"]))
    assert set(lines) == {"W1", "W5"}
    np.testing.assert_array_equal(lines["W1"].get_xdata(), run["tracked"]["W1"][:, 0])
    np.testing.assert_array_equal(lines["W1"].get_ydata(), run["tracked"]["W1"][:, 1])
    with pytest.raises(ValueError, match="unknown tracked point 'W9'; the run tracks platform"):
        plot.plot_trajectories(run, markers="W9")


def test_violation_and_energy(robot):
    run = read_run(robot)
    fig = plot.plot_violation_energy(run)
    lines = _lines(fig)
    np.testing.assert_array_equal(lines["energy"].get_ydata(), run["energy"] - run["energy"][0])
    assert fig.axes[0].get_yscale() == "log"
    assert "prescribed motion in drive" in fig.axes[1].get_title()


def test_cli_refuses_to_overwrite_without_force(robot, tmp_path):
    out = tmp_path / "plots"
    out.mkdir()
    target = out / "rank.png"
    target.write_bytes(b"precious")
    status, stdout, err = _run("plot", robot, "--out", out, "--only", "rank")
    assert status == 2 and stdout == ""
    assert err.splitlines() == [
        f"redundax: error: {target}: already exists; pass --force to overwrite it "
        "(force=True in Python)"
    ]
    assert target.read_bytes() == b"precious"
    status, stdout, err = _run(
        "plot", robot, "--out", out, "--only", "rank", "--only", "solvability", "--force", "--json"
    )
    assert status == 0, err
    assert json.loads(stdout) == {"figures": [str(out / "solvability.png"), str(target)]}
    assert target.read_bytes().startswith(PNG)
    assert sorted(p.name for p in out.iterdir()) == ["rank.png", "solvability.png"]


def test_cli_default_folder_and_formats(robot, tmp_path):
    run = tmp_path / "robot.npz"
    shutil.copy(robot, run)
    status, stdout, err = _run("plot", run, "--only", "solvability")
    assert status == 0, err
    written = tmp_path / "robot_plots" / "solvability.png"
    assert stdout.splitlines() == [f"wrote {written}"]
    assert written.read_bytes().startswith(PNG)
    status, _, err = _run("plot", run, "--only", "rank", "--format", "svg")
    assert status == 0, err
    assert b"<svg" in (tmp_path / "robot_plots" / "rank.svg").read_bytes()
    path = plot.save_all(run, tmp_path / "pdf", format="pdf", only=["violation"])[0]
    assert path.read_bytes().startswith(b"%PDF")


def test_cli_pairs_option(robot, tmp_path):
    status, _, err = _run(
        "plot", robot, "--out", tmp_path, "--only", "reactions", "--pairs", "B,D", "--pairs", "W5"
    )
    assert status == 0, err
    assert (tmp_path / "reactions.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "{path}: no such file; RUN is the .npz written by 'redundax simulate "
                    "CONFIG --out run.npz'"),
        ("not a run", "{path}: not a redundax run (no 'meta' entry)"),
        ("not npz", "{path}: not a redundax run (not an NPZ archive: "),
    ],
)  # fmt: skip
def test_cli_names_a_bad_run_file(tmp_path, case, message):
    path = tmp_path / "run.npz"
    if case == "not a run":
        np.savez(path, a=np.zeros(3))
    elif case == "not npz":
        path.write_text("t,q\n0,1\n", encoding="utf-8")
    status, stdout, err = _run("plot", path)
    assert status == 2 and stdout == ""
    assert err.splitlines()[0].startswith("redundax: error: " + message.format(path=path))
    assert not (tmp_path / "run_plots").exists()


def test_cli_names_an_unknown_pair(robot, tmp_path):
    status, stdout, err = _run("plot", robot, "--out", tmp_path / "p", "--pairs", "B,Z")
    assert status == 2 and stdout == ""
    assert err.splitlines() == [
        f"redundax: error: {robot}: --pairs: unknown pair 'Z'; the run has pairs "
        "A, B, C, D, E, F, G, H, drive, W1, W2, W3, W4, W5"
    ]
    assert not (tmp_path / "p").exists()
    with pytest.raises(ValueError, match="unknown pair 'Z'; the run has pairs A, B"):
        plot.plot_reactions(robot, pairs=["Z"])


def test_older_runs_still_plot(robot, tmp_path):
    """A file written before the rank and the solvability report were stored."""
    old = tmp_path / "old.npz"
    with np.load(robot, allow_pickle=False) as npz:
        arrays = {
            key: npz[key]
            for key in npz.files
            if key not in ("rank", "rank_gap")
            and not key.startswith(("b_norm/", "component_b_norm/", "pair_bodies/"))
        }
    meta = json.loads(str(arrays["meta"]))
    del meta["solvability"], meta["rheonomic"]
    arrays["meta"] = np.asarray(json.dumps(meta))
    np.savez(old, **arrays)
    run = read_run(old)
    assert run["rank"] is None and run["rank_gap"] is None
    assert run["b_norm"] == {} and run["solvability"] == {} and run["pair_bodies"] == {}
    paths = plot.save_all(run, tmp_path / "plots")
    assert all(p.read_bytes().startswith(PNG) for p in paths)


def test_spatial_run(bricard, tmp_path):
    run = read_run(bricard)
    assert run["dim"] == 3 and run["solvability"]["redundancy"] == 1
    # Off the manifold by the drift, the redundant row becomes independent by about
    # the drift (σ_60/σ_1 up to 8e-14 at the file's 1e-10, above the round-off
    # default 2.7e-14): the stored rank, decided at 1e-8, stays 59.
    assert np.all(run["rank"] == run["solvability"]["rank"])
    paths = plot.save_all(run, tmp_path / "plots")
    assert all(p.read_bytes().startswith(PNG) for p in paths)
    fig = plot.plot_trajectories(run)
    labels = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    assert labels == [("x [m]", "y [m]"), ("x [m]", "z [m]")]
    xy, xz = ({line.get_gid(): line for line in ax.get_lines()} for ax in fig.axes)
    np.testing.assert_array_equal(xy["P3"].get_ydata(), run["tracked"]["P3"][:, 1])
    np.testing.assert_array_equal(xz["P3"].get_ydata(), run["tracked"]["P3"][:, 2])
    fig = plot.plot_trajectories(run, projections=["yz"])
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes] == [("y [m]", "z [m]")]
    # No joint reaction of Bricard's mechanism is unique: every line is dashed.
    styles = {line.get_linestyle() for line in _lines(plot.plot_reactions(run)).values()}
    assert styles == {"--"}
    with pytest.raises(ValueError, match="projection 'xw': expected two different axes"):
        plot.plot_trajectories(run, projections="xw")


def test_block_pattern_figure_draws_every_block_once():
    from redundax.plot import plot_block_pattern

    model = rx.models.mobile_robot().build()
    pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
    fig = plot_block_pattern(pattern)
    kinds = [p.get_gid() for p in fig.axes[0].patches]
    coupled = sum(len(later) for later in pattern.later)
    assert kinds.count("diagonal") == pattern.n_blocks == 14
    assert kinds.count("fill") == len(pattern.fill) == 3
    assert kinds.count("coupled") == coupled - len(pattern.fill)
