"""The structure of the block-sparse system (Kraus, Winckler & Bock 2001, Fig. 3) for
the reference mechanisms: which constraint blocks couple, in the elimination order
of `rx.internal.block_pattern`, and where the factorisation fills in.

Run:
    .venv/bin/python experiments/block_pattern.py      # a few seconds, no simulation
Writes experiments/results/block_pattern/{NAME}.png and summary.json.
"""

import json
import pathlib

import redundax as rx
from redundax import models
from redundax.plot import plot_block_pattern

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "block_pattern"
MECHANISMS = {
    "mobile_robot": models.mobile_robot,
    "bricard": models.bricard,
    "a02_spatial_4": lambda: models.spatial_twin(models.n_four_bar(4)),
    "spherical_chain_6": lambda: models.spherical_chain(6),
}


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, build in MECHANISMS.items():
        model = build().build()
        pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
        plot_block_pattern(pattern).savefig(RESULTS / f"{name}.png", dpi=120)
        summary[name] = {
            "bodies": model.bodies.count,
            "rows": model.n_constraints,
            "blocks": pattern.n_blocks,
            "fill": len(pattern.fill),
            "bandwidth": pattern.bandwidth,
            "order": [pattern.names[g] for g in pattern.order],
        }
        print(f"{name}: {summary[name]['blocks']} blocks, fill {summary[name]['fill']}")
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
