"""Thousands of generated mechanisms through the checks of `tests/test_generated.py`
(issue 34, item 4): what a user's own first models would meet.

The mechanisms come from `tests/mechanism_generator.py` (12 families: four-bars,
3- and 4-crank parallelograms, 3-RRR parallel manipulators, a tree plus a loop,
their spatial twins with laminae, slender rods and isotropic bodies, Bennett and
random 4R loops, crank drives inside and past the workspace); the properties are
the test file's check functions, each against code written in the test (a NumPy
SVD of the constraint Jacobian in twist coordinates, the test's own Newton
projection, central differences):

- `verdicts` (a): rank, p, mobility, pair and row verdicts of
  `analyze_solvability` and `decide` at the initial configuration;
- `stable` (b): `Structure.rank_nearby`, `stable_unique`, `stable_row_unique`
  against the SVD at a generic configuration nearby, and `analyze_solvability`
  there;
- `gradient` (c): d(unique reaction after `rx.drift.Projection`)/d(joint point, mass) by
  `jax.grad` against central differences, on every exactly symmetric instance
  (identical links or legs) with an invertible mass matrix;
- `joint` (e): in joint coordinates, `joint_uniqueness`'s redundancy and its
  pair and row verdicts (the DCA's decisions, seed 002) against the same SVD;
- `validity` (d): a crank drive inside its range runs valid, one past the end of
  travel is flagged (`simulate(throw=False)`: `Trajectory.valid` and the event
  result; with a redundax that has no validity API, before the fix, a run counts
  as flagged when `simulate` raised or its result was not successful);
  `validity_throw`: `simulate(throw=True)` raises `ConstraintsLeftError` with
  consistent attributes exactly for the infeasible drives (first 20 drives).
  Also on 10 spatial twins of the driven four-bars (`twin_four_bar_drive`, at
  most 3,000 steps each).

An instance the test's own oracle cannot judge (a singular value or a verdict
ratio within a factor 1e3–1e6 of its threshold, or its Newton projection not
converging) is counted under `inconclusive`, not as a failure of redundax.

Run (≈ 15–25 min on the 2-core machine):

    OPENBLAS_NUM_THREADS=1 .venv/bin/python experiments/generated_mechanisms.py
    # writes experiments/results/generated_mechanisms/summary.json

The same against another checkout of redundax (e.g. the state before issue 34's
fixes, in a git worktree): put its `src` first on PYTHONPATH and name the output,

    PYTHONPATH=WORKTREE/src .venv/bin/python experiments/generated_mechanisms.py \\
        --out experiments/results/generated_mechanisms/summary_before.json

Options: `--per-family N` (default 450), `--drives N` (default 100),
`--families a,b` (default all), `--properties a,b` (default all: verdicts, stable,
gradient, joint, validity). The joint-coordinate property alone,

    .venv/bin/python experiments/generated_mechanisms.py --properties joint \\
        --per-family 100 --out experiments/results/generated_mechanisms/joint.json

and before its fix (`joint_before.json`: a copy of `src` whose `decision_metric` in
`joint_coordinates/_dca.py` returns the inertias unchanged, the DCA's decisions in
the bodies' raw M⁻¹ metric as up to commit b619e00, first on PYTHONPATH).
"""

import argparse
import json
import pathlib
import platform
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import diffrax  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402

import mechanism_generator as mg  # noqa: E402
import redundax as rx  # noqa: E402
import test_generated as tg  # noqa: E402

RESULTS = ROOT / "experiments" / "results" / "generated_mechanisms"
ANALYSIS_FAMILIES = tuple(tg.COUNTS)
GRADIENT_FAMILIES = ("rrr3", "parallelogram3", "parallelogram4", "twin_rrr3",
                     "twin_parallelogram3")
GRADIENTS_PER_FAMILY = 12
EXAMPLES = 5
INCONCLUSIVE = (
    "the generator drew an instance too close",
    "nearby configuration too close",
    "the test's Newton projection did not converge",
)


def _run(check, family, seed):
    """`(status, problems)` of one check: "ok", "failed", "inconclusive" (the
    oracle could not judge) or "error" (the check raised)."""
    try:
        problems = check(family, seed)
    except Exception as error:  # a check that raises is a failure, recorded
        last = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{pathlib.Path(last.filename).name}:{last.lineno}"
        return "error", [f"raised {type(error).__name__} at {where}: {str(error)[:300]}"]
    if problems and all(p.startswith(INCONCLUSIVE) for p in problems):
        return "inconclusive", problems
    return ("failed" if problems else "ok"), problems


def check_validity(family, seed, max_steps=100_000):
    """Property d. With the validity API (`Trajectory.valid`): as the test, a
    feasible drive valid everywhere with a successful result, an infeasible one
    with False entries in `valid` and the event or step-size-floor result, stopped
    within [-T_STOP_BEFORE, T_STOP_AFTER] of the crank's end of travel.
    Without it (before the fix): flagged when simulate raised or its result was
    not successful."""
    g, model, state, _ = tg.case(family, seed)
    try:
        traj = rx.simulate(
            model, state, tg.T_RUN, saveat=rx.SaveAt(n=8), throw=False, max_steps=max_steps
        )
    except Exception as error:
        flagged, how = True, f"simulate raised {type(error).__name__}: {str(error)[:200]}"
        strict = False
    else:
        valid = getattr(traj, "valid", None)
        strict = valid is not None
        successful = traj.result == diffrax.RESULTS.successful
        stopped = (traj.result == diffrax.RESULTS.event_occurred) | (
            traj.result == diffrax.RESULTS.dt_min_reached
        )
        invalid = strict and not bool(np.all(np.asarray(valid)))
        violation = np.asarray(traj.position_violation)
        how = (
            f"valid {None if valid is None else np.asarray(valid).tolist()}, result "
            f"{traj.result}, {int(traj.num_steps)} steps, max |Φ| "
            f"{float(np.nanmax(violation)) if np.any(np.isfinite(violation)) else float('nan'):.3g}"
        )
        flagged = (invalid and stopped) if strict else not successful
        if g.drive == "feasible":
            flagged = invalid or not successful
    if g.drive == "feasible" and flagged:
        return [f"a feasible drive was flagged: {how}"]
    if g.drive == "infeasible" and not flagged:
        by = " (the validity event or the step-size floor)" if strict else ""
        return [f"a drive past the end of travel was not flagged{by}: {how}"]
    if g.drive == "infeasible" and strict:
        # Stopped where the crank reaches the end of its travel (closed form)?
        t_star = tg.end_of_travel(g)
        if not -tg.T_STOP_BEFORE <= float(traj.left_at) - t_star <= tg.T_STOP_AFTER:
            return [f"stopped at {float(traj.left_at):.6g} s, end of travel at {t_star:.6g} s: {how}"]
    return []


TWIN_DRIVES = 10
TWIN_MAX_STEPS = 3000
"""Spatial twins of the driven four-bars, run with at most 3,000 steps (an
infeasible one that the event does not stop would otherwise grind through the
default 100,000)."""


class Tally:
    def __init__(self):
        self.families: dict = {}
        self.inertia: dict = {}  # (family, seed): the bodies' inertia kinds

    def add(self, family, prop, seed, status, problems):
        fam = self.families.setdefault(family, {"count": 0, "properties": {}})
        entry = fam["properties"].setdefault(
            prop, {"checked": 0, "failed": 0, "inconclusive": 0, "examples": []}
        )
        entry["checked"] += 1
        kinds = sorted(set(self.inertia.get((family, seed), ())))
        for kind in kinds:
            by = entry.setdefault("checked_with_inertia", {})
            by[kind] = by.get(kind, 0) + 1
        if status in ("failed", "error"):
            entry["failed"] += 1
            entry.setdefault("failed_seeds", []).append(seed)
            for kind in kinds:
                by = entry.setdefault("failed_with_inertia", {})
                by[kind] = by.get(kind, 0) + 1
            if len(entry["examples"]) < EXAMPLES:
                try:
                    g = mg.generate(family, seed)
                    why, inertia = g.why, list(g.inertia)
                except Exception:  # this redundax cannot build it
                    why, inertia = None, None
                entry["examples"].append(
                    {"seed": seed, "why": why, "inertia": inertia,
                     "problems": problems[:6], "n_problems": len(problems)}
                )
        elif status == "inconclusive":
            entry["inconclusive"] += 1
            entry.setdefault("inconclusive_examples", [])
            if len(entry["inconclusive_examples"]) < 2:
                entry["inconclusive_examples"].append({"seed": seed, "problems": problems[:2]})

    def describe(self, family, g):
        self.inertia[(family, g.seed)] = g.inertia
        fam = self.families.setdefault(family, {"count": 0, "properties": {}})
        fam["count"] += 1
        kinds = fam.setdefault("inertia_kinds", {})
        for k in set(g.inertia):
            kinds[k] = kinds.get(k, 0) + 1
        for flag in ("symmetric", "special"):
            fam[flag] = fam.get(flag, 0) + int(getattr(g, flag))
        if g.drive:
            fam.setdefault("drives", {}).setdefault(g.drive, 0)
            fam["drives"][g.drive] += 1

    def totals(self):
        out: dict = {}
        for fam in self.families.values():
            for prop, e in fam["properties"].items():
                t = out.setdefault(prop, {"checked": 0, "failed": 0, "inconclusive": 0})
                for key in t:
                    t[key] += e[key]
        return out


def _commit_of_redundax() -> str | None:
    """The git commit of the checkout the imported redundax comes from."""
    where = pathlib.Path(rx.__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"],
                             capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, check=True).stdout.strip()
        return out.stdout.strip() + (" (with uncommitted changes in src/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=450)
    parser.add_argument("--drives", type=int, default=100)
    parser.add_argument("--families", default=",".join(ANALYSIS_FAMILIES))
    parser.add_argument("--properties", default="verdicts,stable,gradient,joint,validity")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS / "summary.json")
    args = parser.parse_args()
    wanted = set(args.properties.split(","))
    start = time.perf_counter()
    tally = Tally()
    families = [f for f in args.families.split(",") if f]
    for family in families:
        t0 = time.perf_counter()
        gradients = 0
        for seed in range(args.per_family):
            g = tg.case(family, seed)[0]
            tally.describe(family, g)
            if "verdicts" in wanted:
                tally.add(family, "verdicts", seed, *_run(tg.check_verdicts, family, seed))
            if "stable" in wanted:
                tally.add(family, "stable", seed, *_run(tg.check_stable, family, seed))
            if "joint" in wanted:
                tally.add(family, "joint", seed, *_run(tg.check_joint_verdicts, family, seed))
            if ("gradient" in wanted and family in GRADIENT_FAMILIES and g.symmetric
                    and gradients < GRADIENTS_PER_FAMILY
                    and set(g.inertia) <= {"planar", "generic", "isotropic"}):
                gradients += 1
                tally.add(family, "gradient", seed, *_run(tg.check_gradient, family, seed))
            tg._CASES.pop((family, seed), None)
        print(f"{family}: {args.per_family} in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
              flush=True)
    if args.drives and "validity" in wanted:
        t0 = time.perf_counter()
        for seed in range(args.drives):
            g = tg.case("four_bar_drive", seed)[0]
            tally.describe("four_bar_drive", g)
            tally.add("four_bar_drive", "validity", seed,
                      *_run(check_validity, "four_bar_drive", seed))
            if seed < 20:
                tally.add("four_bar_drive", "validity_throw", seed,
                          *_run(tg.check_drive_raises, "four_bar_drive", seed))
            tg._CASES.pop(("four_bar_drive", seed), None)
        print(f"four_bar_drive: {args.drives} in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        for seed in range(min(TWIN_DRIVES, args.drives)):
            try:
                g = tg.case("twin_four_bar_drive", seed)[0]
            except Exception as error:  # this redundax cannot build it
                tally.add("twin_four_bar_drive", "validity", seed, "error",
                          [f"building it raised {type(error).__name__}: {str(error)[:300]}"])
                continue
            tally.describe("twin_four_bar_drive", g)
            tally.add("twin_four_bar_drive", "validity", seed,
                      *_run(lambda f, s: check_validity(f, s, TWIN_MAX_STEPS),
                            "twin_four_bar_drive", seed))
            tg._CASES.pop(("twin_four_bar_drive", seed), None)
        print(f"twin_four_bar_drive: {min(TWIN_DRIVES, args.drives)} in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    summary = {
        "what": "generated mechanisms through tests/test_generated.py's checks (issue 34 item 4)",
        "redundax": str(pathlib.Path(rx.__file__).resolve().parent.name),
        "redundax_commit": _commit_of_redundax(),
        "mechanisms": sum(f["count"] for f in tally.families.values()),
        "per_family": {k: v["count"] for k, v in tally.families.items()},
        "totals": tally.totals(),
        "families": tally.families,
        "seconds": round(time.perf_counter() - start, 1),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "jax": jax.__version__},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"mechanisms": summary["mechanisms"], "totals": summary["totals"],
                      "seconds": summary["seconds"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
