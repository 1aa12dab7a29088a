"""What a design study writes: `design.json`, `history.csv`, `design.png`.

Part of [`redundax.optimize`][], whose docstring describes the whole.
"""

import csv
import io
import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from ..io._atomic import atomic_write
from ._constants import QUANTITIES
from ._file import Design
from ._optimizer import DesignResult, Step


# ------------------------------------------------------------------------- output
def _figure(result: DesignResult):
    import matplotlib  # noqa: PLC0415 - matplotlib only for the figures

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib only for the figures

    accepted = result.accepted
    n_terms = len(result.labels)
    fig, axes = plt.subplots(1, 1 + n_terms, figsize=(5.0 * (1 + n_terms), 3.8))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.plot([s.step for s in accepted], [s.objective for s in accepted], "o-", color="C0")
    rejected = [s for s in result.history if not s.accepted and np.isfinite(s.objective)]
    if rejected:
        ax.plot(
            [s.step for s in rejected],
            [s.objective for s in rejected],
            "x",
            color="C3",
            label="rejected step",
        )
        ax.legend()
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective J (1 at the initial design)")
    ax.set_title(f"objective: −{100 * result.decrease:.1f} %")
    ax.grid(alpha=0.3)
    for k, label in enumerate(result.labels):
        ax = axes[1 + k]
        quantity = result.quantities[k]
        for evaluation, name, style in (
            (result.initial_evaluation, "initial design", "--"),
            (result.final_evaluation, "optimised design", "-"),
        ):
            value = (
                f"peak {evaluation.peaks[k]:.4g}, smooth peak {evaluation.terms[k]:.4g}"
                if quantity == "smooth peak"
                else f"{quantity} {evaluation.terms[k]:.4g}"
            )
            ax.plot(evaluation.ts, evaluation.magnitude[k], style, label=f"{name}: {value}")
        ax.set_xlabel("t [s]")
        ax.set_ylabel("reaction magnitude [N or N m]")
        ax.set_title(label)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _history_csv(
    names: Sequence[str], labels: Sequence[str], quantities: Sequence[str], history: Sequence[Step]
) -> str:
    """`history.csv`: one row per iteration. Each term has the column `LABEL: smooth
    peak` (its value, a peak-reaction term) and `LABEL: peak` (the sampled maximum),
    or `LABEL: impulse`; `rejection` says why a rejected step was rejected."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    peak = [q == QUANTITIES["peak-reaction"] for q in quantities]
    columns = []
    for label, quantity, has_peak in zip(labels, quantities, peak, strict=True):
        columns += [f"{label}: {quantity}"] + ([f"{label}: peak"] if has_peak else [])
    writer.writerow(
        ["step", *names, "objective", *columns, "penalty", "min_singular_ratio",
         "gradient_norm", "learning_rate", "accepted", "rejection", "seconds"]
    )  # fmt: skip
    for s in history:
        values = []
        for term, top, has_peak in zip(s.terms, s.peaks, peak, strict=True):
            values += [_number(term)] + ([_number(top)] if has_peak else [])
        writer.writerow(
            [s.step, *map(_number, s.x), _number(s.objective), *values,
             _number(s.penalty), _number(s.min_ratio), _number(s.gradient_norm),
             _number(s.learning_rate), s.accepted, s.rejection, f"{s.seconds:.3f}"]
        )  # fmt: skip
    return buffer.getvalue()


def _number(value: float) -> str:
    """A CSV cell: the number's repr, empty when it is not finite (a step whose
    simulation failed has no objective)."""
    return repr(value) if math.isfinite(value) else ""


OUTPUTS = ("design.json", "history.csv", "design.png")
"""The files `redundax optimize` writes into its output folder."""


def write_history(
    design: Design, history: Sequence[Step], out: str | Path, force: bool = False
) -> Path:
    """Write `history.csv` with the iterations so far into the folder `out`,
    atomically (`redundax optimize` does after every iteration, so that a run that
    stops early, or is interrupted, keeps them).

    **Raises:** `FileExistsError` naming the file if it exists, unless `force`.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / OUTPUTS[1]
    text = _history_csv(
        [v.name for v in design.variables],
        [t.label for t in design.objective],
        [QUANTITIES[t.kind] for t in design.objective],
        history,
    )
    with atomic_write(path, force, text=True) as file:
        file.write(text)
    return path


def write_result(
    result: DesignResult,
    out: str | Path,
    force: bool = False,
    *,
    replace: Collection[str] = (),
) -> list[Path]:
    """Write `design.json`, `history.csv` and `design.png` (objective history and
    the reactions before/after) into the folder `out`, atomically.

    `replace`: names of files in `out` that this study wrote itself (the
    `history.csv` of [`write_history`][redundax.optimize.write_history] as it went), replaced even
    without `force`.

    **Raises:** `FileExistsError` naming the first existing file unless `force`.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder")
    paths = [out / name for name in OUTPUTS]
    if not force:
        for path in paths:
            if path.name not in replace and path.exists():
                raise FileExistsError(f"{path}: already exists; pass --force to overwrite it")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(paths[0], force, text=True) as file:
        json.dump(result.to_dict(), file, indent=2, allow_nan=False)
        file.write("\n")
    names = [n for n, _ in result.variables]
    with atomic_write(paths[1], force or paths[1].name in replace, text=True) as file:
        file.write(_history_csv(names, result.labels, result.quantities, result.history))
    fig = _figure(result)
    with atomic_write(paths[2], force, text=False) as file:
        fig.savefig(file, format="png", dpi=120)
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib only for the figures

    plt.close(fig)
    return paths
