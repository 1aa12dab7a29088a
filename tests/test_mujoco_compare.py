"""The closed chains of `configs/mjcf/` against independent sources (issue 13): the
imported Bricard against `configs/bricard.toml`, and every example's motion
against MuJoCo's own simulation of the same file (its soft equality constraints
made stiff). `experiments/mujoco_compare.py` makes the same comparison at tight
tolerances, with the forces, and writes the figures."""

import dataclasses
from pathlib import Path

import diffrax
import jax
import numpy as np
import pytest

import redundax as rx
from helpers import CONFIGS
from redundax.io import load_config

mujoco = pytest.importorskip("mujoco", reason="reading MJCF needs the 'mjcf' extra")

MJCF = CONFIGS / "mjcf"
EXAMPLES = {
    "four_bar_connect": MJCF / "four_bar_connect.xml",
    "four_bar_weld": MJCF / "four_bar_weld.xml",
    "bricard": MJCF / "bricard.xml",
    "gripper": MJCF / "gripper.xml",
    "four_bar_urdf": MJCF / "four_bar_urdf.xml",
}
T_FINAL = 2.0  # s
N_SAVE = 21  # every 0.1 s
# Bricard written two ways is one motion: P3 of the two models [m] (measured 5.1e-11:
# simulated side by side, they share the step sizes, so only the models can differ).
TOL_SAME_BRICARD = 1e-8
# redundax (rigid) against MuJoCo with stiff equalities, 2 s [m]. Measured here (max
# over the 21 instants, sites and centres of mass): four_bar_connect 1.0e-7,
# four_bar_weld 5.9e-10, bricard 1.3e-9, gripper 1.2e-8, four_bar_urdf 1.5e-7 (mostly
# this file's rtol 1e-7); with redundax at rtol 1e-10 (experiments/mujoco_compare.py,
# 201 instants) 7.9e-9, 5.9e-10, 4.9e-10, 1.8e-9, 2.0e-9: MuJoCo's own error.
TOL_MUJOCO = 1e-4
# MuJoCo: RK4 at 1e-4 s, every equality with solref = (5e-4 s, 1) (a time constant of
# five timesteps; two, the stiffest `refsafe` allows, gives as close a motion but
# rings in the forces) and a constant impedance of 0.9999 (MuJoCo's largest). With
# the files' defaults (Euler, 2 ms, solref 0.02 s) the four-bars end 0.06-0.09 m off.
MUJOCO_TIMESTEP = 1e-4  # s
MUJOCO_SOLREF = (5e-4, 1.0)
MUJOCO_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)
# redundax: the default solver (Dopri8 at these tolerances) and drift control
# (a projection after every step), without the singularity monitor (none of these
# motions passes a singular configuration), 21 saved states. Bricard written two
# ways, side by side, at rtol 1e-9 (25 steps); the other examples, side by side in
# one mechanism, at rtol 1e-7 (82 steps), far inside TOL_MUJOCO.
TIGHT = {"rtol": 1e-9, "atol": 1e-11}
LOOSE = {"rtol": 1e-7, "atol": 1e-9}


def _simulate(model: rx.Model, state: rx.State, tolerances: dict) -> rx.Trajectory:
    return rx.simulate(
        model,
        state,
        T_FINAL,
        saveat=rx.SaveAt(n=N_SAVE),
        monitor=None,
        stepsize_controller=diffrax.PIDController(**tolerances),
    )


def _points(model: rx.Model, trajectory: rx.Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """Markers (T, nm, 3) and centres of mass (T, nb, 3) at the saved instants [m]."""
    markers = jax.vmap(lambda q: rx.equations.marker_positions(model, q))(trajectory.q)
    coms = jax.vmap(lambda q: rx.equations.body_poses(model, q)[0])(trajectory.q)
    return np.asarray(markers), np.asarray(coms)


def _prefixed(mech: rx.Mechanism, prefix: str) -> rx.Mechanism:
    """The mechanism with every body, pair and marker name prefixed (not "ground")."""

    def body(name: str) -> str:
        return name if name == "ground" else prefix + name

    return rx.Mechanism(
        bodies=[dataclasses.replace(b, name=body(b.name)) for b in mech.bodies],
        pairs=[
            dataclasses.replace(
                p, name=prefix + p.name, body_i=body(p.body_i), body_j=body(p.body_j)
            )
            for p in mech.pairs
        ],
        markers=[
            dataclasses.replace(m, name=prefix + m.name, body=body(m.body)) for m in mech.markers
        ],
        gravity=mech.gravity,
    )


def _side_by_side(mechanisms: dict[str, rx.Mechanism], tolerances: dict) -> dict:
    """Markers and centres of mass of each mechanism (by name) from ONE simulation
    of all of them side by side, so that they cost one compilation: they share no
    body (block-diagonal mass matrix and constraints), so each moves as it would
    alone, and only the step sizes are shared (set by the most demanding). Also the
    run's `structure` (names prefixed with "<name>/") and its rigid-body row count."""
    (gravity,) = {m.gravity for m in mechanisms.values()}
    parts = [_prefixed(m, f"{name}/") for name, m in mechanisms.items()]
    union = rx.Mechanism(
        bodies=[b for m in parts for b in m.bodies],
        pairs=[p for m in parts for p in m.pairs],
        markers=[k for m in parts for k in m.markers],
        gravity=gravity,
    )
    model = union.build()
    trajectory = _simulate(model, union.initial_state(), tolerances)
    markers, coms = _points(model, trajectory)
    out, body, marker = {"structure": trajectory.structure, "n_internal": model.n_internal}, 0, 0
    for name, m in mechanisms.items():
        nb, nm = len(m.bodies), len(m.markers)
        out[name] = {"markers": markers[:, marker : marker + nm], "coms": coms[:, body : body + nb]}
        body, marker = body + nb, marker + nm
    return out


@pytest.fixture(scope="module")
def bricard():
    """configs/bricard.toml and configs/mjcf/bricard.xml: their analyses, and the
    motion of both (one simulation side by side, rtol 1e-9)."""
    toml = load_config(CONFIGS / "bricard.toml").mechanism
    mjcf = rx.io.from_mjcf(EXAMPLES["bricard"])
    out = _side_by_side({"toml": toml, "mjcf": mjcf}, TIGHT)
    for label, mech in (("toml", toml), ("mjcf", mjcf)):
        model, state = mech.build(), mech.initial_state()
        out[label]["report"] = rx.analyze_solvability(model, state.q, state.t)
        out[label]["pairs"] = model.pair_names
    return out


@pytest.fixture(scope="module")
def redundax_runs(bricard):
    """Sites and centres of mass of every example, by name: Bricard's from the
    fixture above, the four examples with gravity along −z side by side (rtol 1e-7)."""
    others = {n: rx.io.from_mjcf(path) for n, path in EXAMPLES.items() if n != "bricard"}
    return {"bricard": bricard["mjcf"]} | _side_by_side(others, LOOSE)


def _mujoco(path: Path) -> dict:
    """MuJoCo's motion of `path` from qpos0 at rest: sites and centres of mass at the
    N_SAVE instants [m]."""
    model = mujoco.MjModel.from_xml_path(str(path))
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    model.opt.timestep = MUJOCO_TIMESTEP
    model.eq_solref[:] = MUJOCO_SOLREF
    model.eq_solimp[:] = MUJOCO_SOLIMP
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    per_save = round(T_FINAL / (N_SAVE - 1) / MUJOCO_TIMESTEP)
    sites, coms = [data.site_xpos.copy()], [data.xipos[1:].copy()]
    for _ in range(N_SAVE - 1):
        mujoco.mj_step(model, data, nstep=per_save)
        sites.append(data.site_xpos.copy())
        coms.append(data.xipos[1:].copy())
    return {"markers": np.stack(sites), "coms": np.stack(coms), "time": data.time}


def test_bricard_from_mjcf_is_configs_bricard(bricard):
    """Two balls on J5's axis instead of a hinge: the same rank (59 with the 30
    rigid-body rows) and mobility 1 as configs/bricard.toml, one more redundant
    row (p = 2 against 1), no unique reaction; and the same motion of P3."""
    toml, mjcf = bricard["toml"]["report"], bricard["mjcf"]["report"]
    assert int(mjcf.rank) == int(toml.rank) == 59
    assert int(mjcf.dof) == int(toml.dof) == 1
    assert (int(mjcf.redundancy), int(toml.redundancy)) == (2, 1)
    assert not np.any(np.asarray(mjcf.unique)) and not np.any(np.asarray(toml.unique))
    assert bricard["mjcf"]["pairs"] == ("J0", "J1", "J2", "J3", "J4", "J5a", "J5b")
    p3_toml, p3_mjcf = bricard["toml"]["markers"][:, 0], bricard["mjcf"]["markers"][:, 0]
    np.testing.assert_allclose(p3_mjcf[0], (1.0, -1.0, 0.0), atol=1e-12)
    assert np.ptp(p3_toml[:, 1]) > 0.1  # it moves (y of P3 swings down to -0.866 m)
    np.testing.assert_allclose(p3_mjcf, p3_toml, rtol=0.0, atol=TOL_SAME_BRICARD)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_motion_agrees_with_mujoco(name, redundax_runs):
    """redundax's rigid motion and MuJoCo's with stiff equalities, 2 s from rest: the
    sites and the centres of mass within TOL_MUJOCO at every 0.1 s."""
    ours, theirs = redundax_runs[name], _mujoco(EXAMPLES[name])
    assert theirs["time"] == pytest.approx(T_FINAL)
    np.testing.assert_allclose(theirs["coms"], ours["coms"], rtol=0.0, atol=TOL_MUJOCO)
    np.testing.assert_allclose(theirs["markers"], ours["markers"], rtol=0.0, atol=TOL_MUJOCO)
    if name != "four_bar_weld":  # the weld locks its four-bar: it stays at rest
        assert np.max(np.abs(ours["coms"] - ours["coms"][0])) > 0.01


def test_urdf_loop_closed_by_mjcf():
    """URDF has no loops: four_bar_open.urdf alone is an open chain (a triple
    pendulum); four_bar_urdf.xml attaches it and closes the loop with a connect,
    which MjSpec does the same way from Python (the route rx.io.from_mujoco takes)."""
    open_chain = rx.io.from_mjcf(MJCF / "four_bar_open.urdf")
    assert [type(p).__name__ for p in open_chain.pairs] == ["Revolute3D"] * 3
    closed = rx.io.from_mjcf(MJCF / "four_bar_urdf.xml")
    assert [type(p).__name__ for p in closed.pairs] == ["Revolute3D"] * 3 + ["Spherical"]
    np.testing.assert_allclose(closed.pairs[-1].point, (0.85, 0.0, 0.0), atol=1e-12)
    for a, b in zip(open_chain.bodies, closed.bodies, strict=True):
        np.testing.assert_allclose(a.position, b.position, atol=1e-12)
        np.testing.assert_allclose(a.inertia, b.inertia, atol=1e-12)
    spec = mujoco.MjSpec.from_file(str(MJCF / "four_bar_open.urdf"))
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    closure = spec.add_equality(
        name="D",
        type=mujoco.mjtEq.mjEQ_CONNECT,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        name1="rocker",
        name2="world",
    )
    closure.data[:3] = (0.45, 0.0, -0.6)  # the anchor, in body1's frame
    from_spec = rx.io.from_mujoco(spec.compile())
    np.testing.assert_allclose(
        [p.point for p in from_spec.pairs], [p.point for p in closed.pairs], atol=1e-12
    )
    for a, b in zip(from_spec.bodies, closed.bodies, strict=True):
        np.testing.assert_allclose(a.position, b.position, atol=1e-12)


# Rows counted by hand (joint rows, their rank, mobility; gripper.xml,
# four_bar_urdf.xml, and tests/test_mjcf.py for the two four-bars of
# configs/mjcf): hinges 5 rows, connects 3, welds 6; 6 coordinates of motion a body.
COUNTED = {
    "four_bar_connect": (18, 17, 1),
    "four_bar_weld": (21, 18, 0),
    "gripper": (36, 34, 2),
    "four_bar_urdf": (18, 17, 1),
}


def test_rows_and_verdicts_counted_by_hand(redundax_runs):
    """The side-by-side run's structure against the counts in the files' comments:
    its rank, redundancy and mobility are the sums of the examples' (independent
    mechanisms), and the reaction verdicts along the motion are those of a planar
    loop closed in space: in-plane components unique (the connects' forces along x
    and z, the hinges' transverse forces; the weld's forces along x, z and moment
    about y), out-of-plane ones not (the forces along y), no pair unique as a whole."""
    structure = redundax_runs["structure"]
    joint_rows, rank, mobility = (sum(c[k] for c in COUNTED.values()) for k in range(3))
    assert structure.m - redundax_runs["n_internal"] == joint_rows
    assert int(structure.rank) - redundax_runs["n_internal"] == rank
    assert (int(structure.redundancy), int(structure.dof)) == (joint_rows - rank, mobility)
    assert not np.any(np.asarray(structure.stable_unique))
    unique = np.asarray(structure.stable_row_unique)
    verdicts = {
        name: {label: bool(unique[r]) for label, r in zip(labels, rows, strict=True)}
        for name, labels, rows in zip(
            structure.names, structure.labels, structure.rows, strict=True
        )
    }
    closure = {"force e0": True, "force e1": False, "force e2": True}
    assert verdicts["four_bar_connect/D"] == closure
    assert verdicts["four_bar_urdf/D"] == closure
    assert verdicts["gripper/LC"] == verdicts["gripper/RC"] == closure
    assert verdicts["four_bar_weld/D"] == closure | {
        "moment e0": False,
        "moment e1": True,
        "moment e2": False,
    }
    hinges = [v for v in verdicts.values() if "axial force" in v]
    assert len(hinges) == 3 * 3 + 6
    assert all(v["transverse force e1"] and v["transverse force e2"] for v in hinges)
    assert not any(v["axial force"] for v in hinges)
