"""Figures of a saved run (the library part of `redundax plot RUN`).

A run is the `.npz` file that `redundax simulate CONFIG --out run.npz` (or
[`redundax.io.write_run`][]) writes. Each function below takes the dict of
[`redundax.io.read_run`][], or the path of the file, and returns a
`matplotlib.figure.Figure`:

- [`plot_trajectories`][redundax.plot.plot_trajectories] (`trajectories`): the tracked points in the
  plane, x–y; for spatial runs x–y and x–z, or the projections asked for;
- [`plot_reactions`][redundax.plot.plot_reactions] (`reactions`): per pair, the magnitude of the
  force on its first moving body over time, or its reaction components where the whole pair is
  not unique but some of its components are (a spatial model of a planar
  mechanism: the in-plane components); unique lines solid, the ones that are not
  unique dashed on grey, and every line dotted grey where the run is off its
  constraints;
- [`plot_violation_energy`][redundax.plot.plot_violation_energy] (`violation`): position and
  velocity constraint violation (log axis), and the energy change E(t) − E(0);
- [`plot_solvability`][redundax.plot.plot_solvability] (`solvability`): ‖B_X‖ per pair (log axis),
  coloured unique / not unique, with rank C, p and the mobility in the title;
- [`plot_rank`][redundax.plot.plot_rank] (`rank`): the rank of C along the run, with the number of
  rows and the nominal rank.

and, of a mechanism rather than a run,
[`plot_descriptor_pattern`][redundax.plot.plot_descriptor_pattern]: the block structure of the
descriptor matrix [M Cᵀ; C 0] as the block-sparse solver factorises it (the seed's
structural diagram, Kraus et al. 2001, Fig. 3: bodies, joint blocks, blocks introduced
by the decomposition, fill-in), [`plot_block_pattern`][redundax.plot.plot_block_pattern]: the
block structure of C M⁻¹ Cᵀ that it factorises after eliminating the bodies, and
[`plot_modes`][redundax.plot.plot_modes]: the mode shapes about an equilibrium.

(In brackets: the figure's file name in [`save_all`][redundax.plot.save_all] and `redundax plot`.)

A reaction that a rigid model does not determine (not unique) is only the
redundancy method's choice; the figures never draw it like a unique one. Nor do
they draw any reaction solid over saved times where the run is off its
constraints (the run's `valid` flags, one per saved time; files written before
they were stored count as valid throughout): there the state is no configuration
of the mechanism, and no reaction is its reaction, unique or not.

The figures are made with `matplotlib.figure.Figure`, not `pyplot`: no window
opens, no backend is chosen, nothing global changes, and they work on a machine
without a display. A notebook shows the returned figure as a cell's value; to
draw into a pyplot window, pass `figure=plt.figure()` and call `plt.show()`
yourself. [`save_all`][redundax.plot.save_all] writes every figure atomically (a temporary file in
the same folder, then a rename) and never overwrites a file unless `force=True`.

!!! example
    ```python
    from redundax import plot
    from redundax.io import read_run

    run = read_run("runs/mobile_robot.npz")   # redundax simulate ... --out runs/mobile_robot.npz
    fig = plot.plot_reactions(run, pairs=["B", "D"])
    fig.savefig("reactions.png")
    plot.save_all(run, "runs/mobile_robot_plots")   # five PNG files
    ```

On the command line: `redundax plot runs/mobile_robot.npz` writes
`runs/mobile_robot_plots/{trajectories,reactions,violation,solvability,rank}.png`
(the command itself is `redundax plot`).
"""

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ._block_pattern import BlockPattern, block_pattern, coupling
from ._figure_files import FIGURES as FIGURES, FORMATS as FORMATS
from ._structure import topology
from .io._atomic import atomic_write
from .io.results import AXES, check_output, read_run

__all__ = [
    "plot_trajectories",
    "plot_reactions",
    "plot_violation_energy",
    "plot_solvability",
    "plot_rank",
    "plot_descriptor_pattern",
    "plot_block_pattern",
    "plot_modes",
    "save_all",
]


NOT_UNIQUE_LABEL = (
    "not unique: a rigid model does not determine it (the values are the method's choice)"
)
"""Legend entry of the reactions a rigid model does not determine."""

UNIQUE_LABEL = "unique: a rigid model determines it"
"""Legend entry of the reactions a rigid model determines."""

OFF_CONSTRAINTS_LABEL = (
    "off its constraints: the run left them here (valid = False); no verdict, and "
    "not a reaction of the mechanism"
)
"""Legend entry of the stretches of a run that are off its constraints."""

LINE_STYLES = "solid: unique; dashed: not unique"
"""Title of the reactions figure's legend: what each line style means (with
`OFF_STYLE` added when the run is off its constraints somewhere)."""

OFF_STYLE = "dotted: off its constraints"

_UNIQUE_COLOUR = "tab:blue"
_BAR_UNIQUE = "tab:green"
_BAR_NOT_UNIQUE = "tab:red"
_GREY = "0.45"
_GREY_BACKGROUND = "0.93"
_FOOTNOTE = 8  # font size of legends and notes

Run = Mapping[str, Any]
RunLike = Mapping[str, Any] | str | os.PathLike


def _load(path: str | os.PathLike) -> dict[str, Any]:
    """[`redundax.io.read_run`][] with the messages of the command line.

    **Raises:** `FileNotFoundError` if `path` does not exist; `ValueError` if it is
    not a run written by `redundax simulate --out` (both name the file).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file; RUN is the .npz written by "
            "'redundax simulate CONFIG --out run.npz'"
        )
    return read_run(path)


def _as_run(run: RunLike) -> Run:
    return _load(run) if isinstance(run, str | os.PathLike) else run


def _names(names: str | Sequence[str] | None) -> list[str] | None:
    if names is None:
        return None
    return [names] if isinstance(names, str) else list(names)


def _select_pairs(run: Run, pairs: str | Sequence[str] | None = None) -> list[str]:
    """The pairs of `run` to draw: all of them (model order) when `pairs` is None.

    **Raises:** `ValueError` naming a pair the run does not have, and listing those
    it has.
    """
    known = list(run["reactions"])
    chosen = _names(pairs)
    if chosen is None:
        return known
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise ValueError(
            f"unknown pair {unknown[0]!r}; the run has pairs {', '.join(known) or '(none)'}"
        )
    return chosen


def _title(run: Run) -> str:
    meta = run["meta"]
    return str(meta.get("mechanism") or meta.get("config") or "run")


def _figure(figure: Figure | None, **kwargs: Any) -> Figure:
    if figure is not None:
        return figure
    return Figure(layout="constrained", **kwargs)


def _missing(fig: Figure, what: str) -> Figure:
    """A figure that says what the run lacks, instead of failing `save_all`."""
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, what, ha="center", va="center", wrap=True, transform=ax.transAxes)
    return fig


def _positive(values: np.ndarray) -> np.ndarray:
    """`values` with the entries a log axis cannot show (≤ 0, non-finite) as NaN."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values) & (values > 0.0), values, np.nan)


def _grid(fig: Figure, count: int, columns: int) -> list[Axes]:
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[count:]:
        ax.remove()
    return list(axes[:count])


def _tracked_points(run: Run, markers: list[str] | None) -> tuple[dict[str, np.ndarray], str]:
    tracked = run["tracked"]
    if markers is not None:
        unknown = [name for name in markers if name not in tracked]
        if unknown:
            raise ValueError(
                f"unknown tracked point {unknown[0]!r}; the run tracks "
                f"{', '.join(tracked) or 'none (add [[markers]] to the configuration)'}"
            )
        return {name: tracked[name] for name in markers}, "tracked points"
    if tracked:
        return dict(tracked), "tracked points"
    # No markers: the bodies' centres of mass are the first dim coordinates of each
    # body's block of q (3 per planar body, 12 per spatial one).
    dim, q = run["dim"], run["q"]
    size = 3 if dim == 2 else 12
    points = {name: q[:, b * size : b * size + dim] for b, name in enumerate(run["bodies"])}
    return points, "centres of mass (the run tracks no points)"


def _projections(dim: int, projections: str | Sequence[str] | None) -> list[str]:
    chosen = _names(projections) or (["xy"] if dim == 2 else ["xy", "xz"])
    axes = AXES[dim]
    for projection in chosen:
        if (
            len(projection) != 2
            or projection[0] == projection[1]
            or not set(projection) <= set(axes)
        ):
            raise ValueError(
                f"projection {projection!r}: expected two different axes of "
                f"{', '.join(axes)}, e.g. 'xy'" + (" or 'xz'" if dim == 3 else "")
            )
    return chosen


def plot_trajectories(
    run: RunLike,
    markers: str | Sequence[str] | None = None,
    *,
    projections: str | Sequence[str] | None = None,
    figure: Figure | None = None,
) -> Figure:
    """The paths of the tracked points (`[[markers]]`) in the plane.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `markers`: the tracked points to draw (default: all; the bodies' centres of
      mass when the run tracks none).
    - `projections`: one panel per pair of axes, e.g. `["xy", "yz"]`; default
      `"xy"` for a planar run, `"xy"` and `"xz"` for a spatial one.
    - `figure`: an empty figure to draw into (default: a new one).

    **Returns:** the figure: each point's path [m], a circle at its start, a
    square at its end.

    **Raises:** `ValueError` for an unknown marker or projection.
    """
    run = _as_run(run)
    dim = run["dim"]
    points, what = _tracked_points(run, _names(markers))
    chosen = _projections(dim, projections)
    fig = _figure(figure, figsize=(5.0 * len(chosen), 4.5))
    axes = fig.subplots(1, len(chosen), squeeze=False).ravel()
    t = run["t"]
    for ax, projection in zip(axes, chosen, strict=True):
        i, j = (AXES[dim].index(a) for a in projection)
        for k, (name, path) in enumerate(points.items()):
            colour = f"C{k % 10}"
            ax.plot(path[:, i], path[:, j], color=colour, label=name, gid=name)
            ax.plot(path[0, i], path[0, j], "o", color=colour, markersize=4)
            ax.plot(path[-1, i], path[-1, j], "s", color=colour, markersize=4)
        ax.set_xlabel(f"{projection[0]} [m]")
        ax.set_ylabel(f"{projection[1]} [m]")
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(True, alpha=0.3)
    if points:
        axes[0].legend(fontsize=_FOOTNOTE, title="o start, ■ end", title_fontsize=_FOOTNOTE)
    fig.suptitle(f"{_title(run)}\n{what}, t = {t[0]:g} to {t[-1]:g} s")
    return fig


def _first_moving_body(run: Run, pair: str) -> str:
    bodies = run["bodies"]
    for body in run["pair_bodies"].get(pair, ()):
        if body in bodies:
            return body
    # Runs written before the pairs' bodies were stored: the first body the pair
    # exerts a wrench on.
    wrench = run["reactions"][pair]
    loaded = np.flatnonzero(np.any(wrench != 0.0, axis=(0, 2)))
    return bodies[int(loaded[0])] if loaded.size else bodies[0]


def _run_validity(run: Run) -> np.ndarray:
    """Per saved time, whether the run is on its constraints there: the run's
    `valid` flags (all True for a file written before they were stored).

    **Raises:** `ValueError` naming the key `valid` when it holds other than one
    flag per saved time.
    """
    count = len(run["t"])
    valid = run.get("valid")
    if valid is None:
        return np.ones(count, dtype=bool)
    valid = np.asarray(valid)
    if valid.shape != (count,) or valid.dtype.kind not in "bi":
        raise ValueError(
            f"run key 'valid': expected one boolean per saved time ({count}), got an array "
            f"of shape {valid.shape} and dtype {valid.dtype}; write the run again with "
            "'redundax simulate CONFIG --out RUN'"
        )
    return valid.astype(bool)


def _off_segments(valid: np.ndarray) -> list[tuple[int, int]]:
    """The stretches (first, last saved time) of a line that touch a saved time off
    the constraints: the interval between two saved times is on the constraints
    only when both are."""
    if valid.size < 2:
        return []
    off = ~(valid[:-1] & valid[1:])  # interval k: from saved time k to k + 1
    edges = np.diff(np.concatenate([[0], off.astype(int), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def _draw(ax: Axes, t, values, valid, *, determined: bool, colour, label: str, gid: str):
    """One reaction line: solid (`determined`) or dashed, where the run is on its
    constraints; dotted grey (gid `GID:off`) over every interval that touches a
    saved time off them, where no line is solid."""
    values = np.asarray(values, dtype=float)
    ax.plot(
        t,
        np.where(valid, values, np.nan),
        color=colour,
        linestyle="-" if determined else "--",
        alpha=1.0 if determined else 0.8,
        label=label,
        gid=gid,
    )
    stretches = _off_segments(valid)
    if not stretches:
        return
    x, y = [], []
    for first, last in stretches:
        x += [*t[first : last + 1], np.nan]
        y += [*values[first : last + 1], np.nan]
    ax.plot(x, y, color=_GREY, linestyle=":", linewidth=1.5, gid=f"{gid}:off")


def _shade_off(ax: Axes, t, valid) -> None:
    for first, last in _off_segments(valid):
        ax.axvspan(t[first], t[last], color=_GREY_BACKGROUND, alpha=0.8, zorder=0, gid="off")


def _show_components(run: Run, pair: str, components: bool | None) -> bool:
    """Whether the panel of `pair` shows its components: always (`True`), never
    (`False`), or (`None`) where the whole pair is not unique but some of its
    components are, which its magnitude would hide."""
    if components is not None:
        return components
    flags = run["component_unique"].get(pair, {})
    return not run["unique"][pair] and any(flags.values()) and pair in run["components"]


def _force_magnitude(run: Run, pair: str) -> tuple[np.ndarray, str]:
    """|F| on the pair's first moving body; |M| for a pair that only exerts a moment."""
    body = _first_moving_body(run, pair)
    dim = run["dim"]
    wrench = run["reactions"][pair][:, run["bodies"].index(body)]
    force = np.linalg.norm(wrench[:, :dim], axis=1)
    if np.all(force == 0.0) and np.any(wrench[:, dim:] != 0.0):
        return np.linalg.norm(wrench[:, dim:], axis=1), f"|M| on {body} [N m]"
    return force, f"|F| on {body} [N]"


def plot_reactions(
    run: RunLike,
    pairs: str | Sequence[str] | None = None,
    *,
    components: bool | None = None,
    figure: Figure | None = None,
) -> Figure:
    """The reactions of the pairs over time, one panel per pair.

    Line styles (the legend's title says so): solid, a reaction a rigid model
    determines (unique); dashed, one it does not (the values are the redundancy
    method's choice; for a whole pair, grey on a grey panel); dotted grey, any
    reaction over the saved times where the run is off its constraints (the run's
    `valid` flags; shaded): no line is solid there, and no verdict holds.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `pairs`: the pairs to draw (default: all, in model order).
    - `components`: `None` (default): a pair that is unique, or none of whose
      components is, is drawn as the magnitude of the force on its first moving
      body (of the moment, for a pair that only exerts one); a pair that is not
      unique as a whole but has unique components (a spatial model of a planar
      mechanism: its in-plane components) is drawn as its components (−λ of each
      of its rows: "transverse force e1", ...; each solid or dashed by its own
      verdict). `True`: every pair's components; `False`: every pair's magnitude.
    - `figure`: an empty figure to draw into (default: a new one).

    **Returns:** the figure. Each line's `gid` is the pair's name (components:
    `"PAIR:LABEL"`); its dotted part off the constraints, if any, `"GID:off"`.

    **Raises:** `ValueError` for an unknown pair, or a run whose `valid` flags are
    not one per saved time.
    """
    run = _as_run(run)
    names = _select_pairs(run, pairs)
    columns = 3
    rows = max(1, math.ceil(len(names) / columns))
    fig = _figure(figure, figsize=(4.2 * min(columns, max(1, len(names))), 2.4 * rows + 1.2))
    if not names:
        return _missing(fig, "the run has no pairs")
    if components and not run["components"]:
        return _missing(fig, "this run stores no reaction components (an older file)")
    t = np.asarray(run["t"], dtype=float)
    valid = _run_validity(run)
    for ax, pair in zip(_grid(fig, len(names), columns), names, strict=True):
        unique = run["unique"][pair]
        if not unique:
            ax.set_facecolor(_GREY_BACKGROUND)
        _shade_off(ax, t, valid)
        if _show_components(run, pair, components):
            flags = run["component_unique"][pair]
            for k, (label, values) in enumerate(run["components"][pair].items()):
                determined = bool(flags[label])
                _draw(
                    ax,
                    t,
                    values,
                    valid,
                    determined=determined,
                    colour=f"C{k % 10}",
                    label=label if determined else f"{label} (not unique)",
                    gid=f"{pair}:{label}",
                )
            ax.legend(fontsize=_FOOTNOTE - 1)
            ax.set_ylabel("component [N, N m]", fontsize=_FOOTNOTE)
            title = pair if unique else f"{pair} (not unique as a whole)"
        else:
            values, label = _force_magnitude(run, pair)
            _draw(
                ax,
                t,
                values,
                valid,
                determined=unique,
                colour=_UNIQUE_COLOUR if unique else _GREY,
                label=pair,
                gid=pair,
            )
            ax.set_ylabel(label, fontsize=_FOOTNOTE)
            title = pair if unique else f"{pair} (not unique)"
        ax.set_title(title, fontsize=_FOOTNOTE + 2)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=_FOOTNOTE)
        ax.set_xlabel("t [s]", fontsize=_FOOTNOTE)
    legend = [
        Line2D([], [], color=_UNIQUE_COLOUR, linestyle="-", label=UNIQUE_LABEL),
        Line2D([], [], color=_GREY, linestyle="--", label=NOT_UNIQUE_LABEL),
    ]
    if not valid.all():
        legend.append(Line2D([], [], color=_GREY, linestyle=":", label=OFF_CONSTRAINTS_LABEL))
    fig.legend(
        handles=legend,
        loc="outside lower center",
        fontsize=_FOOTNOTE,
        ncols=1,
        title=LINE_STYLES if valid.all() else f"{LINE_STYLES}; {OFF_STYLE}",
        title_fontsize=_FOOTNOTE,
    )
    if components:
        what = "reaction components (-λ of each row)"
    elif components is None and any(_show_components(run, p, None) for p in names):
        what = "reactions (components where a whole pair is not unique)"
    else:
        what = "reactions"
    title = f"{_title(run)}: {what}, method {run['meta'].get('method', '?')}"
    if not valid.all():
        title += (
            f"\noff its constraints from t = {t[np.argmin(valid)]:g} s "
            f"({int((~valid).sum())} of {valid.size} saved times, shaded): no verdict there"
        )
    fig.suptitle(title)
    return fig


def plot_violation_energy(run: RunLike, *, figure: Figure | None = None) -> Figure:
    """Constraint violation (log axis) and energy change over time.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `figure`: an empty figure to draw into (default: a new one).

    **Returns:** the figure: max |Φ| [m, rad] and max |C q̇ + b| [m/s, rad/s] on a
    log axis (exact zeros are left out), and E(t) − E(0) [J], which stays at
    round-off level for a conservative mechanism; a pair that prescribes motion
    does work, and the panel then says so.
    """
    run = _as_run(run)
    fig = _figure(figure, figsize=(7.0, 5.5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    t = run["t"]
    drawn = False
    for key, label in (
        ("position_violation", "position: max |Φ| [m, rad]"),
        ("velocity_violation", "velocity: max |C q' + b| [m/s, rad/s]"),
    ):
        values = _positive(run[key])
        if np.any(np.isfinite(values)):
            top.plot(t, values, label=label, gid=key)
            drawn = True
    if drawn:
        top.set_yscale("log")
        top.legend(fontsize=_FOOTNOTE)
    else:
        top.text(
            0.5, 0.5, "no constraint violation (exactly zero)", ha="center", transform=top.transAxes
        )
    top.set_ylabel("constraint violation")
    top.grid(True, which="both", alpha=0.3)
    energy = run["energy"] - run["energy"][0]
    bottom.plot(t, energy, color="C2", gid="energy")
    bottom.set_ylabel("E(t) − E(0) [J]")
    bottom.set_xlabel("t [s]")
    bottom.grid(True, alpha=0.3)
    driven = run["meta"].get("rheonomic") or []
    note = (
        f"not conserved: prescribed motion in {', '.join(driven)} does work"
        if driven
        else "conserved unless a driver or a non-conservative load does work"
    )
    bottom.set_title(f"energy change ({note})", fontsize=_FOOTNOTE + 1)
    fig.suptitle(f"{_title(run)}\nconstraint violation and energy")
    return fig


def plot_solvability(
    run: RunLike, pairs: str | Sequence[str] | None = None, *, figure: Figure | None = None
) -> Figure:
    """‖B_X‖_F of each pair at the first saved state, on a log axis.

    ‖B_X‖_F (Wojtyra & Frączek 2013) is zero, up to round-off, exactly when a
    rigid model determines the pair's reaction. Bars of unique pairs are green,
    of the others red and hatched; an exact zero is marked "0" at the bottom.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `pairs`: the pairs to draw (default: all, in model order).
    - `figure`: an empty figure to draw into (default: a new one).

    **Returns:** the figure; the title gives rank C, the degree of redundancy p
    and the mobility. Each bar's `gid` is the pair's name.

    A run off its constraints at its first saved state (`valid`) gets a figure
    that says so instead: the report was made there.

    **Raises:** `ValueError` for an unknown pair.
    """
    run = _as_run(run)
    names = _select_pairs(run, pairs)
    fig = _figure(figure, figsize=(max(6.0, 0.55 * len(names) + 2.5), 4.8))
    if not run["b_norm"]:
        return _missing(
            fig,
            "this run stores no solvability report (written by an older redundax); "
            "run 'redundax analyze CONFIG'",
        )
    if not _run_validity(run)[0]:
        return _missing(
            fig,
            f"the run is off its constraints at its first saved state (t = {run['t'][0]:g} s, "
            "valid = False), where the solvability report was made: no verdict there",
        )
    report = run["solvability"]
    verdict = report.get("unique") or run["unique"]
    heights = np.array([run["b_norm"][name] for name in names], dtype=float)
    unique = [bool(verdict[name]) for name in names]
    ax = fig.add_subplot()
    bars = ax.bar(
        np.arange(len(names)),
        heights,
        color=[_BAR_UNIQUE if u else _BAR_NOT_UNIQUE for u in unique],
        hatch=[None if u else "//" for u in unique],
        edgecolor="black",
        linewidth=0.5,
    )
    for bar, name in zip(bars, names, strict=True):
        bar.set_gid(name)
    positive = heights[heights > 0.0]
    low = positive.min() / 10.0 if positive.size else 1e-20
    high = positive.max() * 10.0 if positive.size else 1.0
    # Limits first: a log scale over bars that are all 0 (every pair unique) would
    # autoscale on nothing, and matplotlib warns.
    ax.set_ylim(low, high)
    ax.set_yscale("log")
    for x in np.flatnonzero(heights == 0.0):
        ax.text(x, low, "0", ha="center", va="bottom", fontsize=_FOOTNOTE)
    ax.set_xticks(np.arange(len(names)), names, rotation=45 if len(names) > 8 else 0)
    ax.set_ylabel(r"$\|B_X\|_F$ at t = " + f"{report.get('t', run['t'][0]):g} s")
    utol = report.get("utol")
    ax.set_xlabel(
        "pair"
        + ("" if utol is None else f"  (unique iff ‖B_X‖ ≤ {utol:g} ‖C_X‖, C_X: the pair's rows)")
    )
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.legend(
        handles=[
            Patch(facecolor=_BAR_UNIQUE, edgecolor="black", label=UNIQUE_LABEL),
            Patch(facecolor=_BAR_NOT_UNIQUE, edgecolor="black", hatch="//", label=NOT_UNIQUE_LABEL),
        ],
        fontsize=_FOOTNOTE,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25 if len(names) > 8 else -0.15),
    )
    if report:
        joint = report.get("coordinates") == "joint"  # the DCA's rows on the bodies' twists
        ax.set_title(
            f"{_title(run)}{' (joint coordinates)' if joint else ''}\nrank "
            f"{'G' if joint else 'C'} = {report['rank']}, p = {report['redundancy']}, "
            f"dof = {report['dof']}  (n = {report['n']}, {report['rows']} rows)"
        )
    else:
        ax.set_title(f"{_title(run)}: reaction solvability")
    return fig


def plot_rank(run: RunLike, *, figure: Figure | None = None) -> Figure:
    """The rank of C along the run, against its number of rows and nominal rank.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `figure`: an empty figure to draw into (default: a new one).

    **Returns:** the figure: rank C (line `gid` `"rank"`), the number of rows
    m + h (`"rows"`) and the nominal rank of the solvability analysis at the
    first saved state (`"nominal"`); on the right axis, σ_r/σ_1 (log, `"gap"`;
    r the rank at the first saved state), which falls towards zero near a
    singular configuration, and the relative tolerance of the rank decision
    (`"rank_rtol"`). For a run of a partitioning method (`BlockSparse`), the number
    of rows its factorisation kept active, step by step through every logged
    change (`"active"`): it follows the rank where the rank drops.
    """
    run = _as_run(run)
    fig = _figure(figure, figsize=(7.0, 4.8))
    if run["rank"] is None:
        return _missing(fig, "this run stores no rank history (written by an older redundax)")
    t, rank = run["t"], np.asarray(run["rank"])
    report = run["solvability"]
    rows = int(report.get("rows", run["multipliers"].shape[1]))
    nominal = int(report.get("rank", rank[0]))
    ax = fig.add_subplot()
    ax.plot(t, rank, drawstyle="steps-post", color="C0", linewidth=2, label="rank C", gid="rank")
    ax.axhline(
        rows,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"rows of C (m + h = {rows})",
        gid="rows",
    )
    ax.axhline(
        nominal,
        color="C1",
        linestyle=":",
        linewidth=1.5,
        label=f"nominal rank = {nominal}",
        gid="nominal",
    )
    lowest = min(int(rank.min()), nominal)
    log = run.get("active_set")
    if log is not None:
        # After each change k the count holds from its step's end to the next change.
        times = np.concatenate([[t[0]], log["steps"][:, 1], [t[-1]]])
        counts = np.concatenate([[log["initial"].sum()], log["active"].sum(axis=1)])
        counts = np.concatenate([counts, counts[-1:]])
        ax.plot(
            times,
            counts,
            drawstyle="steps-post",
            color="C3",
            linewidth=1,
            label=f"active rows of the partitioning ({len(log['steps'])} changes)",
            gid="active",
        )
        lowest = min(lowest, int(counts.min()))
    ax.set_ylim(lowest - 1.5, rows + 1.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("rank")
    handles, _ = ax.get_legend_handles_labels()
    gap = None if run["rank_gap"] is None else _positive(run["rank_gap"])
    if gap is not None and np.any(np.isfinite(gap)):
        right = ax.twinx()
        (line,) = right.plot(t, gap, color="C2", alpha=0.7, label="σ_r/σ_1 (right)", gid="gap")
        handles.append(line)
        lowest = np.nanmin(gap)
        rtol = report.get("rank_rtol")
        if rtol is not None:
            handles.append(
                right.axhline(
                    rtol,
                    color="C2",
                    linestyle="-.",
                    linewidth=1,
                    gid="rank_rtol",
                    label=f"rank tolerance {rtol:g} (right): below it, rank drops",
                )
            )
            lowest = min(lowest, rtol)
        right.set_yscale("log")
        # Whole decades from below the lowest value up to 1 (σ_r ≤ σ_1): a nearly
        # constant ratio stays a flat line far from the tolerance, as it should.
        right.set_ylim(10.0 ** (math.floor(math.log10(lowest)) - 1), 1.0)
        right.set_ylabel("σ_r / σ_1")
    fig.legend(handles=handles, fontsize=_FOOTNOTE, loc="outside lower center", ncols=2)
    ax.grid(True, alpha=0.3)
    p = rows - nominal
    fig.suptitle(f"{_title(run)}\nrank of C along the run (p = {rows} − {nominal} = {p})")
    return fig


_BUILDERS: dict[str, Callable[..., Figure]] = {
    "trajectories": lambda run, pairs, components: plot_trajectories(run),
    "reactions": lambda run, pairs, components: plot_reactions(run, pairs, components=components),
    "violation": lambda run, pairs, components: plot_violation_energy(run),
    "solvability": lambda run, pairs, components: plot_solvability(run, pairs),
    "rank": lambda run, pairs, components: plot_rank(run),
}


_DESCRIPTOR_KINDS = {
    # kind: (colour, glyph of the seed's Fig. 3, legend label)
    "body": ("0.15", None, "body: its mass matrix and rigid-body rows, if any (numbered)"),
    "joint": ("C0", "—", "joint block of C (—) and its transpose (|)"),
    "introduced": ("C1", "+", "introduced by eliminating the bodies: C M⁻¹ Cᵀ (+)"),
    "fill": ("C3", "*", "fill-in of the factorisation, along a closed loop (*)"),
}


def _descriptor_cells(model, pattern: BlockPattern) -> tuple[list[str], dict[tuple[int, int], str]]:
    """The blocks of the descriptor matrix [M Cᵀ; C 0] in the order the block-sparse
    solver eliminates them (the layout of
    [`plot_descriptor_pattern`][redundax.plot.plot_descriptor_pattern]).

    **Returns:** the names of its block rows (the bodies, then the pairs) and, per
    non-zero block of the lower triangle and diagonal, `(row, column)`: its kind,
    `"body"`, `"joint"`, `"introduced"` or `"fill"`.
    """
    nb, order = pattern.n_bodies, pattern.order
    # A body's rigid-body rows (natural coordinates: `n_internal / nb` rows of C per
    # body, in the bodies' order) are part of its diagonal block. A pattern whose rows
    # are not C's (the pairs' alone, renumbered) has none.
    internal, own = model.internal_rows, {}
    if internal and pattern.n_rows == model.n_constraints:
        per = len(internal) // nb
        body_of = {tuple(internal[b * per : (b + 1) * per]): b for b in range(nb)}
        own = {g: body_of[rows] for g, rows in enumerate(pattern.rows) if rows in body_of}
    pairs = [g for g in order if g not in own]
    first: dict[int, int] = {}
    for k, g in enumerate(pairs):
        for b in pattern.bodies[g]:
            first.setdefault(b, k)
    # Bodies by the first pair that reaches them: C's blocks form a staircase.
    bodies = sorted(range(nb), key=lambda b: (first.get(b, len(pairs)), b))
    row_of_body = {b: k for k, b in enumerate(bodies)}
    row = {g: row_of_body[b] for g, b in own.items()}
    row.update({g: nb + k for k, g in enumerate(pairs)})
    cells = {(k, k): "body" for k in range(nb)}
    for g in pairs:
        cells[(row[g], row[g])] = "introduced"  # zero in [M Cᵀ; C 0], C_g M⁻¹ C_gᵀ in S
        for b in pattern.bodies[g]:
            cells[(row[g], row_of_body[b])] = "joint"
    for g, coupled in enumerate(coupling(pattern.bodies)):  # the blocks of S
        for h in coupled:
            if g > h and g not in own and h not in own:
                cells.setdefault((max(row[g], row[h]), min(row[g], row[h])), "introduced")
    for i, j in pattern.fill:
        a, b = row[order[i]], row[order[j]]
        cells.setdefault((max(a, b), min(a, b)), "fill")
    names = [model.bodies.names[b] for b in bodies] + [pattern.names[g] for g in pairs]
    return names, cells


def plot_descriptor_pattern(
    model, pattern: BlockPattern | None = None, *, figure: Figure | None = None
) -> Figure:
    """The block structure of the descriptor matrix [M Cᵀ; C 0] as the block-sparse
    solver ([`redundax.methods.BlockSparse`][]) factorises it: the seed's structural
    diagram (Kraus, Winckler & Bock 2001, §7, Fig. 3).

    One block row and column per moving body, then one per pair, in the order of
    elimination: the solver eliminates every body first (M is block diagonal), which
    leaves S = C M⁻¹ Cᵀ over the pairs, then S's blocks in the order of the
    [`redundax.internal.BlockPattern`][] (`structure.blocks`, default
    `redundax.internal.block_pattern(model, redundax.analysis.topology(model))`).
    Each block is marked as in the seed:

    - a body's diagonal block, numbered: its mass matrix and, for a spatial body in
      natural coordinates, its rigid-body rows (Kraus's augmented system; the solver
      eliminates these rows as blocks of S, and any coupling to them is drawn in the
      body's column);
    - a pair's joint block of C (—, below the diagonal) and its transpose (|, above);
    - the blocks the decomposition introduces (+): zero in [M Cᵀ; C 0], non-zero
      in S: each pair's diagonal block and the blocks of pairs on a common body;
    - the fill-in of S's factorisation in that order (*): blocks zero in S that the
      elimination couples, along a closed loop.

    **Arguments:**

    - `model`: the built mechanism.
    - `pattern`: its block pattern (default: the one the solver uses).
    - `figure`: the figure to draw in (default: a new one).

    **Returns:** the figure; every block a `Rectangle` whose `gid` is its kind
    (`"body"`, `"joint"`, `"introduced"`, `"fill"`) in the lower triangle and on the
    diagonal, and the kind plus `"_transpose"` above the diagonal.

    !!! example
        ```python
        from redundax import models
        from redundax.plot import plot_descriptor_pattern

        fig = plot_descriptor_pattern(models.six_bar().build())  # Kraus et al., Fig. 3
        fig.savefig("six_bar.png")
        ```
    """
    if pattern is None:
        pattern = block_pattern(model, topology(model))
    names, cells = _descriptor_cells(model, pattern)
    n, nb = len(names), pattern.n_bodies
    fig = _figure(figure, figsize=(7.0, 7.8))
    ax = fig.add_subplot()
    size = max(4.0, min(10.0, 160.0 / max(n, 1)))
    for (i, k), kind in sorted(cells.items()):
        colour, glyph, _ = _DESCRIPTOR_KINDS[kind]
        placed = [(i, k, kind, glyph)]
        if i != k:
            placed.append((k, i, f"{kind}_transpose", "|" if kind == "joint" else glyph))
        for r, c, gid, text in placed:
            alpha = 0.55 if gid.endswith("_transpose") else 1.0
            ax.add_patch(
                Rectangle(
                    (c, r), 1, 1, facecolor=colour, alpha=alpha, edgecolor="white", lw=0.5, gid=gid
                )
            )
            if n <= 40:
                label = str(r + 1) if kind == "body" else text
                ax.text(
                    c + 0.5, r + 0.5, label, ha="center", va="center", color="white", fontsize=size
                )
    ax.axhline(nb, color=_GREY, lw=0.8)  # [M Cᵀ; C 0]: the bodies, then the pairs
    ax.axvline(nb, color=_GREY, lw=0.8)
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    if n <= 40:
        labels = [f"{k + 1} {name}" for k, name in enumerate(names[:nb])] + names[nb:]
        ax.set_xticks(np.arange(n) + 0.5, labels, rotation=90, fontsize=7)
        ax.set_yticks(np.arange(n) + 0.5, labels, fontsize=7)
        ax.xaxis.tick_top()  # as a matrix is labelled; the legend goes below
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    count = {kind: sum(v == kind for v in cells.values()) for kind in _DESCRIPTOR_KINDS}
    fig.legend(
        handles=[Patch(color=c, label=label) for c, _, label in _DESCRIPTOR_KINDS.values()],
        loc="outside lower center",
        fontsize=_FOOTNOTE,
        ncols=2,
    )
    fig.suptitle(
        f"[M Cᵀ; C 0] as factorised: {nb} bodies, {n - nb} pairs, {count['joint']} joint "
        f"blocks,\n{count['introduced']} introduced, {count['fill']} fill-in; S's bandwidth "
        f"{pattern.bandwidth}",
        fontsize=10,
    )
    return fig


def plot_block_pattern(pattern, *, figure: Figure | None = None) -> Figure:
    """The structure of the block-sparse system C M⁻¹ Cᵀ (Kraus et al. 2001, §6): what
    is left of the descriptor matrix once the bodies are eliminated (its lower right
    part in [`plot_descriptor_pattern`][redundax.plot.plot_descriptor_pattern], the
    seed's Fig. 3); one row and column per constraint block (a pair, or a body's
    rigid-body rows), in the elimination order of the
    [`redundax.internal.BlockPattern`][] (`structure.blocks` or
    `redundax.internal.block_pattern(model, redundax.analysis.topology(model))`).

    **Returns:** the figure: diagonal blocks (`gid` `"diagonal"`), blocks coupled
    through a common body (`"coupled"`), fill-in created by the factorisation
    (`"fill"`, along closed loops off the ground); the lower triangle, as factorised.
    """
    fig = _figure(figure, figsize=(6.4, 6.0))
    ax = fig.add_subplot()
    n = pattern.n_blocks
    colours = {"diagonal": "0.15", "coupled": "C0", "fill": "C3"}
    cells = [("diagonal", k, k) for k in range(n)]
    cells += [
        ("fill" if (i, k) in pattern.fill else "coupled", i, k)
        for k in range(n)
        for i in pattern.later[k]
    ]
    for kind, i, k in cells:
        ax.add_patch(Rectangle((k, i), 1, 1, color=colours[kind], gid=kind))
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    if n <= 40:
        names = [pattern.names[g] for g in pattern.order]
        ax.set_xticks(np.arange(n) + 0.5, names, rotation=90, fontsize=7)
        ax.set_yticks(np.arange(n) + 0.5, names, fontsize=7)
    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in colours.items()],
        loc="upper right",
        fontsize=8,
    )
    ax.set_title(
        f"{n} blocks, {len(pattern.fill)} fill-in, at most {pattern.bandwidth} coupled later",
        fontsize=9,
    )
    return fig


def plot_modes(
    model,
    linearization,
    *,
    count: int | None = None,
    amplitude: float = 0.1,
    figure: Figure | None = None,
) -> Figure:
    """The mode shapes of a [`redundax.statics.Linearization`][] (e.g.
    `rx.equilibrium(model, q0).linearization`): per mode, the mechanism drawn through
    its joint points at rest (grey) and displaced by ± the mode (colour), the largest
    joint displacement `amplitude` times the mechanism's size; the title gives the
    frequency and the damping ratio. Each body is the polyline through its joint
    points (its centre of mass where it has one joint); spatial mechanisms in x–y.

    **Arguments:** `count`: the lowest modes drawn (default all, at most 6);
    `amplitude`: relative size of the displacement.

    **Returns:** the figure, one axes per mode (`gid` `"rest"`, `"mode+"`, `"mode-"` on
    the lines).
    """
    from ._reactions import pair_anchors  # noqa: PLC0415 - only here

    modes = linearization.modes()
    f = len(np.asarray(modes.frequencies_hz))
    count = min(f, 6) if count is None else min(int(count), f)
    q0 = np.asarray(linearization.q)
    nb, dof = model.bodies.count, model.bodies.dof

    def outline(q) -> list[np.ndarray]:
        anchors = np.asarray(pair_anchors(model, jnp.asarray(q)))[..., :2]
        lines = []
        for b, name in enumerate(model.bodies.names):
            points = [anchors[k, b] for k, p in enumerate(model.pairs) if name in p.bodies]
            if len(points) < 2:  # one joint: to the centre of mass
                centre = np.asarray(q).reshape(nb, dof)[b, :2]
                points = [*points, centre]
            lines.append(np.array(points))
        return lines

    rest = outline(q0)
    size = max(float(np.ptp(np.concatenate(rest), axis=0).max()), 1e-12)
    fig = _figure(figure, figsize=(4.0 * min(count, 3), 3.6 * ((count + 2) // 3)))
    axes = _grid(fig, max(count, 1), 3)
    for k in range(count):
        ax = axes[k]
        shape = np.asarray(modes.shapes[k])
        moved = [line - r for line, r in zip(outline(q0 + shape), rest, strict=True)]
        largest = max(float(np.abs(np.concatenate(moved)).max()), 1e-300)
        scale = amplitude * size / largest
        for line in rest:
            ax.plot(line[:, 0], line[:, 1], "o-", color="0.6", lw=2, gid="rest")
        for sign, gid, colour in ((1.0, "mode+", "C0"), (-1.0, "mode-", "C3")):
            for line in outline(q0 + sign * scale * shape):
                ax.plot(line[:, 0], line[:, 1], "o-", color=colour, lw=1, ms=3, gid=gid)
        ax.set_aspect("equal")
        fk, zk = float(modes.frequencies_hz[k]), float(modes.damping_ratios[k])
        ax.set_title(f"mode {k + 1}: {fk:.4g} Hz, ζ = {zk:.3g}", fontsize=9)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
    return fig


def save_all(
    run: RunLike,
    out_dir: str | os.PathLike,
    force: bool = False,
    format: str = "png",
    *,
    only: Sequence[str] | None = None,
    pairs: str | Sequence[str] | None = None,
    components: bool | None = None,
) -> list[Path]:
    """Write the figures of `run` to `out_dir`, one file each: `trajectories`,
    `reactions`, `violation`, `solvability`, `rank` (+ `.png`, `.pdf` or `.svg`).

    Every file is written atomically (a temporary file beside it, then a rename).
    All targets are checked before the first is written: none is overwritten
    unless `force`.

    **Arguments:**

    - `run`: the dict of [`redundax.io.read_run`][], or the path of the `.npz`.
    - `out_dir`: the folder (created if missing).
    - `force`: overwrite existing files.
    - `format`: `"png"`, `"pdf"` or `"svg"`.
    - `only`: the figures to write (names of `FIGURES`; default all).
    - `pairs`, `components`: as in [`plot_reactions`][redundax.plot.plot_reactions] (`pairs` also
      selects the bars of [`plot_solvability`][redundax.plot.plot_solvability]).

    **Returns:** the paths written, in the order of `FIGURES`.

    **Raises:** `FileExistsError` naming the first existing file when `force` is
    False; `ValueError` for an unknown format, figure or pair;
    `NotADirectoryError` if `out_dir` is a file.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    chosen = list(FIGURES) if only is None else _names(only) or []
    unknown = [name for name in chosen if name not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure {unknown[0]!r}; the figures are {', '.join(FIGURES)}")
    chosen = [name for name in FIGURES if name in chosen]
    run = _as_run(run)
    pairs = _select_pairs(run, pairs)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a directory")
    targets = [out / f"{name}.{format}" for name in chosen]
    if out.is_dir():
        for target in targets:
            try:
                check_output(target, force, suffixes=(f".{format}",))
            except FileExistsError:
                raise FileExistsError(
                    f"{target}: already exists; pass --force to overwrite it (force=True in Python)"
                ) from None
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, target in zip(chosen, targets, strict=True):
        fig = _BUILDERS[name](run, pairs, components)
        with atomic_write(target, force) as file:
            fig.savefig(file, format=format, dpi=120)
        written.append(target)
    return written
