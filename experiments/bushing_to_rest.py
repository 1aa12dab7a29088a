"""The exact compliant assembly against a simulation of the bushing model to rest
(issue 37): the spatial four-bar of `configs/four_bar_spring.toml` (built with
spatial revolutes, p = 3), its joint D a 6-D bushing (1e6 N/m, 1e4 N m/rad in
bending, free about its axis) whose ground point is 0.1 mm out of the plane.

Three answers to "what do the joints carry at rest?":
1. `statics.compliant_equilibrium` of the revolute model with D's rows springs;
2. `rx.equilibrium` of the bushing model (D a force element, not a joint);
3. `rx.simulate` of the bushing model from the rigid equilibrium until it is at rest
   (the diagonal spring's damping raised to 60 N s/m and the bushing damped, so that
   it settles in a few seconds), its reactions at the end.

Run:
    .venv/bin/python experiments/bushing_to_rest.py      # ≈ 1 min on 2 cores
Writes experiments/results/bushing_to_rest/summary.json.
"""

import dataclasses
import json
import pathlib
import sys
import time

import equinox as eqx
import jax.numpy as jnp
import numpy as np

import redundax as rx
from redundax import statics
from redundax.forces import Bushing

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_statics import _four_bar_with_spring  # noqa: E402

OUT = ROOT / "experiments" / "results" / "bushing_to_rest"
KF, KM, DELTA, T_REST = 1e6, 1e4, 1e-4, 6.0


def main() -> None:
    start = time.perf_counter()
    mech = _four_bar_with_spring(spatial=True)
    spring = dataclasses.replace(mech.forces[0], damping=60.0)
    mech = dataclasses.replace(mech, forces=[spring])
    model = mech.build()
    eq = rx.equilibrium(model, mech.initial_state().q)
    D = model.pair("D")
    k = np.full(model.n_constraints, np.inf)
    for r, label in zip(D.rows, D.components, strict=True):
        k[r] = KM if "moment" in label else KF
    deviated = statics.deviate(model, {"pairs.D.point_j.z": DELTA})
    compliant = statics.compliant_equilibrium(deviated, eq.q, jnp.asarray(k))

    bushing = Bushing(
        "rocker",
        "ground",
        point=(1.0, 0.0, 0.0),
        stiffness=(KF, KF, KF),
        rotational_stiffness=(KM, KM, 0.0),
        damping=(2e3, 2e3, 2e3),
        rotational_damping=(20.0, 20.0, 0.0),
    )
    bushed = dataclasses.replace(
        mech, pairs=[p for p in mech.pairs if p.name != "D"], forces=[spring, bushing]
    ).build()
    s_j = bushed.forces[1].s_j
    bushed = eqx.tree_at(lambda m: m.forces[1].s_j, bushed, s_j.at[0, 2].add(DELTA))
    static = rx.equilibrium(bushed, eq.q)
    t0 = time.perf_counter()
    run = rx.simulate(bushed, rx.State(0.0, eq.q, jnp.zeros_like(eq.q)), T_REST)
    wall = time.perf_counter() - t0
    end = rx.reactions(bushed, run.q[-1], run.qd[-1], run.ts[-1], structure=run.structure)

    rows = {}
    for name in "OAB":
        mine = -np.asarray(compliant.multipliers)[list(model.pair(name).rows)]
        eq_b = -np.asarray(static.reactions.multipliers)[list(bushed.pair(name).rows)]
        sim = -np.asarray(end.multipliers)[list(bushed.pair(name).rows)]
        rows[name] = {
            "components": list(model.pair(name).components),
            "compliant_equilibrium": mine.tolist(),
            "bushing_equilibrium": eq_b.tolist(),
            "bushing_simulated_to_rest": sim.tolist(),
            "max_difference_static_N": float(np.abs(mine - eq_b).max()),
            "max_difference_simulated_N": float(np.abs(mine - sim).max()),
        }
    summary = {
        "mechanism": "spatial four-bar with a diagonal spring (c = 60 N s/m), D a bushing, "
        "its ground point 0.1 mm out of plane",
        "D_axial_force_N": -float(compliant.multipliers[D.rows[0]]),
        "k_delta_N": KF * DELTA,
        "max_dq_compliant_vs_bushing_equilibrium": float(jnp.abs(compliant.q - static.q).max()),
        "max_dq_compliant_vs_simulated": float(jnp.abs(compliant.q - run.q[-1]).max()),
        "max_speed_at_end": float(jnp.abs(run.qd[-1]).max()),
        "simulation": {
            "t_final_s": T_REST,
            "steps": int(run.num_steps),
            "wall_s": round(wall, 1),
            "valid": bool(np.all(run.valid)),
        },
        "pairs": rows,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
