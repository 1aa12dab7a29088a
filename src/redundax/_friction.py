"""Joint friction solved with the reactions it depends on.

A [`JointFriction`][redundax.forces.JointFriction] element's force depends on the
reaction components of its joint, and the reactions depend on every applied force,
friction included. At each evaluation of the equations of motion the friction loads
L (one number per element) are the fixed point of

    L ↦ loads(λ(F + F_friction(L)))

where λ(·) is the method's own acceleration and multiplier solve with that applied
force: Optimistix's fixed-point iteration, implicitly differentiated, started from
the loads of the friction-free solve. The iteration reads only the components the
elements name; a simulation checks before it starts that the rigid model determines
each of them (the structure's stable verdicts, `check_friction`), so the loads — and
the motion — do not depend on how the redundancy is handled (never a Moore–Penrose
split of mixed N and N m rows). A compliant method determines every component by its
stiffnesses, and is allowed to read any.

The fixed point exists and is unique when friction cannot lock the joint within one
evaluation (μ times the lever arms times the sensitivity of the load to friction
below one, the rigid-body friction paradoxes beyond); where the iteration does not
converge, the evaluation fails with an error that says so, never a silent result.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Float

from ._assembly import _coords
from ._errors import ModelError
from ._forces import JointFrictionElement
from ._model import Model
from .methods import AbstractNullSpaceMethod, Compliant, Penalty

FRICTION_RTOL = 1e-8
"""Tolerance of the friction loads' fixed point, relative to the largest load: above
the precision of the least exact multipliers (the augmented Lagrangian's iteration
leaves ~4e-12 N m of a 0.2 N m load where the direct solves reach round-off; a
Penalty of 1e8 N/m, α times a residual at round-off, ~1e-8 of it: 1e-9 failed there),
and far below what moves a motion (the friction force is then right to 1e-8 of the
largest friction force)."""
FRICTION_ATOL = 1e-12
"""The smallest load scale [N, N m] (all loads zero: no friction)."""
FRICTION_STEPS = 100
"""The most fixed-point iterations per evaluation."""


def friction_groups(model: Model) -> tuple[JointFrictionElement, ...]:
    """The model's joint-friction groups (stacked members), in `model.forces` order."""
    return tuple(g for g in model.forces if isinstance(g, JointFrictionElement))


def has_friction(model: Model) -> bool:
    """Whether the model has joint friction (a static fact)."""
    return bool(friction_groups(model))


def friction_loads(model: Model, lam: Float[Array, " nc"]) -> Float[Array, " nf"]:
    """The load L of every friction element (groups in order) from multipliers λ."""
    loads = [
        jax.vmap(JointFrictionElement.load, in_axes=(0, None))(g, lam)
        for g in friction_groups(model)
    ]
    return jnp.concatenate(loads) if loads else jnp.zeros(0)


def _joint(model: Model, g: JointFrictionElement):
    """The constraint member of the group's joint (one pair per group)."""
    return jax.tree.map(lambda a: a[g.member], model.holonomic[g.group])


def friction_forces(model: Model, q, qd, loads: Float[Array, " nf"]) -> Float[Array, " nq"]:
    """The generalised friction force of every element given its load."""
    B = model.bodies
    Q, QD = _coords(model, q, qd)
    out = jnp.zeros_like(Q)
    start = 0
    for g in friction_groups(model):
        n = _members(g)
        joint = _joint(model, g)

        def one(element, load, joint=joint):
            qb, qdb = Q[element.bodies], QD[element.bodies]
            return element.force(joint, B, qb, qdb, load)

        F = jax.vmap(one)(g, loads[start : start + n])
        out = out.at[g.bodies].add(F)
        start += n
    return out[:-1].reshape(-1)


def slip_rates(model: Model, q, qd) -> Float[Array, " nf"]:
    """The slip rate v of every friction element [rad/s, m/s]."""
    B = model.bodies
    Q, QD = _coords(model, q, qd)
    rates = []
    for g in friction_groups(model):
        joint = _joint(model, g)

        def one(element, joint=joint):
            qb, qdb = Q[element.bodies], QD[element.bodies]
            return element.slip(joint, B, qb, qdb)

        rates.append(jax.vmap(one)(g))
    return jnp.concatenate(rates) if rates else jnp.zeros(0)


def with_friction(model: Model, method, structure, terms, gamma, q, qd):
    """`terms` with the friction force at the fixed point of the loads added to its
    applied force `F` (module docstring); `terms` unchanged without friction."""
    if not has_friction(model):
        return terms

    def solve(loads):
        F = terms.F + friction_forces(model, q, qd, loads)
        coupled = eqx.tree_at(lambda x: x.F, terms, F)
        qdd = method.acceleration(coupled, gamma, structure)
        return method.multipliers(coupled, gamma, qdd, structure)

    # Iterated in units of the largest friction-free load, so that convergence is
    # measured against the loads' scale (a small load carries the absolute round-off
    # of the multipliers, not a relative one).
    start = friction_loads(model, solve(jnp.zeros(_count(model))))
    scale = jnp.maximum(jnp.max(jnp.abs(start)), FRICTION_ATOL)

    def step(y, args):
        del args
        return friction_loads(model, solve(y * scale)) / scale

    solution = optx.fixed_point(
        step,
        optx.FixedPointIteration(rtol=FRICTION_RTOL, atol=FRICTION_RTOL),
        start / scale,
        max_steps=FRICTION_STEPS,
        throw=False,
    )
    loads = eqx.error_if(
        solution.value * scale,
        solution.result != optx.RESULTS.successful,
        "joint friction: the friction loads and the reactions did not settle on one value "
        "at this state (the fixed point did not converge): either friction this strong "
        "can lock the joint within one evaluation (a rigid-body friction paradox: lower "
        "the coefficient or the lever arms), or the method's multipliers are too noisy "
        "for it (a Penalty of very high stiffness: lower it, or use Compliant, its "
        "rigid limit)",
    )
    return eqx.tree_at(lambda x: x.F, terms, terms.F + friction_forces(model, q, qd, loads))


def _members(g: JointFrictionElement) -> int:
    return int(g.bodies.shape[0])


def _count(model: Model) -> int:
    return sum(_members(g) for g in friction_groups(model))


def friction_inputs(model: Model) -> list[tuple[int, str, str, tuple[int, ...]]]:
    """`(force index, pair, input, rows of C)` of every load input an element reads,
    elements in declaration order: static facts of the model."""
    out = []
    for k, (g, _) in enumerate(model.force_index):
        group = model.forces[g]
        if isinstance(group, JointFrictionElement):
            out += [
                (k, group.pair, name, rows)
                for name, rows in zip(group.names, group.inputs, strict=True)
            ]
    return out


def compliant(method) -> bool:
    """Whether `method` models the joints as compliant (`Compliant`: their rigid limit;
    `Penalty`: finite stiffness): its stiffnesses then determine every reaction."""
    return isinstance(method, Compliant | Penalty)


def check_friction(model: Model, structure, method) -> None:
    """Refuse joint friction that reads a reaction component the rigid model does not
    determine (its stable verdict), unless `method` is compliant (`Compliant`,
    `Penalty`: its stiffnesses determine every component). One line per offending
    input, naming the joint, the component and the remedies.

    **Raises:** [`ModelError`][redundax.ModelError]."""
    if not has_friction(model):
        return
    if compliant(method):
        return
    unique = np.asarray(structure.stable_row_unique)
    labels = {r: label for p in model.pairs for r, label in zip(p.rows, p.components, strict=True)}
    problems = []
    for k, pair, name, rows in friction_inputs(model):
        missing = [labels[r] for r in rows if not unique[r]]
        if missing:
            problems.append(
                f"force {k} (joint friction in {pair!r}) reads its {name} "
                f"({', '.join(missing)}), which this mechanism's rigid model does not "
                "determine (a redundant constraint shares it)"
            )
    if problems:
        raise ModelError(
            "joint friction needs reactions that exist:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + "\nremedies: drop that input; use load-independent friction (a preload, no "
            "inputs) for that joint; or make the joints that carry the self-stress "
            "compliant (method=redundax.methods.Compliant(...) or Penalty(...), whose "
            "stiffnesses determine every component; friction_report then gives the "
            "friction's sensitivity to them)",
            source="joint friction",
        )


def guard_friction(model: Model, structure, method, x):
    """`check_friction` where the verdicts are concrete; under a transformation that
    traces them (a vmapped sweep), `x` with a runtime error if an element reads a
    component that is not determined (`eqx.error_if`)."""
    if not has_friction(model):
        return x
    unique = structure.stable_row_unique
    if not isinstance(unique, jax.core.Tracer):
        check_friction(model, structure, method)
        return x
    rows = [r for _, _, _, rs in friction_inputs(model) for r in rs]
    if compliant(method) or not rows:
        return x
    return eqx.error_if(
        x,
        ~jnp.all(unique[np.asarray(rows)]),
        "joint friction reads a reaction component this mechanism's rigid model does not "
        "determine (a redundant constraint shares it); redundax.simulate on one variant "
        "names it",
    )


def refuse_friction(model: Model, what: str, why: str) -> None:
    """A [`ModelError`][redundax.ModelError] naming the joint-friction elements where
    `what` does not take them into account (`why`), instead of leaving them out."""
    elements = [f"force {k} (joint friction in {pair!r})" for k, pair, *_ in _declared(model)]
    if elements:
        raise ModelError(
            f"{what}: {why}; joint friction ({', '.join(elements)}) is solved with the "
            "reactions by redundax.simulate in absolute coordinates only: remove it for "
            f"{what}",
            [f"{e}: joint friction" for e in elements],
            what,
        )


def _declared(model: Model) -> list[tuple[int, str]]:
    """`(force index, pair)` of every joint-friction element."""
    return [
        (k, model.forces[g].pair)
        for k, (g, _) in enumerate(model.force_index)
        if isinstance(model.forces[g], JointFrictionElement)
    ]


def refuse_block_friction(model: Model, method) -> None:
    """Joint friction reads the multipliers of a dense solve at every evaluation; a
    null-space method on its block-sparse path (chosen for mechanisms of 150
    coordinates or more) has none there: refused by name, with the way round."""
    if has_friction(model) and isinstance(method, AbstractNullSpaceMethod) and method.block:
        elements = ", ".join(f"force {k} (joint friction in {p!r})" for k, p in _declared(model))
        raise ModelError(
            f"simulate: joint friction ({elements}) with {type(method).__name__}'s "
            "block-sparse path (chosen for mechanisms of 150 coordinates or more) is not "
            f"supported yet; pass method=redundax.methods.{type(method).__name__}"
            "(block=False)",
            source="joint friction",
        )
