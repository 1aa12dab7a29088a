"""The structure of the block-sparse system (Kraus, Winckler & Bock 2001, §6 and §7,
Fig. 3 "Structural diagram") for the seed's 6-bar and the reference mechanisms, as
`rx.internal.block_pattern` orders it for the block-sparse solver.

Two figures per mechanism, both drawn by the library from the pattern the solver uses:

- the descriptor matrix [M Cᵀ; C 0] (`redundax.plot.plot_descriptor_pattern`): the
  seed's structural diagram, bodies (mass matrix and rigid-body rows, numbered),
  joint blocks (—) and their transposes (|), blocks introduced by eliminating the
  bodies (+) and the fill-in of the factorisation (*);
- S = C M⁻¹ Cᵀ, what is left once the bodies are eliminated
  (`redundax.plot.plot_block_pattern`): constraint blocks in elimination order,
  their couplings and fill-in.

The 6-bar's structural diagram is `six_bar.png` (the seed's Fig. 3 itself) and its S
`six_bar_schur.png`; the other mechanisms keep `{NAME}.png` for S (as the docs show
it) and have `{NAME}_descriptor.png` for the descriptor matrix. summary.json: per
mechanism its figures, its counts (bodies, rows, blocks of S, fill-in blocks,
bandwidth: the most later blocks a step is coupled to), the blocks of the descriptor
diagram by kind (read back from the figure), and the elimination order.

Run:
    .venv/bin/python experiments/block_pattern.py      # a few seconds, no simulation
Writes experiments/results/block_pattern/*.png and summary.json.
"""

import collections
import json
import pathlib

import redundax as rx
from redundax import models
from redundax.plot import plot_block_pattern, plot_descriptor_pattern

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "block_pattern"
MECHANISMS = {
    "six_bar": models.six_bar,
    "mobile_robot": models.mobile_robot,
    "bricard": models.bricard,
    "a02_spatial_4": lambda: models.spatial_twin(models.n_four_bar(4)),
    "spherical_chain_6": lambda: models.spherical_chain(6),
}
# The seed's own mechanism: its structural diagram under the plain name.
FILES = {"six_bar": {"descriptor": "six_bar.png", "schur": "six_bar_schur.png"}}


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, build in MECHANISMS.items():
        model = build().build()
        pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
        files = FILES.get(name, {"descriptor": f"{name}_descriptor.png", "schur": f"{name}.png"})
        descriptor = plot_descriptor_pattern(model, pattern)
        descriptor.savefig(RESULTS / files["descriptor"], dpi=120)
        plot_block_pattern(pattern).savefig(RESULTS / files["schur"], dpi=120)
        drawn = collections.Counter(p.get_gid() for p in descriptor.axes[0].patches)
        summary[name] = {
            "figures": files,
            "bodies": model.bodies.count,
            "pairs": len(model.pairs),
            "rows": model.n_constraints,
            "blocks": pattern.n_blocks,
            "fill": len(pattern.fill),
            "fill_blocks": sorted(
                [pattern.names[pattern.order[i]], pattern.names[pattern.order[j]]]
                for i, j in pattern.fill
            ),
            "bandwidth": pattern.bandwidth,
            "descriptor_blocks": {
                kind: drawn[kind] for kind in ("body", "joint", "introduced", "fill")
            },
            "order": [pattern.names[g] for g in pattern.order],
        }
        print(
            f"{name}: {pattern.n_blocks} blocks of S, fill {len(pattern.fill)}, "
            f"bandwidth {pattern.bandwidth}; descriptor {summary[name]['descriptor_blocks']}"
        )
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
