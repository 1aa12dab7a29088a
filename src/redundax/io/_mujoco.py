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
Whatever cannot be mapped is named, one line each, in a single error (an equality
that MuJoCo's own residual says is not satisfied at the configuration imported
too); what is left out of the dynamics (contacts, joint limits, actuators, joint
damping, stiffness and their polynomial terms, armature, friction loss, gravity
compensation, fluid forces) is named in one
[`UnmappedElementWarning`][redundax.io.UnmappedElementWarning] each, and
the file's switches that turn gravity, equalities, springs, dampers or actuation
off are honoured: nothing is dropped silently. A hinge's stiffness and damping,
and a servo on a hinge at zero control, are torques a `RotationalSpringDamper`
reproduces exactly: they are mapped.

`mujoco` is an optional dependency: `pip install redundax[mjcf]`.
"""

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ModelError
from .._force_specs import RotationalSpringDamper
from .._spatial_body import SpatialBody
from .._spec import Marker, Mechanism
from ..joints._spatial import Prismatic3D, Revolute3D, Spherical, Weld3D

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
    (see [`from_mujoco`][redundax.io.from_mujoco]).

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
    problems: list[str] = []
    if keyframe is not None:
        key = _keyframe(mujoco, model, keyframe)
        mujoco.mj_resetDataKeyframe(model, data, key)
    mujoco.mj_forward(model, data)
    disabled = _disabled(mujoco, model)

    def name(kind, k: int, default: str) -> str:
        return mujoco.mj_id2name(model, kind, k) or f"{default}{k}"

    body_names = ["ground"] + [
        name(mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(1, model.nbody)
    ]
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
    hinges: dict[int, tuple[str, str, tuple]] = {}  # joint → (body, parent, global axis)
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
            if cls is Revolute3D:
                hinges[j] = (body_names[b], parent, axis)
            pairs.append(
                cls(
                    name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint"),
                    body_names[b],
                    parent,
                    point=tuple(data.xanchor[j]),
                    axis=axis,
                )
            )

    residuals = _equality_residuals(mujoco, model, data)
    for e in range(model.neq if "equality" not in disabled else 0):
        label = name(mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
        kind = int(model.eq_type[e])
        if not model.eq_active0[e]:
            continue
        if residuals.get(e, 0.0) > CLOSURE_TOL:
            problems.append(
                f"equality {label!r}: not satisfied at the configuration imported (MuJoCo's "
                f"residual {residuals[e]:.3g} > {CLOSURE_TOL:g}: its anchors, or a weld's "
                "relpose, do not meet there); assemble the loop in qpos0 or the keyframe"
            )
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
    forces, mapped = _springs(mujoco, model, data, hinges, disabled)
    for message in _ignored(mujoco, model, name, mapped, disabled):
        warnings.warn(message, UnmappedElementWarning, stacklevel=3)

    if getattr(model, "nflex", 0):
        problems.append(f"{model.nflex} flex(es): deformable bodies are not modelled")
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
        forces=forces,
        gravity=(0.0, 0.0, 0.0)
        if "gravity" in disabled
        else tuple(float(g) for g in model.opt.gravity),
    )


CLOSURE_TOL = 1e-6
"""The largest residual of MuJoCo's own equality constraint (`efc_pos`, [m, rad])
accepted at the configuration imported: a loop must be closed there."""


def _keyframe(mujoco, model, keyframe: int | str) -> int:
    """The index of `keyframe` (an index or a name), refused naming the keyframes."""
    names = [
        mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_KEY, k) or str(k) for k in range(model.nkey)
    ]
    if isinstance(keyframe, str):
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, keyframe)
    else:
        key = int(keyframe) if 0 <= int(keyframe) < model.nkey else -1
    if key < 0:
        raise ModelError(
            f"keyframe {keyframe!r}: the model has {model.nkey} keyframe(s)"
            + (f": {', '.join(map(repr, names))} (indices 0..{model.nkey - 1})" if names else ""),
            source="mujoco",
        )
    return key


def _disabled(mujoco, model) -> set[str]:
    """The global switches of `<option><flag .../>` the file turns off, of those that
    change the dynamics redundax maps (the import honours them)."""
    flags = int(model.opt.disableflags)
    out = set()
    for bit, what in (
        ("mjDSBL_GRAVITY", "gravity"),
        ("mjDSBL_EQUALITY", "equality"),
        ("mjDSBL_SPRING", "spring"),
        ("mjDSBL_DAMPER", "damper"),
        ("mjDSBL_PASSIVE", "passive"),  # older MuJoCo: springs and dampers together
        ("mjDSBL_ACTUATION", "actuation"),
        ("mjDSBL_CONSTRAINT", "equality"),
    ):
        value = getattr(mujoco.mjtDisableBit, bit, None)
        if value is not None and flags & int(value):
            out.add(what)
    if "passive" in out:
        out |= {"spring", "damper"}
    return out


def _equality_residuals(mujoco, model, data) -> dict[int, float]:
    """Per active equality, the largest |residual| of its rows in MuJoCo's constraint
    data at the current configuration (its own definition of the equality: both
    anchors of a connect, a weld's relpose)."""
    out: dict[int, float] = {}
    for i in range(int(data.nefc)):
        if int(data.efc_type[i]) == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY):
            e = int(data.efc_id[i])
            out[e] = max(out.get(e, 0.0), abs(float(data.efc_pos[i])))
    return out


def _springs(mujoco, model, data, hinges, disabled=frozenset()) -> tuple[list, dict[str, set[int]]]:
    """The torques of hinges that a `RotationalSpringDamper` about the hinge's axis
    reproduces exactly, and what was mapped (`{"joints": ..., "actuators": ...}`):

    - a hinge's passive torque −k (q − q_spring) − c q̇ (`stiffness`, `springref`,
      `damping`);
    - an actuator on a hinge without activation dynamics, with a fixed gain and an
      affine or no bias, at zero control (MuJoCo's `ctrl` until someone sets it):
      torque g (b₀ + b₁ g q + b₂ g q̇) (`position` and `velocity` servos are of this
      kind; a `motor` gives none) — when it is a spring and a damper (b₁, b₂ ≤ 0)
      and zero control is within a limited `ctrlrange` and no force limit applies.

    q is the hinge angle, θ of the spring-damper the rotation since the imported
    configuration q₁: q = θ + q₁. Switches the file turns off (`disabled`: springs,
    dampers, actuation) contribute nothing, as in MuJoCo; the control is the one of
    the configuration imported (a keyframe's `ctrl`): an actuator with a non-zero
    control, or on a joint whose actuator force is limited (`actuatorfrcrange`), is
    not mapped."""
    forces = []
    mapped: dict[str, set[int]] = {"joints": set(), "actuators": set()}
    for j, (body, parent, axis) in hinges.items():
        k, c = float(model.jnt_stiffness[j]), float(model.dof_damping[model.jnt_dofadr[j]])
        k = 0.0 if "spring" in disabled else k
        c = 0.0 if "damper" in disabled else c
        if k == 0.0 and c == 0.0:
            continue
        adr = int(model.jnt_qposadr[j])
        q1, q_spring = float(data.qpos[adr]), float(model.qpos_spring[adr])
        forces.append(
            RotationalSpringDamper(
                body, parent, stiffness=k, damping=c, free_angle=q_spring - q1, axis=axis
            )
        )
        mapped["joints"].add(j)
    limited = np.asarray(getattr(model, "jnt_actfrclimited", np.zeros(model.njnt)), dtype=bool)
    for u in range(model.nu):
        if "actuation" in disabled:  # no actuator force at all: exact to leave them out
            mapped["actuators"].add(u)
            continue
        j = int(model.actuator_trnid[u, 0])
        gain, bias = model.actuator_gainprm[u], model.actuator_biasprm[u]
        g = float(model.actuator_gear[u, 0])
        simple = (
            int(model.actuator_trntype[u]) == mujoco.mjtTrn.mjTRN_JOINT
            and j in hinges
            and int(model.actuator_dyntype[u]) == mujoco.mjtDyn.mjDYN_NONE
            and int(model.actuator_gaintype[u]) == mujoco.mjtGain.mjGAIN_FIXED
            and int(model.actuator_biastype[u])
            in (mujoco.mjtBias.mjBIAS_NONE, mujoco.mjtBias.mjBIAS_AFFINE)
            and not model.actuator_forcelimited[u]
            and not limited[j]
            and float(data.ctrl[u]) == 0.0
            and (
                not model.actuator_ctrllimited[u]
                or model.actuator_ctrlrange[u, 0] <= 0.0 <= model.actuator_ctrlrange[u, 1]
            )
        )
        del gain  # the gain multiplies the control, zero
        if not simple:
            continue
        affine = int(model.actuator_biastype[u]) == mujoco.mjtBias.mjBIAS_AFFINE
        b0, b1, b2 = (float(x) for x in bias[:3]) if affine else (0.0, 0.0, 0.0)
        k, c = -g * g * b1, -g * g * b2
        if k < 0.0 or c < 0.0:
            continue
        mapped["actuators"].add(u)
        if k == 0.0 and c == 0.0 and b0 == 0.0:
            continue  # a motor at zero control: no torque
        body, parent, axis = hinges[j]
        q1 = float(data.qpos[int(model.jnt_qposadr[j])])
        forces.append(
            RotationalSpringDamper(
                body, parent, stiffness=k, damping=c, free_angle=-q1, preload=-g * b0, axis=axis
            )
        )
    return forces, mapped


def _ignored(mujoco, model, name, mapped, disabled=frozenset()) -> list[str]:
    """One message per kind of element that the mechanism leaves out of the
    dynamics, naming the elements (`mapped`: what `_springs` took; `disabled`:
    the switches the file turns off, whose elements MuJoCo ignores too)."""
    messages = []
    joint = lambda j: name(mujoco.mjtObj.mjOBJ_JOINT, int(j), "joint")  # noqa: E731
    flags = int(model.opt.disableflags)
    limits_off = flags & int(getattr(mujoco.mjtDisableBit, "mjDSBL_LIMIT", 0)) or (
        flags & int(getattr(mujoco.mjtDisableBit, "mjDSBL_CONSTRAINT", 0))
    )
    limited = [joint(j) for j in range(model.njnt) if model.jnt_limited[j]]
    if limited and not limits_off:
        messages.append(
            f"joint limits are not modelled: {_listed(limited)}; the joints may move past "
            "their ranges"
        )
    for field, what in (
        ("jnt_stiffnesspoly", "nonlinear stiffness"),
        ("dof_dampingpoly", "nonlinear damping"),
    ):
        values = getattr(model, field, None)
        if values is None or (what.endswith("stiffness") and "spring" in disabled):
            continue
        if what.endswith("damping") and "damper" in disabled:
            continue
        owner = model.dof_jntid if field.startswith("dof") else np.arange(model.njnt)
        rows = np.flatnonzero(np.any(np.asarray(values).reshape(len(owner), -1) != 0.0, axis=1))
        if rows.size:
            joints = sorted({joint(owner[r]) for r in rows})
            messages.append(
                f"joint {what} (MuJoCo's polynomial terms) is not modelled: {_listed(joints)}; "
                "only the linear part is mapped"
            )
    gravcomp = np.asarray(getattr(model, "body_gravcomp", np.zeros(model.nbody)))
    compensated = [
        name(mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(1, model.nbody) if gravcomp[b]
    ]
    if compensated and "gravity" not in disabled:
        messages.append(
            f"gravity compensation (gravcomp) is not modelled: {_listed(compensated)}; "
            "these bodies feel the full gravity"
        )
    if model.opt.density > 0.0 or model.opt.viscosity > 0.0:
        messages.append(
            f"fluid forces are not modelled (density {model.opt.density:g}, viscosity "
            f"{model.opt.viscosity:g}, wind {tuple(float(w) for w in model.opt.wind)}); ignored"
        )
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
    actuators = [
        name(mujoco.mjtObj.mjOBJ_ACTUATOR, u, "actuator")
        for u in range(model.nu)
        if u not in mapped["actuators"]
    ]
    if actuators:
        messages.append(
            f"actuators are not modelled: {_listed(actuators)}; their forces are ignored "
            "(redundax maps only a servo on a hinge at zero control in the configuration "
            "imported, with neither a force limit nor a joint actuatorfrcrange; apply the "
            "others as force elements or drivers)"
        )
    hinges = mapped["joints"]
    for field, what in (
        ("dof_damping", "damping"),
        ("jnt_stiffness", "stiffness"),
        ("dof_armature", "armature"),
        ("dof_frictionloss", "friction loss"),
    ):
        values = np.asarray(getattr(model, field))
        owner = model.dof_jntid if field.startswith("dof") else np.arange(model.njnt)
        if what in ("damping", "stiffness"):  # mapped on hinges
            values = np.where(np.isin(owner, list(hinges)), 0.0, values)
        if (what == "stiffness" and "spring" in disabled) or (
            what == "damping" and "damper" in disabled
        ):
            continue  # switched off in the file: MuJoCo ignores them too
        joints = sorted(
            {name(mujoco.mjtObj.mjOBJ_JOINT, int(j), "joint") for j in owner[values != 0.0]}
        )
        if joints:
            messages.append(f"joint {what} is not modelled: {_listed(joints)}; ignored")
    return messages


def _listed(names: list[str], most: int = 6) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
