"""MJCF through MuJoCo's compiler (`rx.io.from_mjcf`, issue 13, first part): the
four-bar of `configs/mjcf/` closed by `connect` and by `weld`, against the same
mechanism written with redundax's own spatial pairs (the second method) and against
counting rows; every element that cannot be mapped is named."""

import builtins
import json
from pathlib import Path

import diffrax
import jax
import numpy as np
import pytest

import redundax as rx
from redundax.io import load_config

mujoco = pytest.importorskip("mujoco", reason="reading MJCF needs the 'mjcf' extra")

MJCF = Path(__file__).resolve().parents[1] / "configs" / "mjcf"
# The four-bar of configs/mjcf: pivots O (0, 0, 0) and D (1, 0, 0), crank O–A
# (A at (0, 0, 0.4)), coupler A–B (B at (1.2, 0, 0.4)), rocker B–D; hinges along y.
O, A, B, D = (0.0, 0.0, 0.0), (0.0, 0.0, 0.4), (1.2, 0.0, 0.4), (1.0, 0.0, 0.0)
Y = (0.0, 1.0, 0.0)


def _analysis(mech: rx.Mechanism):
    model, state = mech.build(), mech.initial_state()
    rx.equations.check_consistency(model, state)
    return model, rx.analyze_solvability(model, state.q, state.t)


def _written_by_hand(closure) -> rx.Mechanism:
    """The same mechanism with redundax's own pairs, the bodies taken from the import
    (their mass properties are MuJoCo's capsules)."""
    imported = rx.io.from_mjcf(MJCF / "four_bar_connect.xml")
    pairs = [
        rx.joints.Revolute3D("O", "crank", "ground", point=O, axis=Y),
        rx.joints.Revolute3D("A", "coupler", "crank", point=A, axis=Y),
        rx.joints.Revolute3D("B", "rocker", "coupler", point=B, axis=Y),
        closure("D", "rocker", "ground", point=D),
    ]
    return rx.Mechanism(imported.bodies, pairs, gravity=(0.0, 0.0, -9.81))


def test_four_bar_closed_by_connect():
    """Three hinges (5 rows each) and a connect (3 rows) on three bodies (18
    coordinates of motion) with mobility 1: rank 17, p = 1 — the redundancy the
    closure type brings; every reaction not unique (the out-of-plane self-stress
    of the loop loads every joint), as for the same mechanism written by hand."""
    imported = rx.io.from_mjcf(MJCF / "four_bar_connect.xml")
    assert [b.name for b in imported.bodies] == ["crank", "coupler", "rocker"]
    assert [type(p).__name__ for p in imported.pairs] == ["Revolute3D"] * 3 + ["Spherical"]
    np.testing.assert_allclose(imported.pairs[-1].point, D, atol=1e-12)  # body1's anchor
    np.testing.assert_allclose(imported.bodies[0].position, (0.0, 0.0, 0.2), atol=1e-12)
    model, report = _analysis(imported)
    internal = model.n_internal  # the rigid-body rows of natural coordinates
    assert model.n_constraints - internal == 18
    assert (int(report.rank) - internal, int(report.redundancy), int(report.dof)) == (17, 1, 1)
    hand_model, hand = _analysis(_written_by_hand(rx.joints.Spherical))
    assert hand_model.pair_names == model.pair_names
    assert int(hand.rank) == int(report.rank)
    np.testing.assert_array_equal(hand.unique, report.unique)
    np.testing.assert_array_equal(hand.row_unique, report.row_unique)
    assert not np.any(report.unique)


def test_four_bar_closed_by_weld_is_locked():
    """A weld at the rocker's pivot (6 rows) fixes the rocker: 21 rows, rank 18,
    p = 3 and no mobility left — the format changed the mechanism, not only its
    redundancy (as the same weld written by hand)."""
    imported = rx.io.from_mjcf(MJCF / "four_bar_weld.xml")
    weld = imported.pairs[-1]  # its anchor is in body2's frame (the world): at D
    assert (type(weld).__name__, weld.body_i, weld.body_j) == ("Weld3D", "rocker", "ground")
    np.testing.assert_allclose(weld.point, D, atol=1e-12)
    model, report = _analysis(imported)
    internal = model.n_internal
    assert model.n_constraints - internal == 21
    assert (int(report.rank) - internal, int(report.redundancy), int(report.dof)) == (18, 3, 0)
    _, hand = _analysis(_written_by_hand(rx.joints.Weld3D))
    assert int(hand.rank) == int(report.rank) and int(hand.dof) == 0


def test_elements_that_cannot_be_mapped_are_named(tmp_path):
    text = """<mujoco>
      <worldbody>
        <body name="arm"><joint name="j1" axis="0 1 0"/><joint name="j2" axis="1 0 0"/>
          <geom type="sphere" size="0.1" mass="1"/><site name="tip" pos="0.1 0 0"/></body>
        <body name="plate" pos="1 0 0"><joint name="s" type="slide" axis="1 0 0" damping="2"/>
          <geom type="box" size="0.1 0.1 0.1" mass="1"/><site name="corner" pos="0.1 0 0"/></body>
      </worldbody>
      <tendon><spatial name="cable"><site site="tip"/><site site="corner"/></spatial></tendon>
      <equality><joint name="coupling" joint1="j1" joint2="j2"/></equality>
      <actuator><motor name="push" joint="s"/></actuator>
    </mujoco>"""
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with (
        pytest.raises(rx.ModelError) as error,
        pytest.warns(rx.io.UnmappedElementWarning) as ignored,
    ):
        rx.io.from_mjcf(path)
    assert sorted(str(w.message).split(":")[0] for w in ignored) == [
        "actuators are not modelled",
        "contacts are not modelled",
        "joint damping is not modelled",
    ]
    assert [m for w in ignored if "'push'" in (m := str(w.message))]
    assert [m for w in ignored if "damping" in (m := str(w.message)) and "'s'" in m]
    message = str(error.value)
    assert message.startswith(f"{path}: the MuJoCo model has elements redundax cannot map:")
    assert "body 'arm': 2 joints" in message
    assert "equality 'coupling' (joint)" in message
    assert "1 tendon(s)" in message
    assert len(error.value.problems) == 3


def test_a_file_mujoco_cannot_compile_names_it(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text("<mujoco><worldbody><body><joint type='twist'/></body></worldbody></mujoco>")
    with pytest.raises(rx.ModelError, match=f"^{path}: MuJoCo cannot compile it: "):
        rx.io.from_mjcf(path)


def test_without_mujoco_the_message_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_mujoco(name, *args, **kwargs):
        if name == "mujoco":
            raise ImportError("No module named 'mujoco'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mujoco)
    with pytest.raises(ModuleNotFoundError, match=r"needs the 'mujoco' package: pip install"):
        rx.io.from_mjcf(MJCF / "four_bar_connect.xml")


def test_a_keyframe_gives_the_pose_and_the_velocities(tmp_path):
    """A rod hinged at the origin about y, at the keyframe's angle 0.3 rad and rate
    2 rad/s: its centre of mass at R_y(0.3) (0.5, 0, 0), moving at ω × r (closed
    form), a state consistent with the hinge; by name or by index alike."""
    path = tmp_path / "rod.xml"
    path.write_text(
        """<mujoco><option><flag contact="disable"/></option>
        <worldbody><body name="rod"><joint name="O" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02" mass="1"/>
        <site name="tip" pos="1 0 0"/></body></worldbody>
        <keyframe><key name="spin" qpos="0.3" qvel="2.0"/></keyframe></mujoco>"""
    )
    c, s = np.cos(0.3), np.sin(0.3)
    r = np.array([0.5 * c, 0.0, -0.5 * s])  # a rotation about +y takes x to (c, 0, -s)
    w = np.array([0.0, 2.0, 0.0])
    for key in ("spin", 0):
        (rod,) = rx.io.from_mjcf(path, keyframe=key).bodies
        np.testing.assert_allclose(rod.position, r, atol=1e-12)
        np.testing.assert_allclose(rod.angular_velocity, w, atol=1e-12)
        np.testing.assert_allclose(rod.velocity, np.cross(w, r), atol=1e-12)
    mech = rx.io.from_mjcf(path, keyframe="spin")
    model = mech.build()
    rx.equations.check_consistency(model, mech.initial_state())
    # The site at the rod's end is a marker, at the end of the rod.
    np.testing.assert_allclose(
        rx.equations.marker_positions(model, mech.initial_state().q)[0], 2 * r, atol=1e-12
    )


def _closures(name: str):
    mech = rx.io.from_mjcf(MJCF / name)
    model, state = mech.build(), mech.initial_state()
    return model, state, rx.monitors.closure_report(model, state.q, state.t)


def _rank(C) -> int:
    """The rank by the SVD (a second method beside the library's pivoted QR)."""
    return int(np.linalg.matrix_rank(np.asarray(C), tol=1e-9 * np.linalg.norm(C, 2)))


def test_closure_report_of_the_four_bar_closed_by_connect():
    """The planar loop's self-stress is out of its plane: the minimal closure drops
    the connect's force along the hinges' axis y (e1 of the global frame); what is
    kept has the rank of all rows (SVD) and no dependent row, and rx.methods.eliminate takes
    it (it refuses rows that change the motion). No MuJoCo type change does it: a
    ball for any hinge gives p = 0 with 16 rows on 18 coordinates — mobility 2."""
    model, state, report = _closures("four_bar_connect.xml")
    assert (report.redundancy, report.form_redundancy, report.mechanism_redundancy) == (1, 0, 1)
    assert report.tree == ("O", "A", "B")
    assert [(c.pairs, c.joint_rank, c.redundant_rows) for c in report.closures] == [(("D",), 3, 1)]
    assert report.drop == (("D", "force e1", 17),)
    C = np.asarray(rx.equations.constraint_matrix(model, state.q))
    keep = [k for k in range(C.shape[0]) if k + 1 != 17]
    assert _rank(C[keep]) == _rank(C) == len(keep)
    rx.methods.eliminate(model, state.q, rows=(17,))
    assert {(c.pair, c.redundancy, c.dof, c.keeps_motion) for c in report.changes} == {
        (j, 0, 2, False) for j in "OAB"
    }
    assert "no change of one MuJoCo joint or equality type does it" in str(report)


def test_closure_report_of_the_four_bar_closed_by_weld():
    """The weld adds the three out-of-plane rows of a planar loop (force along y,
    moments about x and z) and locks the rocker: with a connect at its anchor the
    same rows give the connect model's p = 1 and mobility 1."""
    _, _, report = _closures("four_bar_weld.xml")
    assert (report.redundancy, report.form_redundancy, report.dof) == (3, 0, 0)
    assert [c.locks for c in report.closures] == [1]
    assert [(p, label) for p, label, _ in report.drop] == [
        ("D", "force e1"),
        ("D", "moment e0"),
        ("D", "moment e2"),
    ]
    connect_model, connect_state, _ = _closures("four_bar_connect.xml")
    connect = rx.analyze_solvability(connect_model, connect_state.q)
    (weld_to_connect,) = [c for c in report.changes if c.pair == "D"]
    assert (weld_to_connect.redundancy, weld_to_connect.dof) == (
        int(connect.redundancy),
        int(connect.dof),
    )
    assert "it locks 1 degree(s) of freedom" in str(report)


def test_two_connects_on_one_axis_are_a_hinge_and_one_row_more(tmp_path):
    """A door on a free joint held by two connects on the z axis: together a hinge
    (5 relative motions) with one row dependent among themselves — the closures'
    form, not the mechanism; the minimal closure drops one of the two forces along
    the axis, e2 = z."""
    path = tmp_path / "door.xml"
    path.write_text(
        """<mujoco><option><flag contact="disable"/></option><worldbody>
        <body name="door" pos="0.4 0 0"><freejoint/>
          <geom type="box" size="0.4 0.02 0.5" mass="10"/></body></worldbody>
        <equality><connect name="upper" body1="door" anchor="-0.4 0 0.5"/>
          <connect name="lower" body1="door" anchor="-0.4 0 -0.5"/></equality></mujoco>"""
    )
    mech = rx.io.from_mjcf(path)
    model, state = mech.build(), mech.initial_state()
    report = rx.monitors.closure_report(model, state.q)
    assert (report.redundancy, report.form_redundancy, report.mechanism_redundancy) == (1, 1, 0)
    ((closure),) = report.closures
    assert (closure.pairs, closure.joint_rank, closure.form_redundancy) == (
        ("upper", "lower"),
        5,
        1,
    )
    ((pair, label, _),) = report.drop
    assert label == "force e2" and pair in ("upper", "lower")
    assert report.dof == 1  # the door turns about z


def test_analyze_reads_mjcf_files(capsys, tmp_path):
    """`redundax analyze FILE.xml --json` has the closure report; a file MuJoCo
    cannot compile is one line with MuJoCo's own message, exit 2; what the import
    leaves out is a `redundax: warning:` line."""
    from redundax.cli import main

    assert main(["analyze", str(MJCF / "four_bar_connect.xml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["redundancy"], out["dof"]) == (1, 1)
    assert out["closures"]["mechanism_redundancy"] == 1
    assert out["closures"]["drop"] == [{"pair": "D", "component": "force e1", "row": 17}]

    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body><joint type='twist'/></body></worldbody></mujoco>")
    assert main(["analyze", str(broken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MuJoCo cannot compile it: XML Error: invalid keyword" in err[0]

    touching = tmp_path / "touching.xml"
    touching.write_text(
        (MJCF / "four_bar_connect.xml").read_text().replace('<flag contact="disable"/>', "")
    )
    assert main(["analyze", str(touching)]) == 0
    err = capsys.readouterr().err
    assert "redundax: warning: contacts are not modelled: 3 geom(s) can collide" in err


def test_hinge_springs_and_a_servo_move_as_in_mujoco(tmp_path):
    """A rod on a hinge with MuJoCo's joint stiffness (spring reference 0.1 rad),
    damping and a position servo at zero control (kp, kv, gear 2), released at a
    keyframe under gravity: the import maps the three torques to rotational
    spring-dampers, and the rod's tip follows MuJoCo's own simulation of the file (a
    tree: no soft constraint; RK4 at 0.1 ms) to 1e-7 m over 1 s."""
    path = tmp_path / "servo.xml"
    path.write_text(
        """<mujoco><option gravity="0 0 -9.81" integrator="RK4" timestep="1e-4">
        <flag contact="disable"/></option>
        <worldbody><body name="rod"><joint name="O" axis="0 1 0" stiffness="3"
          springref="0.1" damping="0.4"/>
          <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02" mass="1"/>
          <site name="tip" pos="1 0 0"/></body></worldbody>
        <actuator><position name="servo" joint="O" kp="2" kv="0.3" gear="2"/></actuator>
        <keyframe><key name="start" qpos="0.6" qvel="-1"/></keyframe></mujoco>"""
    )
    mech = rx.io.from_mjcf(path, keyframe="start")
    assert [type(f).__name__ for f in mech.forces] == ["RotationalSpringDamper"] * 2
    model, state = mech.build(), mech.initial_state()
    ts = np.linspace(0.0, 1.0, 11)
    traj = rx.simulate(
        model,
        state,
        1.0,
        saveat=rx.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    tips = np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q))(traj.q))[:, 0]

    mj_model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj_model)
    mujoco.mj_resetDataKeyframe(mj_model, data, 0)
    expected = []
    for t in ts:
        while data.time < t - 1e-9:
            mujoco.mj_step(mj_model, data)
        mujoco.mj_forward(mj_model, data)
        expected.append(data.site_xpos[0].copy())
    np.testing.assert_allclose(tips, np.asarray(expected), atol=1e-7)


def test_bricard_closed_by_two_connects_has_the_redundancy_of_bricard():
    """configs/mjcf/bricard.xml closes J5 by two connects on its axis (MuJoCo's
    idiom for a hinge): p = 2, of which the closure's form brings 1 (6 rows, a
    joint of rank 5) and the mechanism the other — Bricard's p = 1 of
    configs/bricard.toml, where J5 is a revolute pair."""
    _, _, report = _closures("bricard.xml")
    toml = load_config(Path(__file__).resolve().parents[1] / "configs" / "bricard.toml")
    reference = rx.analyze_solvability(toml.model, toml.state.q)
    assert (report.redundancy, report.form_redundancy) == (2, 1)
    assert report.mechanism_redundancy == int(reference.redundancy) == 1
    assert report.rank == int(reference.rank) and report.dof == int(reference.dof) == 1
    ((closure),) = report.closures
    assert (closure.pairs, closure.joint_rank) == (("J5a", "J5b"), 5)


ROD = """<mujoco><option gravity="0 0 -9.81" {option}><flag contact="disable" {flags}/></option>
  <worldbody><body name="rod" {body}><joint name="O" axis="0 1 0" {joint}/>
    <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02" mass="1"/>
    <site name="tip" pos="1 0 0"/></body></worldbody>{extra}</mujoco>"""
SERVO = '<actuator><position name="servo" joint="O" kp="2" kv="0.3"/></actuator>'


def _rod(tmp_path, keyframe=None, **parts) -> rx.Mechanism:
    """A rod on a hinge (MJCF), with the given pieces of the file."""
    fields = {"option": "", "flags": "", "body": "", "joint": "", "extra": ""}
    path = tmp_path / "rod.xml"
    path.write_text(ROD.format(**{**fields, **parts}))
    return rx.io.from_mjcf(path, keyframe=keyframe)


def test_switches_the_file_turns_off_are_honoured(tmp_path, recwarn):
    """`<flag gravity|spring|damper|actuation|equality="disable"/>`: MuJoCo leaves
    those forces or constraints out, and so does the import (with no warning:
    nothing is lost)."""
    joint = 'stiffness="3" damping="0.4"'
    assert _rod(tmp_path, flags='gravity="disable"').gravity == (0.0, 0.0, 0.0)
    assert len(_rod(tmp_path, joint=joint, extra=SERVO).forces) == 2  # when on
    off = 'spring="disable" damper="disable" actuation="disable"'
    assert len(_rod(tmp_path, joint=joint, flags=off, extra=SERVO).forces) == 0
    assert not [w for w in recwarn if issubclass(w.category, rx.io.UnmappedElementWarning)]
    closed = (MJCF / "four_bar_connect.xml").read_text()
    assert closed.count('<flag contact="disable"/>') == 1
    path = tmp_path / "open.xml"
    path.write_text(
        closed.replace('<flag contact="disable"/>', '<flag contact="disable" equality="disable"/>')
    )
    assert "D" in [p.name for p in rx.io.from_mjcf(MJCF / "four_bar_connect.xml").pairs]
    assert "D" not in [p.name for p in rx.io.from_mjcf(path).pairs]


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"joint": 'limited="true" range="-0.5 0.5"'}, "joint limits are not modelled: 'O'"),
        ({"body": 'gravcomp="1"'}, r"gravity compensation \(gravcomp\) is not modelled: 'rod'"),
        ({"option": 'density="1000" viscosity="1"'}, "fluid forces are not modelled"),
        (
            {"joint": 'actuatorfrcrange="-1 1"', "extra": SERVO},
            "actuators are not modelled: 'servo'",
        ),
    ],
)
def test_what_the_import_leaves_out_is_named(tmp_path, parts, message):
    """Each of these changes MuJoCo's motion (checked against MuJoCo's own
    simulation while building this): none may be dropped without a warning."""
    with pytest.warns(rx.io.UnmappedElementWarning, match=message):
        _rod(tmp_path, **parts)


def test_a_servo_is_mapped_at_the_control_of_the_keyframe_only_when_it_is_zero(tmp_path):
    """A keyframe's `ctrl` drives the servo elsewhere than zero control: it is not
    mapped (and named), and a keyframe with zero control keeps the mapping."""
    keys = '<keyframe><key name="hold" qpos="0" ctrl="-1"/><key name="rest" qpos="0"/></keyframe>'
    with pytest.warns(rx.io.UnmappedElementWarning, match="actuators are not modelled: 'servo'"):
        assert len(_rod(tmp_path, keyframe="hold", extra=SERVO + keys).forces) == 0
    assert len(_rod(tmp_path, keyframe="rest", extra=SERVO + keys).forces) == 1


def test_a_loop_that_does_not_close_where_it_is_imported_is_refused(tmp_path):
    """MuJoCo's own equality residual decides: a weld whose `relpose` the pose does
    not meet, and a connect opened by a keyframe, are refused naming the equality;
    an unknown keyframe is refused naming the keyframes."""
    weld = (
        '<equality><weld name="W" body1="rod" relpose="0 0 0 0.7071068 0 0.7071068 0"/></equality>'
    )
    with pytest.raises(rx.ModelError, match="equality 'W': not satisfied at the configuration"):
        _rod(tmp_path, extra=weld)
    closed = (MJCF / "four_bar_connect.xml").read_text()
    path = tmp_path / "keyed.xml"
    path.write_text(
        closed.replace(
            "</mujoco>", '<keyframe><key name="open" qpos="0.3 0 0"/></keyframe></mujoco>'
        )
    )
    with pytest.raises(rx.ModelError, match="equality 'D': not satisfied"):
        rx.io.from_mjcf(path, keyframe="open")
    for key in (7, "nokey"):
        with pytest.raises(rx.ModelError, match="the model has 1 keyframe"):
            rx.io.from_mjcf(path, keyframe=key)
