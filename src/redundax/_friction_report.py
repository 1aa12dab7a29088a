"""What joint friction did along a run: per element, its load, slip rate and friction
force at the saved states, the work it did and the share of time it spent inside
its stiction band."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._errors import ModelError
from ._forces import JointFrictionElement
from ._friction import compliant, friction_groups, friction_loads, has_friction, slip_rates
from ._model import Model
from ._reaction_quantities import _trapezoid_weights
from ._reactions import reaction_history
from ._structure import Structure, membership
from .drift._base import AS_SIMULATED
from .methods import AbstractRedundancyMethod, NullSpace


class FrictionReport(eqx.Module):
    """Joint friction along a trajectory ([`friction_report`][redundax.analysis.friction_report]).

    Per friction element (`forces`: its index in the mechanism's force elements;
    `pairs`: its joint):

    - `loads` (T, nf): the load L [N, N m] at each saved state;
    - `slip` (T, nf): the slip rate v [m/s, rad/s];
    - `friction` (T, nf): the friction force or torque f = μ L tanh(v / v_t) (it acts
      against v);
    - `work` (nf,): the work done on the mechanism, −∫ f v dt ≤ 0 [J], by the
      trapezoid rule over the saved states;
    - `stiction_share` (nf,): the share of the run's time with |v| < v_t (the
      stiction band, where the regularised law acts as a stiff damper), by the same
      rule.
    - `stiffness_sensitivity` (nf, pairs) with a compliant method (`Compliant`,
      `Penalty`; else None): ∂ f̄ / ∂ ln k_p, how much the time-mean |f| of each
      element changes per e-fold of the stiffness of pair p's rows [N, N m], along
      the run's motion (held fixed), by forward-mode autodiff. Zero where the element
      reads only components the rigid model determines; otherwise the stiffnesses
      are the key input (Wojtyra 2017: elasticity restores uniqueness, at a price).
    """

    forces: tuple[int, ...] = eqx.field(static=True)
    pairs: tuple[str, ...] = eqx.field(static=True)
    loads: Float[Array, "T nf"]
    slip: Float[Array, "T nf"]
    friction: Float[Array, "T nf"]
    work: Float[Array, " nf"]
    stiction_share: Float[Array, " nf"]
    stiffness_sensitivity: Float[Array, "nf pairs"] | None = None


def _elements(model: Model):
    """Per friction element, in the order of the loads (groups in model order, members
    in order): its force index, its pair, μ and v_t."""
    index = {(g, j): k for k, (g, j) in enumerate(model.force_index)}
    forces, pairs = [], []
    for g, group in enumerate(model.forces):
        if isinstance(group, JointFrictionElement):
            n = int(group.bodies.shape[0])
            forces += [index[(g, j)] for j in range(n)]
            pairs += [group.pair] * n
    groups = friction_groups(model)
    mu = jnp.concatenate([g.coefficient for g in groups])
    vt = jnp.concatenate([g.transition_velocity for g in groups])
    return tuple(forces), tuple(pairs), mu, vt


def friction_report(
    model: Model,
    trajectory,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    drift_control=AS_SIMULATED,
) -> FrictionReport:
    """The loads, slip rates, friction forces, work and stiction share of every joint
    friction element of `model` along `trajectory`, from the reactions at its saved
    states ([`reaction_history`][redundax.reaction_history] with the run's `method`:
    the loads read only components the rigid model determines, so any method gives
    the same ones). Work and shares are trapezoid sums over the saved states: save
    densely enough to resolve the stick-slip transitions (`SaveAt(n=...)`).

    **Raises:** [`ModelError`][redundax.ModelError] if the model has no joint friction.
    """
    if not has_friction(model):
        raise ModelError(
            "friction_report: the model has no joint friction (redundax.forces.JointFriction)",
            source="friction_report",
        )
    forces, pairs, mu, vt = _elements(model)
    slip = jax.vmap(lambda q, qd: slip_rates(model, q, qd))(trajectory.q, trajectory.qd)
    w = _trapezoid_weights(trajectory.ts)
    span = trajectory.ts[-1] - trajectory.ts[0]

    def along(method):
        """The loads and friction forces at the saved states with `method`."""
        history = reaction_history(
            model, trajectory, structure=structure, method=method, drift_control=drift_control
        )
        loads = jax.vmap(lambda lam: friction_loads(model, lam))(history.multipliers)
        return loads, mu[None, :] * loads * jnp.tanh(slip / vt[None, :])

    sensitivity = None
    if compliant(method):
        rows = membership(model.n_constraints, tuple(p.rows for p in model.pairs))
        k = jnp.broadcast_to(jnp.asarray(method.stiffness, dtype=float), (model.n_constraints,))

        def mean_friction(log_scale):
            scaled = jnp.where(jnp.isinf(k), k, k * jnp.exp(log_scale @ rows))
            loads, f = along(eqx.tree_at(lambda m: m.stiffness, method, scaled))
            return (w @ jnp.abs(f)) / span, (loads, f)

        # One pass: the values (at the method's own stiffnesses) ride along.
        sensitivity, (loads, friction) = jax.jacfwd(mean_friction, has_aux=True)(
            jnp.zeros(len(model.pairs))
        )
    else:
        loads, friction = along(method)
    return FrictionReport(
        forces=forces,
        pairs=pairs,
        loads=loads,
        slip=slip,
        friction=friction,
        work=-(w @ (friction * slip)),
        stiction_share=(w @ (jnp.abs(slip) < vt[None, :]).astype(float)) / span,
        stiffness_sensitivity=sensitivity,
    )
