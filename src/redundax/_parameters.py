"""Parameter addresses: the numbers of a model a sweep or a design study can change.

One module for both [`redundax.sweep`][] (which re-exports its public names and
describes the addresses in its docstring) and [`redundax.optimize`][] (whose design
variables move parameters by address).
"""

import dataclasses
import difflib
import enum
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Float

from ._model import Model, State
from .motions import Constant, Polynomial, SmoothSteps

_AXES = ("x", "y", "z")
_PAIR_FIELDS = {
    "point_i": ("s_i", "m"),
    "point_j": ("s_j", "m"),
    "point": ("point", "m"),
    "normal": ("normal", "1"),
    "direction": ("direction", "1"),
    "angle": ("angle", "rad"),
}
"""Configuration key → (field of the constraint member, unit)."""
_UNIT_VECTORS = ("normal", "direction")
_AXIS_KINDS = (
    "revolute-3d",
    "prismatic-3d",
    "cylindrical",
    "revolute-driver-3d",
    "translational-driver-3d",
)
"""Spatial pairs whose joint frame's e₀ is their axis: `pairs.<PAIR>.axis_i|axis_j`."""
_FRAMES = {"axis_i": "frame_i", "axis_j": "frame_j"}
_LOAD_FIELDS = {"force": ("forces", "N"), "point": ("points", "m"), "torque": ("torques", "N m")}


# ----------------------------------------------------------------------- addresses
class Rule(enum.Enum):
    """How a parameter's value changes its leaf."""

    SET = "set"
    """The indexed entry becomes the value."""
    AMPLITUDE = "amplitude"
    """The indexed row v becomes v₀ + (value / reference)(v − v₀)."""
    SCALE = "scale"
    """The whole leaf is multiplied by value / reference."""


@dataclasses.dataclass(frozen=True)
class Target:
    """Where one named parameter lives in a (`Model`, `State`) pair.

    **Attributes:**

    - `name`: the address, e.g. `"bodies.platform.mass"`.
    - `leaf`: the path of the leaf: `("bodies", field)`, `("holonomic",
      "pfaffian" or "forces", group, field, ...)`, `("gravity",)`, `("loads",
      field)` or `("initial",)` (the initial velocities q̇⁰).
    - `index`: the entry of the leaf (the member of a stacked group first).
    - `rule`: how the value is applied ([`Rule`][redundax.sweep.Rule]).
    - `unit`: the value's unit, for reports.
    - `nominal`: the value of the nominal model.
    - `reference`: the nominal amplitude or speed (the rules `AMPLITUDE`, `SCALE`).
    - `normalise`: renormalise the indexed vector (`index[:-1]`) after setting.
    """

    name: str
    leaf: tuple[str | int, ...]
    index: tuple[int, ...]
    rule: Rule
    unit: str
    nominal: float
    reference: float = 1.0
    normalise: bool = False


def _get(model: Model, leaf: tuple[str | int, ...]) -> Any:
    head = leaf[0]
    if head == "gravity":
        return model.gravity
    if head in ("holonomic", "pfaffian", "forces"):
        node, fields = getattr(model, str(head))[int(leaf[1])], leaf[2:]
    else:
        node, fields = getattr(model, str(head)), leaf[1:]
    for field in fields:
        node = getattr(node, str(field))
    return node


def _members(model: Model) -> dict[int, tuple[str, int, int, Any]]:
    """First row of C of every stacked member → (section, group, member, group)."""
    out = {}
    for section, groups, offset in (
        ("holonomic", model.holonomic, 0),
        ("pfaffian", model.pfaffian, model.n_holonomic),
    ):
        for g, group in enumerate(groups):
            rows = np.asarray(group.rows)
            for k in range(rows.shape[0]):
                out[int(rows[k, 0]) + offset] = (section, g, k, group)
    return out


def _vector_targets(prefix, leaf, index, values, unit, normalise=False) -> list[Target]:
    return [
        Target(f"{prefix}.{_AXES[c]}", leaf, (*index, c), Rule.SET, unit, float(v), 1.0, normalise)
        for c, v in enumerate(values)
    ]


def _motion_targets(prefix, leaf, k, motion, unit) -> list[Target]:
    out = []
    if isinstance(motion, SmoothSteps):
        values = np.asarray(motion.values)[k]
        amplitude = float(np.max(np.abs(values - values[0])))
        path = (*leaf, "motion", "values")
        if amplitude > 0.0:
            out.append(
                Target(
                    f"{prefix}.amplitude", path, (k,), Rule.AMPLITUDE, unit, amplitude, amplitude
                )
            )
        out += [
            Target(f"{prefix}.values[{i}]", path, (k, i), Rule.SET, unit, float(v))
            for i, v in enumerate(values)
        ]
    elif isinstance(motion, Constant):
        value = float(np.asarray(motion.value)[k])
        out.append(
            Target(f"{prefix}.value", (*leaf, "motion", "value"), (k,), Rule.SET, unit, value)
        )
    elif isinstance(motion, Polynomial):
        path = (*leaf, "motion", "coefficients")
        out += [
            Target(f"{prefix}.coefficients[{i}]", path, (k, i), Rule.SET, f"{unit}/s^{i}", float(c))
            for i, c in enumerate(np.asarray(motion.coefficients)[k])
        ]
    return out


def parameter_targets(model: Model, state: State) -> dict[str, Target]:
    """Every parameter a sweep can change, by address (see the module's table).

    **Arguments:**

    - `model`, `state`: the nominal mechanism and its initial state (concrete).

    **Returns:** `{address: Target}`, in model order: bodies, pairs, gravity,
    loads, force elements (`forces[k].<field>`, k in declaration order; the
    fields of `parameters` of each element type), initial state.
    """
    targets: list[Target] = []
    bodies = model.bodies
    for b, name in enumerate(bodies.names):
        mass = float(np.asarray(bodies.mass)[b])
        targets.append(
            Target(f"bodies.{name}.mass", ("bodies", "mass"), (b,), Rule.SET, "kg", mass)
        )
        if model.dim == 2:
            inertia = float(np.asarray(bodies.inertia)[b])
            targets.append(
                Target(
                    f"bodies.{name}.inertia",
                    ("bodies", "inertia"),
                    (b,),
                    Rule.SET,
                    "kg m²",
                    inertia,
                )
            )
    members = _members(model)
    for pair in model.pairs:
        section, g, k, group = members[pair.rows[0]]
        fields = {f.name for f in dataclasses.fields(group)}
        prefix = f"pairs.{pair.name}"
        for key, (field, unit) in _PAIR_FIELDS.items():
            if field not in fields:
                continue
            leaf = (section, g, field)
            value = np.asarray(getattr(group, field))[k]
            if value.ndim == 0:
                targets.append(Target(f"{prefix}.{key}", leaf, (k,), Rule.SET, unit, float(value)))
            elif value.ndim == 1:
                targets += _vector_targets(
                    f"{prefix}.{key}", leaf, (k,), value, unit, key in _UNIT_VECTORS
                )
        if pair.kind in _AXIS_KINDS:
            for key, field in _FRAMES.items():
                axis = np.asarray(getattr(group, field))[k, 0]
                targets += [
                    Target(
                        f"{prefix}.{key}.{_AXES[c]}",
                        (section, g, field),
                        (k, 0, c),
                        Rule.SET,
                        "1",
                        float(v),
                        1.0,
                        True,
                    )
                    for c, v in enumerate(axis)
                ]
        if "motion" in fields:
            unit = "rad" if "revolute" in pair.kind else "m"
            targets += _motion_targets(f"{prefix}.motion", (section, g), k, group.motion, unit)
    points = np.asarray(model.markers.points)
    for k, name in enumerate(model.markers.names):
        targets += _vector_targets(
            f"markers.{name}.point", ("markers", "points"), (k,), points[k], "m"
        )
    targets += _vector_targets("gravity", ("gravity",), (), np.asarray(model.gravity), "m/s²")
    loads = model.loads
    for k in range(np.asarray(loads.bodies).shape[0]):
        for key, (field, unit) in _LOAD_FIELDS.items():
            value = np.asarray(getattr(loads, field))[k]
            if value.ndim == 0:
                targets.append(
                    Target(
                        f"loads[{k}].{key}", ("loads", field), (k,), Rule.SET, unit, float(value)
                    )
                )
            else:
                targets += _vector_targets(f"loads[{k}].{key}", ("loads", field), (k,), value, unit)
    for k, (g, member) in enumerate(model.force_index):
        group = model.forces[g]
        for field, unit in group.parameters:
            value = np.asarray(getattr(group, field))[member]
            leaf, prefix = ("forces", g, field), f"forces[{k}].{field}"
            if value.size == 1:
                index = (member,) if value.ndim == 0 else (member, 0)
                targets.append(Target(prefix, leaf, index, Rule.SET, unit, float(value.flat[0])))
            else:
                targets += _vector_targets(prefix, leaf, (member,), value, unit)
    if np.any(np.asarray(state.qd)):  # at rest, q̇⁰ = 0 has nothing to scale
        targets.append(
            Target("initial.velocity_scale", ("initial",), (), Rule.SCALE, "1", 1.0, 1.0)
        )
    speed = float(np.linalg.norm(np.asarray(state.qd)[: model.dim])) if bodies.count else 0.0
    if speed > 0.0:
        targets.append(Target("initial.speed", ("initial",), (), Rule.SCALE, "m/s", speed, speed))
    return {t.name: t for t in targets}


_ADDRESS_FORMS = (
    "bodies.<BODY>.mass|inertia, pairs.<PAIR>.point_i|point_j|point|normal|direction.x|y|z, "
    "pairs.<PAIR>.axis_i|axis_j.x|y|z (spatial), pairs.<PAIR>.angle, "
    "pairs.<PAIR>.motion.amplitude|value|values[k]|coefficients[k], markers.<NAME>.point.x|y|z, "
    "gravity.x|y|z, loads[k].force|point|torque..., forces[k].stiffness|damping|free_length|"
    "free_angle|preload|rotational_stiffness|rotational_damping|force|point|torque..., "
    "initial.speed, initial.velocity_scale"
)


def unknown_parameter(name: str, known: Sequence[str]) -> str:
    """The message for a parameter address the model does not have."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return (
        f"unknown sweep parameter {name!r}{hint}; addresses are {_ADDRESS_FORMS} "
        f"({len(known)} for this mechanism: list them with `redundax sweep FILE "
        "--list-parameters`)"
    )


def resolve_parameters(model: Model, state: State, names: Sequence[str]) -> tuple[Target, ...]:
    """The `Target` of every name, in order.

    **Raises:** `ValueError` naming every unknown or repeated name (with the closest
    known addresses).
    """
    known = parameter_targets(model, state)
    problems = []
    for k, name in enumerate(names):
        if name not in known:
            problems.append(unknown_parameter(name, list(known)))
        elif name in names[:k]:
            problems.append(f"sweep parameter {name!r} is listed twice")
    if problems:
        raise ValueError("\n".join(problems))
    return tuple(known[name] for name in names)


def _orthonormal(frame: Float[Any, "3 3"]) -> Float[Any, "3 3"]:
    """The right-handed orthonormal frame (rows) nearest `frame` that keeps the
    direction of its axis e₀: e₁ made perpendicular to it (Gram–Schmidt), e₂ = e₀ × e₁."""
    e0 = frame[0] / jnp.linalg.norm(frame[0])
    e1 = frame[1] - (frame[1] @ e0) * e0
    e1 = e1 / jnp.linalg.norm(e1)
    return jnp.stack([e0, e1, jnp.cross(e0, e1)])


def apply_parameters(
    model: Model, state: State, targets: Sequence[Target], x: Float[Any, " p"]
) -> tuple[Model, State]:
    """The variant of (`model`, `state`) with parameter k set to `x[k]`.

    Pure (`eqx.tree_at`), so `jax.vmap` over `x` batches it. Several parameters
    of one leaf are applied in the order given; unit vectors are renormalised last.
    """
    leaves: dict[tuple, Any] = {}
    for k, target in enumerate(targets):
        if target.leaf in leaves:
            current = leaves[target.leaf]
        else:
            source = state.qd if target.leaf == ("initial",) else _get(model, target.leaf)
            current = jnp.asarray(source, dtype=float)
        value = x[k]
        if target.rule is Rule.SET:
            current = current.at[target.index].set(value)
        elif target.rule is Rule.AMPLITUDE:
            row = current[target.index]
            current = current.at[target.index].set(
                row[0] + (value / target.reference) * (row - row[0])
            )
        else:
            current = current * (value / target.reference)
        leaves[target.leaf] = current
    for leaf, member in dict.fromkeys((t.leaf, t.index[:-1]) for t in targets if t.normalise):
        if leaf[-1] in _FRAMES.values():  # a joint frame's axis e₀ (member, 0)
            frame = leaves[leaf][member[0]]
            leaves[leaf] = leaves[leaf].at[member[0]].set(_orthonormal(frame))
            continue
        v = leaves[leaf][member]
        leaves[leaf] = leaves[leaf].at[member].set(v / jnp.linalg.norm(v))
    qd = leaves.pop(("initial",), None)
    if leaves:
        keys = list(leaves)
        model = eqx.tree_at(
            lambda m: [_get(m, key) for key in keys], model, [leaves[k] for k in keys]
        )
    if qd is not None:
        state = State(state.t, state.q, qd)
    return model, state
