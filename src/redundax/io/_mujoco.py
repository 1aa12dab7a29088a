"""MJCF and URDF models through MuJoCo's own compiler: `from_mjcf(path)`,
`from_mujoco(mjmodel)` → a spatial [`redundax.Mechanism`][].

MuJoCo compiles the file (MJCF, or URDF, which it reads too); redundax reads the
compiled model at its reference configuration (`qpos0`, or a keyframe): every body
with mass becomes a `SpatialBody` at its centre of mass, along its principal axes
of inertia; the joint that attaches a body to its parent in MuJoCo's tree becomes a
pair at the joint's global anchor and axis (hinge: `Revolute3D`, slide:
`Prismatic3D`, ball: `Spherical`; no joint: `Weld3D`; a free joint: no pair); each
active `connect` equality closes a loop with a `Spherical` pair at its anchor, each
`weld` with a `Weld3D`; every site on a body becomes a marker (a tracked point).
Whatever cannot be mapped is named, one line each, in a single error; what is
left out of the dynamics (contacts, actuators, joint damping, stiffness, armature
and friction loss) is named in one [`UnmappedElementWarning`][] each: nothing is
dropped silently.

`mujoco` is an optional dependency: `pip install redundax[mjcf]`.
"""

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ModelError
from .._spatial_spec import Prismatic3D, Revolute3D, SpatialBody, Spherical, Weld3D
from .._spec import Marker, Mechanism

EXTRA = "pip install 'redundax[mjcf]'"
"""How to install what reading MJCF and URDF needs."""


class UnmappedElementWarning(UserWarning):
    """An element of a MuJoCo model that redundax leaves out of the dynamics
    (contacts, actuators, joint damping, stiffness, armature, friction loss): the
    message names the elements and what was ignored."""


def _mujoco():
    try:
        import mujoco  # noqa: PLC0415 - optional
    except ImportError:
        raise ModuleNotFoundError(
            f"reading MJCF or URDF needs the 'mujoco' package: {EXTRA}"
        ) from None
    return mujoco


def _velocities(mujoco, model, data, b: int) -> dict:
    """The velocity of body `b`'s centre of mass and its angular velocity, global
    components (MuJoCo centres a body's velocity at its inertial frame)."""
    twist = np.zeros(6)  # [ω; v], global components
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, b, twist, 0)
    return {"velocity": tuple(twist[3:]), "angular_velocity": tuple(twist[:3])}


def from_mjcf(path: str | Path, *, keyframe: int | str | None = None) -> Mechanism:
    """The mechanism of an MJCF (`.xml`) or URDF (`.urdf`) file, compiled by MuJoCo
    (see [`from_mujoco`][redundax.from_mujoco]).

    **Raises:** `ModelError` naming the file and MuJoCo's message when it does not
    compile, or every element that cannot be mapped.
    """
    mujoco = _mujoco()
    path = Path(path)
    try:
        model = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as error:
        said = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
        raise ModelError(f"{path}: MuJoCo cannot compile it: {said}") from None
    try:
        return from_mujoco(model, keyframe=keyframe)
    except ModelError as error:
        raise ModelError(f"{path}: {error}", error.problems, error.source) from None


def from_mujoco(model: Any, *, keyframe: int | str | None = None) -> Mechanism:
    """A spatial [`redundax.Mechanism`][] from a compiled `mujoco.MjModel`, at its
    reference configuration `qpos0` (or the keyframe `keyframe`, by index or name,
    with its velocities).

    Bodies: one per MuJoCo body but the world (named as in the model, else
    `body<k>`), at its centre of mass along its principal axes of inertia. Pairs:
    the joint of each body to its parent (its name, else `joint<k>`), and one pair
    per active `connect` / `weld` equality (its name, else `equality<k>`). Gravity:
    `model.opt.gravity`.

    **Raises:** `ModelError` listing every element that cannot be mapped: a body
    without mass, a body with more than one joint (a joint chain inside one body),
    an equality of another type (joint, tendon, flex, distance) or between sites
    MuJoCo did not resolve to bodies, and tendons (their forces are not modelled).
    """
    mujoco = _mujoco()
    data = mujoco.MjData(model)
    if keyframe is not None:
        key = keyframe if isinstance(keyframe, int) else model.key(keyframe).id
        mujoco.mj_resetDataKeyframe(model, data, key)
    mujoco.mj_forward(model, data)

    def name(kind, k: int, default: str) -> str:
        return mujoco.mj_id2name(model, kind, k) or f"{default}{k}"

    body_names = ["ground"] + [
        name(mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(1, model.nbody)
    ]
    problems: list[str] = []
    bodies = []
    for b in range(1, model.nbody):
        mass = float(model.body_mass[b])
        if mass <= 0.0:
            problems.append(
                f"body {body_names[b]!r}: no mass (give it an <inertial> or a geom with mass)"
            )
            continue
        bodies.append(
            SpatialBody(
                body_names[b],
                mass,
                tuple(float(i) for i in model.body_inertia[b]),
                position=tuple(data.xipos[b]),
                rotation=np.asarray(data.ximat[b]).reshape(3, 3),
                **_velocities(mujoco, model, data, b),
            )
        )

    pairs = []
    kinds = {
        int(mujoco.mjtJoint.mjJNT_HINGE): Revolute3D,
        int(mujoco.mjtJoint.mjJNT_SLIDE): Prismatic3D,
        int(mujoco.mjtJoint.mjJNT_BALL): Spherical,
    }
    for b in range(1, model.nbody):
        count, first = int(model.body_jntnum[b]), int(model.body_jntadr[b])
        parent = body_names[int(model.body_parentid[b])]
        if count == 0:
            pairs.append(
                Weld3D(f"weld_{body_names[b]}", body_names[b], parent, point=tuple(data.xpos[b]))
            )
        elif count > 1:
            problems.append(
                f"body {body_names[b]!r}: {count} joints (MuJoCo chains them inside one body); "
                "give each joint a body of its own"
            )
        else:
            j = first
            kind = int(model.jnt_type[j])
            if kind == mujoco.mjtJoint.mjJNT_FREE:
                continue
            cls = kinds[kind]
            axis = None if cls is Spherical else tuple(data.xaxis[j])
            pairs.append(
                cls(
                    name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint"),
                    body_names[b],
                    parent,
                    point=tuple(data.xanchor[j]),
                    axis=axis,
                )
            )

    for e in range(model.neq):
        label = name(mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
        kind = int(model.eq_type[e])
        if not model.eq_active0[e]:
            continue
        if kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD) or (
            model.eq_objtype[e] != mujoco.mjtObj.mjOBJ_BODY
        ):
            kind_name = mujoco.mjtEq(kind).name.removeprefix("mjEQ_").lower()
            problems.append(
                f"equality {label!r} ({kind_name}): only connect and weld between bodies "
                "are holonomic pairs redundax reads"
            )
            continue
        b1, b2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        # The anchor: in body 1's frame for a connect, in body 2's for a weld (MJCF).
        connect = kind == mujoco.mjtEq.mjEQ_CONNECT
        frame = b1 if connect else b2
        anchor = np.asarray(model.eq_data[e, :3])
        point = tuple(data.xpos[frame] + np.asarray(data.xmat[frame]).reshape(3, 3) @ anchor)
        cls = Spherical if connect else Weld3D
        pairs.append(cls(label, body_names[b1], body_names[b2], point=point))

    markers = [
        Marker(
            name(mujoco.mjtObj.mjOBJ_SITE, s, "site"),
            body_names[int(model.site_bodyid[s])],
            point=tuple(
                np.asarray(data.ximat[b]).reshape(3, 3).T @ (data.site_xpos[s] - data.xipos[b])
            ),
        )
        for s in range(model.nsite)
        if (b := int(model.site_bodyid[s])) > 0 and model.body_mass[b] > 0.0
    ]
    for message in _ignored(mujoco, model, name):
        warnings.warn(message, UnmappedElementWarning, stacklevel=3)

    if model.ntendon:
        problems.append(f"{model.ntendon} tendon(s): not modelled (their forces are left out)")
    if problems:
        raise ModelError(
            "the MuJoCo model has elements redundax cannot map:\n"
            + "\n".join(f"  - {p}" for p in problems),
            problems,
            "mujoco",
        )
    return Mechanism(
        bodies=bodies,
        pairs=pairs,
        markers=markers,
        gravity=tuple(float(g) for g in model.opt.gravity),
    )


def _ignored(mujoco, model, name) -> list[str]:
    """One message per kind of element that the mechanism leaves out of the
    dynamics, naming the elements."""
    messages = []
    contacts = not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    colliding = [
        name(mujoco.mjtObj.mjOBJ_GEOM, g, "geom")
        for g in range(model.ngeom)
        if model.geom_contype[g] or model.geom_conaffinity[g]
    ]
    if contacts and colliding:
        messages.append(
            f"contacts are not modelled: {len(colliding)} geom(s) can collide "
            f"({_listed(colliding)}); their contact forces are ignored "
            '(<option><flag contact="disable"/></option> says so in the file)'
        )
    if model.nu:
        actuators = [name(mujoco.mjtObj.mjOBJ_ACTUATOR, u, "actuator") for u in range(model.nu)]
        messages.append(
            f"actuators are not modelled: {_listed(actuators)}; their forces are ignored "
            "(apply them as force elements or drivers)"
        )
    for field, what in (
        ("dof_damping", "damping"),
        ("jnt_stiffness", "stiffness"),
        ("dof_armature", "armature"),
        ("dof_frictionloss", "friction loss"),
    ):
        values = np.asarray(getattr(model, field))
        owner = model.dof_jntid if field.startswith("dof") else np.arange(model.njnt)
        joints = sorted(
            {name(mujoco.mjtObj.mjOBJ_JOINT, int(j), "joint") for j in owner[values != 0.0]}
        )
        if joints:
            messages.append(f"joint {what} is not modelled: {_listed(joints)}; ignored")
    return messages


def _listed(names: list[str], most: int = 6) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
