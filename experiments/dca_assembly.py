"""Seed 002's Fig. 1: a mechanism and its recursive binary assembly, with each joint's
verdict and the step of the propagation that decided it.

For the four-bar (p = 0), Bricard's mechanism (p = 1) and the spatial four-bar (the
planar four-bar's spatial twin, `models.spatial_twin`: its four revolute axes
parallel, p = 3): the mechanism drawn at its initial configuration (tree joints
solid, cut joints dashed), and the assembly tree of the divide-and-conquer algorithm
(leaves: the bodies and the ground; each assembly labelled with the pairs whose rows
cross between its two halves, green when unique, red when not, with the step that
decided them: 1 assembly, 1 dropped row, 2 one pair, 3 two pairs, S the self-stress
test).

Run:  cd /work/main && .venv/bin/python experiments/dca_assembly.py [--quick]
Writes experiments/results/dca_assembly/: fig_four_bar.png, fig_bricard.png,
fig_spatial_four_bar.png, summary.json (per pair: tree or cut, unique, decided by,
assembly, and per reaction component whether it is unique).
(--quick writes to $TMPDIR/redundax_quick/dca_assembly/ instead.)
"""

import argparse
import json
import pathlib
import tempfile

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import redundax as rx

SHORT = {"assembly": "1", "dropped": "1*", "one pair": "2", "two pairs": "3", "self-stress": "S"}


def _anchors(model, q):
    """Global position of each pair's point (on its first body), in pair order."""
    nb, dof = model.bodies.count, model.bodies.dof
    Q = np.concatenate(
        [np.asarray(q).reshape(nb, dof), np.asarray(model.bodies.ground_coordinates())[None]]
    )
    points = {}
    for group in model.holonomic:
        bodies = np.asarray(group.bodies)
        anchors = jax.vmap(lambda g, qb: g.anchor(qb))(group, Q[bodies])
        for k, rows in enumerate(np.asarray(group.rows)):
            points[int(rows[0])] = np.asarray(anchors[k, 0])
    return [points.get(p.rows[0]) for p in model.pairs]


def _draw_mechanism(ax, model, q, jm, report, planar):
    anchors = _anchors(model, q)
    nb, dof = model.bodies.count, model.bodies.dof
    X = np.asarray(q).reshape(nb, dof)
    centre = X[:, :2] if planar else X[:, :3]
    if not planar:  # a spatial mechanism in the plane z = const (a planar twin): x, y
        z = [a[2] for a in anchors if a is not None] + list(centre[:, 2])
        planar = bool(np.ptp(z) < 1e-9)
    proj = (
        (lambda p: p[:2])
        if planar
        else (lambda p: np.array([p[0] - 0.45 * p[1], p[2] - 0.3 * p[1]]))
    )
    for b in range(nb):
        pts = [
            proj(anchors[k]) for k, pair in enumerate(model.pairs)
            if model.bodies.names[b] in pair.bodies and anchors[k] is not None
        ]  # fmt: skip
        pts = pts or [proj(centre[b])]
        pts = np.array(pts)
        ax.plot(pts[:, 0], pts[:, 1], "-", color="0.35", lw=3, solid_capstyle="round", zorder=1)
        c = proj(centre[b])
        ax.annotate(model.bodies.names[b], c, fontsize=7, color="0.3", ha="center", va="bottom")
    for k, pair in enumerate(model.pairs):
        if anchors[k] is None:
            continue
        p = proj(anchors[k])
        color = "tab:green" if report.unique[k] else "tab:red"
        style = (
            dict(mfc="white", mec=color, mew=2) if report.tree[k] else dict(mfc=color, mec=color)
        )
        ax.plot(*p, "o", ms=9, zorder=3, **style)
        ax.annotate(f" {pair.name}", p, fontsize=8, color=color, zorder=4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("mechanism (open circle: tree joint, filled: cut joint)", fontsize=8)


def _draw_tree(ax, model, structure, report):
    nodes = structure.assemblies
    tree = structure.plan.tree
    n = model.bodies.count
    names = (*model.bodies.names, "ground")
    x, y = {}, {}

    def place(node, counter=[0]):  # noqa: B006 (an in-order counter)
        if node < tree.first_internal:
            x[node], y[node] = counter[0], 0
            counter[0] += 1
            return
        left, right = next(nd.children for nd in nodes if nd.node == node)
        place(left)
        place(right)
        x[node] = 0.5 * (x[left] + x[right])
        y[node] = max(y[left], y[right]) + 1

    root = nodes[-1].node
    place(root)
    for nd in nodes:
        for child in nd.children:
            ax.plot(
                [x[nd.node], x[child]], [y[nd.node], y[child]], "-", color="0.6", lw=1, zorder=1
            )
    for leaf in range(n + 1):  # the seed's picture: one ground leaf, n
        ax.annotate(names[leaf], (x[leaf], y[leaf]), ha="center", va="top", fontsize=7, rotation=30)
        ax.plot(x[leaf], y[leaf], "s", color="0.3", ms=5)
    for nd in nodes:
        pairs = sorted({structure.rows.pair_of_row[r] for r in nd.crossing})
        ax.plot(x[nd.node], y[nd.node], "o", color="0.2", ms=5, zorder=2)
        for j, k in enumerate(pairs):
            color = "tab:green" if report.unique[k] else "tab:red"
            label = f"{model.pairs[k].name} ({SHORT[report.step[k]]})"
            ax.annotate(
                label,
                (x[nd.node], y[nd.node] + 0.18 + 0.22 * j),
                ha="center",
                fontsize=7,
                color=color,
            )
        if nd.nullity:
            ax.annotate(
                f"drops {nd.nullity}",
                (x[nd.node] + 0.15, y[nd.node] - 0.25),
                fontsize=6,
                color="tab:red",
            )
    ax.set_ylim(-0.8, y[root] + 0.4 + 0.22 * 4)
    ax.axis("off")
    ax.set_title(
        "assembly tree: pairs joined at each assembly (step: 1, 1* dropped, 2, 3, S self-stress)",
        fontsize=8,
    )


def run(name, mech, out: pathlib.Path) -> dict:
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, jstate, ground="root")
    report = rx.joint_coordinates.joint_uniqueness(jm, structure, jstate)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    _draw_mechanism(axes[0], model, state.q, jm, report, model.dim == 2)
    _draw_tree(axes[1], model, structure, report)
    fig.suptitle(
        f"{name}: p = {report.redundancy}, mobility {report.mobility} (green unique, red not)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out / f"fig_{name}.png", dpi=110)
    plt.close(fig)
    print(report, "\n")
    return {
        "redundancy": report.redundancy,
        "dof": report.mobility,
        "pairs": {
            n: {
                "tree_joint": t,
                "unique": u,
                "decided_by": s,
                "assembly": a,
                "components_unique": dict(zip(labels, rows, strict=True)),
            }
            for n, t, u, s, a, labels, rows in zip(
                report.names,
                report.tree,
                report.unique,
                report.step,
                report.assembly,
                report.labels,
                report.row_unique,
                strict=True,
            )  # fmt: skip
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    base = (
        pathlib.Path(tempfile.gettempdir()) / "redundax_quick"
        if args.quick
        else pathlib.Path(__file__).parent / "results"
    )
    out = base / "dca_assembly"
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        name: run(name, mech, out)
        for name, mech in (
            ("four_bar", rx.models.four_bar()),
            ("bricard", rx.models.bricard()),
            ("spatial_four_bar", rx.models.spatial_twin(rx.models.four_bar())),
        )
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
