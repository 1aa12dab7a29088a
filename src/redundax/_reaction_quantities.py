"""Differentiable design quantities: the reaction of one pair at a state, and
functionals of a simulated trajectory (peak reaction, reaction impulse, final
marker position), with a guard against reactions a rigid model does not determine.

A unique reaction (Wojtyra & Frączek 2013: B_X = 0) is the same whichever method
of handling redundancy computed it, and so are its derivatives with respect to the
model's parameters while the rank of C stays constant. A non-unique one is a
choice made by the method; asking for it without naming a method is an error
here, with a message that says why and what to do, raised host-side (`ValueError`)
when the mechanism's [`Structure`][redundax.Structure] is known on the host (the usual case: it is
decided once, before any `jax.jit` or `jax.grad`), and by `eqx.error_if` (a runtime
error) when the structure itself is traced. The verdicts are the structure's
`stable_unique` / `stable_row_unique`: decided once for the whole motion.

A trajectory that left its constraints (`Trajectory.valid` False at some saved
time: a driver moved out of the workspace) has no reactions there, unique or not:
the functionals of a trajectory refuse it with a
[`ConstraintsLeftError`][redundax.ConstraintsLeftError]
naming the first saved time off them, where `valid` is concrete. Under a trace
(`jax.jit`, `jax.grad`, the optimiser) they compute as usual, and the run's own
`valid` and `result` carry the failure (the optimiser rejects such a design).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from ._assembly import marker_positions
from ._model import Model
from ._reactions import chunk_size, pair_wrenches
from ._simulate import Trajectory
from ._solve import solve_terms
from ._structure import Structure, decide
from ._types import Scalar
from ._validation import host_values
from ._validity import ConstraintsLeftError
from .drift._base import AS_SIMULATED, as_simulated
from .methods import AbstractRedundancyMethod, NullSpace, specialise

PEAK_ORDER = 32.0
"""Default order p of the power mean that smooths the peak of a reaction."""


class PairReaction(eqx.Module):
    """The reaction of one kinematic pair (or of one of its components) at a state.

    - `name`: the pair; `labels`: the reaction components selected (all of the
      pair's, or the one asked for).
    - `method`: the method of handling redundancy that computed the numbers.
    - `wrench`: the force and moment the selection exerts on every moving body, at
      the body's centre of mass, global components, shape `(nb, 3)` planar
      [F_x, F_y, M_z] or `(nb, 6)` spatial [N, N m]; zero on bodies the pair does
      not touch. The same as [`Reactions`][redundax.Reactions]`.wrench` of the pair.
    - `components`: the selected components −λ_k (force along / moment about the
      named joint axis, see [`Pair`][redundax.Pair]), shape `(k,)`.
    - `unique`: whether a rigid model determines `wrench` (always true when no
      method was named: otherwise the call raises).

    Under `jax.vmap` (or from [`pair_reaction_history`][redundax.analysis.pair_reaction_history])
    the array fields carry
    a leading batch or time axis.
    """

    name: str = eqx.field(static=True)
    labels: tuple[str, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    wrench: Float[Array, "*t nb ws"]
    components: Float[Array, "*t k"]
    unique: Bool[Array, "*t"]


class PeakReaction(eqx.Module):
    """Peak magnitude of a pair's reaction over a trajectory.

    - `value`: the smooth peak, a power mean of order p over time (see
      [`peak_reaction`][redundax.analysis.peak_reaction]); differentiable, and ≤ `max`. Optimise
      this one.
    - `max`: the exact largest magnitude over the saved states (for reporting).
    - `time`: when `max` occurs [s].
    - `magnitude`: the magnitude at every saved state, shape `(T,)`.
    - `unique`: whether a rigid model determines the reaction at every saved state.
    """

    value: Float[Array, ""]
    max: Float[Array, ""]
    time: Float[Array, ""]
    magnitude: Float[Array, " T"]
    unique: Bool[Array, ""]


class ReactionImpulse(eqx.Module):
    """Time integral of a pair's reaction over a trajectory (trapezoid rule over
    the saved states).

    - `value`: the magnitude of the impulse of the quantity
      [`PeakReaction`][redundax.analysis.PeakReaction]`.value`
      measures: |∫ F dt| of the force F of the pair on its first moving body
      [N s], or, with a `component`, |∫ (−λ_k) dt| [N s or N m s]; ≥ 0, and
      differentiable wherever it is not 0. The scalar to optimise (as the
      optimiser's reaction-impulse objective does). For a constant reaction it
      is the `PeakReaction.value` times the duration.
    - `wrench`: ∫ wrench dt on every moving body, shape `(nb, ws)` [N s, N m s].
    - `components`: ∫ (−λ_k) dt of the selected components, shape `(k,)`.
    - `unique`: whether a rigid model determines the reaction at every saved state.
    """

    value: Float[Array, ""]
    wrench: Float[Array, "nb ws"]
    components: Float[Array, " k"]
    unique: Bool[Array, ""]


def _selection(model: Model, pair: str, component: str | None):
    """Rows (0-based) and labels of `pair`, or of its one `component`."""
    try:
        p = model.pair(pair)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    labels = p.components or tuple(f"row {k + 1}" for k in p.rows)
    if component is None:
        return p.rows, labels
    if component not in labels:
        raise ValueError(
            f"pair {pair!r} has no component {component!r}; its components are: "
            + ", ".join(repr(c) for c in labels)
        )
    k = labels.index(component)
    return (p.rows[k],), (component,)


def first_moving_body(model: Model, pair: str) -> int:
    """Index of the first moving body of `pair` (the body its force acts on)."""
    names = [b for b in model.pair(pair).bodies if b != "ground"]
    return model.body_index(names[0])


def _verdict(structure: Structure, model: Model, pair: str, component: str | None):
    """The structure's verdict on the selection: the pair's, or its one row's."""
    if component is None:
        return structure.stable_unique[..., structure.index(pair)]
    rows, _ = _selection(model, pair, component)
    return structure.stable_row_unique[..., rows[0]]


def _core(model, q, qd, t, rows, structure, method, drift_control):
    """Wrench and components of `rows` at one state."""
    terms, _, lam = solve_terms(
        model, q, qd, t, structure=structure, method=method, drift_control=drift_control
    )
    idx = np.asarray(rows, dtype=int)
    nb, dof = model.bodies.count, model.bodies.dof
    generalised = -(terms.C[idx].T @ lam[idx])  # −C_Xᵀ λ_X
    wrench = pair_wrenches(model, q, generalised.reshape(1, nb, dof))[0]
    return wrench, -lam[idx]


@eqx.filter_jit
def _at_state(model, q, qd, t, rows, structure, method, drift_control):
    return _core(model, q, qd, t, rows, structure, method, drift_control)


@eqx.filter_jit
def _along(model, ts, qs, qds, rows, structure, method, drift_control):
    """`_core` at every saved state, in chunks within the reactions' memory budget
    (`MEMORY_BUDGET`: the states of a long run are not all solved at once)."""

    def one(state):
        q, qd, t = state
        return _core(model, q, qd, t, rows, structure, method, drift_control)

    return jax.lax.map(one, (qs, qds, ts), batch_size=chunk_size(model, ts.shape[0]))


_ADVICE = (
    "Name a method of handling redundancy to get that method's values, flagged "
    "unique=False: method=rx.methods.Compliant(rx.methods.joint_stiffness(model, k, "
    "{pair: k_X})) (the "
    "limit of compliant joints; physical when the joint stiffnesses are known), "
    "method=rx.methods.eliminate(model, q, rows=...) or method=rx.methods.NullSpace() (minimum "
    "norm); "
    "or, where one of the pair's components is unique (the solvability report's "
    "row_unique), ask for it with component=..."
)


def _traced_messages(what: str, n_rows: int) -> list[str]:
    """One message per degree of redundancy p = 0 … n_rows (`eqx.branched_error_if`)."""
    return [
        f"{what} is not unique: a rigid model does not determine it (degree of redundancy "
        f"p = {p}; a self-stress of the redundant constraints loads this pair, B_X ≠ 0). "
        "rx.analyze_solvability(model, q) lists every pair's verdict. " + _ADVICE
        for p in range(n_rows + 1)
    ]


def _host_message(model: Model, structure: Structure, pair: str, component) -> str:
    what = f"the reaction of pair {pair!r}" + (
        f" (component {component!r})" if component is not None else ""
    )
    p = model.n_constraints - int(structure.rank)
    unique = np.asarray(structure.stable_unique)
    others = [n for n, u in zip(model.pair_names, unique, strict=False) if not u and n != pair]
    text = (
        f"{what} is not unique: a rigid model does not determine it (degree of "
        f"redundancy p = {p}; a self-stress of the redundant constraints loads this pair, "
        f"B_X ≠ 0)."
    )
    if others:
        text += " The other pairs whose reactions are not unique: " + ", ".join(others) + "."
    pr = model.pair(pair)
    labels = pr.components or tuple(f"row {k + 1}" for k in pr.rows)
    row_unique = np.asarray(structure.stable_row_unique)
    fine = [lab for lab, r in zip(labels, pr.rows, strict=True) if bool(row_unique[r])]
    if component is None and fine:
        text += " Of its components, " + ", ".join(repr(c) for c in fine) + " "
        text += "is unique." if len(fine) == 1 else "are unique."
    elif component is None:
        text += " None of its components is unique."
    return text + " " + _ADVICE


def _guard(outputs, model: Model, structure: Structure, pair: str, component):
    """Refuse a reaction the structure says is not unique: `ValueError` when the
    verdict is known on the host, else `eqx.branched_error_if` on every output (so
    that the check survives dead-code elimination whichever output is used)."""
    ok = _verdict(structure, model, pair, component)
    known = host_values(ok)
    if known is not None:
        if not bool(np.all(known[0])):
            raise ValueError(_host_message(model, structure, pair, component))
        return outputs
    what = f"the reaction of pair {pair!r}" + (
        f" (component {component!r})" if component is not None else ""
    )
    n_rows = model.n_constraints
    p = jnp.clip(n_rows - jnp.asarray(structure.rank), 0, n_rows)
    return eqx.branched_error_if(outputs, ~jnp.all(ok), p, _traced_messages(what, n_rows))


def pair_reaction(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    pair: str,
    component: str | None = None,
    method: AbstractRedundancyMethod | None = None,
    drift_control=None,
    structure: Structure | None = None,
) -> PairReaction:
    """The reaction of `pair` (or of one of its `component`s) at (q, q̇, t), as a
    differentiable function of the state and of the model's parameters.

    **Arguments:**

    - `model`, `q`, `qd`, `t`: the mechanism and its state [m, rad, s].
    - `pair`: the pair's name, e.g. `"D"`.
    - `component`: one reaction component of the pair by its label (e.g.
      `"force x"`, see `model.pair(name).components`), or None for the whole pair.
      A component can be unique when its pair's reaction is not.
    - `method`: None (the default) asks for a *unique* reaction: it is computed by
      [`NullSpace`][redundax.methods.NullSpace] and the call raises if a rigid model does not
      determine it. Naming a method returns that method's values, with `unique` telling whether
      they are determined.
    - `drift_control`: the drift-control term of the simulation the state comes
      from (e.g. `rx.drift.Baumgarte()`), so that q̈ matches; None at an exact state.
    - `structure`: the mechanism's [`Structure`][redundax.Structure] (rank and verdicts); default:
      [`decide`][redundax.decide] at (q, t). Decide it once, outside `jax.grad`, and pass it in.

    **Returns:** a [`PairReaction`][redundax.analysis.PairReaction] (`wrench`, `components`,
    `unique`).

    **Raises:** `ValueError` for an unknown pair or component; when `method` is
    None and the reaction is not unique, `ValueError` naming the pair, the degree
    of redundancy, the pairs that share it and the unique components (or, when the
    structure itself is traced, the runtime error of `eqx.error_if`, an
    `EquinoxRuntimeError` or `JaxRuntimeError`, both `RuntimeError`s, with the same
    explanation).

    Derivatives with respect to geometry, masses and stiffnesses exist while the
    rank of C and the pivot order stay constant (regular configurations); for a
    unique reaction they do not depend on the method.

    !!! example
        ```python
        structure = rx.decide(model, q, t)

        def force_x(mass):
            m = eqx.tree_at(lambda m: m.bodies.mass, model, mass)
            return rx.analysis.pair_reaction(m, q, qd, t, pair="D", structure=structure).wrench[3,
            0]

        jax.grad(force_x)(model.bodies.mass)  # ∂F_x/∂m of every body
        ```
    """
    rows, labels = _selection(model, pair, component)
    if structure is None:
        structure = decide(model, q, t)
    guarded = method is None
    method = specialise(NullSpace() if method is None else method, structure, model)
    outputs = _at_state(model, q, qd, t, rows, structure, method, drift_control)
    if guarded:
        outputs = _guard(outputs, model, structure, pair, component)
    wrench, comps = outputs
    return PairReaction(
        name=pair,
        labels=labels,
        method=type(method).__name__,
        wrench=wrench,
        components=comps,
        unique=_verdict(structure, model, pair, component),
    )


def _refuse_if_left(trajectory: Trajectory, what: str, pair: str) -> None:
    """Raise [`ConstraintsLeftError`][redundax.ConstraintsLeftError] when the trajectory's `valid`
    flags are concrete and some saved time is off the constraints (None: not judged; traced:
    the run's own `valid` and `result` say it)."""
    flags = getattr(trajectory, "valid", None)
    known = None if flags is None else host_values(flags)
    if known is None:
        return
    valid = np.asarray(known[0], dtype=bool).reshape(-1)
    if valid.all():
        return
    ts = np.asarray(trajectory.ts)
    k = int(np.argmin(valid))
    t = float(ts[k])
    violation = float(np.asarray(trajectory.position_violation)[k])
    tolerances = getattr(trajectory, "tolerances", None)
    tolerance = float("nan")
    if tolerances is not None and host_values(tolerances.saved) is not None:
        tolerance = float(tolerances.saved)
    valid_until = float(ts[k - 1]) if k > 0 else None
    above = "" if np.isnan(tolerance) else f", above the tolerance {tolerance:.3g}"
    since = "" if valid_until is None else f"; it was on them until t = {valid_until:.6g} s"
    raise ConstraintsLeftError(
        f"{what}: pair {pair!r}: the trajectory left its constraints: the first saved "
        f"time off them is t = {t:.6g} s (max |Φ| = {violation:.3g}{above}; "
        f"Trajectory.valid is False at {int((~valid).sum())} of {valid.size} saved "
        f"times{since}). There the state is no configuration of the mechanism, and no "
        "reaction is its reaction, unique or not. Simulate a motion the mechanism can "
        f"follow (check the drivers' motions), or end the run before t = {t:.6g} s",
        t,
        violation,
        tolerance,
        valid_until,
    )


def pair_reaction_history(
    model: Model,
    trajectory: Trajectory,
    *,
    pair: str,
    component: str | None = None,
    method: AbstractRedundancyMethod | None = None,
    drift_control=AS_SIMULATED,
    structure: Structure | None = None,
) -> PairReaction:
    """[`pair_reaction`][redundax.analysis.pair_reaction] at every saved state of `trajectory` (one
    compilation, differentiable through the simulation that made `trajectory`).

    The rank and the verdict come from `structure`, by default the one the
    trajectory was simulated with (`trajectory.structure`); Γ comes from
    `drift_control`, by default the drift control the trajectory was simulated
    with (`trajectory.drift_control`), so that q̈ matches the motion. With
    `method=None` the call raises, as `pair_reaction` does, if the reaction is not
    unique.

    **Returns:** a [`PairReaction`][redundax.analysis.PairReaction] whose array fields carry a
    leading time axis.

    **Raises:** as [`pair_reaction`][redundax.analysis.pair_reaction];
    [`ConstraintsLeftError`][redundax.ConstraintsLeftError] naming the first
    saved time off the constraints when `trajectory.valid` is concrete and False
    somewhere (under a trace the run's `valid` says it instead).
    """
    what = "pair_reaction_history"
    return _history(model, trajectory, what, pair, component, method, drift_control, structure)


def _history(model, trajectory, what, pair, component, method, drift_control, structure):
    """[`pair_reaction_history`][redundax.analysis.pair_reaction_history] for the function `what`
    (named in its errors)."""
    rows, labels = _selection(model, pair, component)
    _refuse_if_left(trajectory, what, pair)
    if structure is None:
        structure = trajectory.structure
    guarded = method is None
    method = specialise(NullSpace() if method is None else method, structure, model)
    drift_control = as_simulated(drift_control, trajectory)
    outputs = _along(
        model, trajectory.ts, trajectory.q, trajectory.qd, rows, structure, method, drift_control
    )
    if guarded:
        outputs = _guard(outputs, model, structure, pair, component)
    wrench, comps = outputs
    unique = jnp.broadcast_to(_verdict(structure, model, pair, component), trajectory.ts.shape)
    return PairReaction(
        name=pair,
        labels=labels,
        method=type(method).__name__,
        wrench=wrench,
        components=comps,
        unique=unique,
    )


def _safe_sqrt(x):
    positive = x > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def _trapezoid_weights(ts: Float[Array, " T"]) -> Float[Array, " T"]:
    """w with Σ_k w_k f(t_k) the trapezoid rule over the saved times."""
    if ts.shape[0] < 2:
        raise ValueError(
            "a trajectory functional needs at least two saved states (simulate with "
            "saveat=rx.SaveAt(n=...) of n ≥ 2)"
        )
    dt = jnp.diff(ts)
    zero = jnp.zeros(1)
    return 0.5 * (jnp.concatenate([zero, dt]) + jnp.concatenate([dt, zero]))


def peak_reaction(
    model: Model,
    trajectory: Trajectory,
    *,
    pair: str,
    component: str | None = None,
    order: float = PEAK_ORDER,
    method: AbstractRedundancyMethod | None = None,
    drift_control=AS_SIMULATED,
    structure: Structure | None = None,
) -> PeakReaction:
    """Peak magnitude of a pair's reaction over a simulated manoeuvre, smooth
    (for gradients) and exact (for reporting).

    The magnitude a(t) is |F|, the force of `pair` on its first moving body (for a
    knife edge the lateral force, for a translational driver the driving force),
    or |−λ_k| of one `component` when one is named (use this for moments and
    torques, e.g. a revolute driver's). The smooth peak is the power mean of
    order p = `order` over time,

        P = ( (1/(t_T − t_0)) ∫ a(t)^p dt )^(1/p),

    the integral by the trapezoid rule over the saved states. P is a smooth
    function of the parameters (no switch between samples, unlike the maximum);
    it never exceeds the sampled maximum A, and it converges to it as p → ∞:
    P ≥ A (1 − ε) (τ_ε / (t_T − t_0))^(1/p), τ_ε being the time a(t) spends
    above (1 − ε) A. For a peak that lasts 10 % of the manoeuvre and p = 32, P is
    about 0.9 A. It is homogeneous of degree 1 (no unit-dependent temperature),
    and does not depend on the number of saved states once they resolve a(t).

    **Arguments:** as [`pair_reaction_history`][redundax.analysis.pair_reaction_history], and
    `order` (p ≥ 2).

    **Returns:** a [`PeakReaction`][redundax.analysis.PeakReaction] (`value` = P, `max` = A, `time`,
    `magnitude`, `unique`).

    **Raises:** as [`pair_reaction`][redundax.analysis.pair_reaction] when `method` is None and the
    reaction is not unique at some saved state; `ValueError` if `order` < 2;
    [`ConstraintsLeftError`][redundax.ConstraintsLeftError] (a `RuntimeError`) naming the first
    saved time off the constraints when `trajectory.valid` is concrete and False somewhere.
    """
    if not order >= 2.0:
        raise ValueError(f"peak_reaction: order must be ≥ 2 (got {order})")
    history = _history(
        model, trajectory, "peak_reaction", pair, component, method, drift_control, structure
    )
    if component is None:
        force = history.wrench[:, first_moving_body(model, pair), : model.dim]
    else:
        force = history.components
    s = jnp.sum(force**2, axis=1)  # a², smooth at a = 0 (no square root)
    w = _trapezoid_weights(trajectory.ts)
    # Scaling by the largest a² only avoids overflow of a^p: P is homogeneous, so
    # the stopped gradient of the scale changes nothing.
    top = jax.lax.stop_gradient(jnp.max(s))
    scale = jnp.where(top > 0.0, top, 1.0)
    mean = jnp.sum(w * (s / scale) ** (0.5 * order)) / jnp.sum(w)
    positive = mean > 0.0
    value = jnp.sqrt(scale) * jnp.where(
        positive, jnp.where(positive, mean, 1.0) ** (1.0 / order), 0.0
    )
    k = jnp.argmax(s)
    return PeakReaction(
        value=value,
        max=_safe_sqrt(s[k]),
        time=trajectory.ts[k],
        magnitude=_safe_sqrt(s),
        unique=jnp.all(history.unique),
    )


def reaction_impulse(
    model: Model,
    trajectory: Trajectory,
    *,
    pair: str,
    component: str | None = None,
    method: AbstractRedundancyMethod | None = None,
    drift_control=AS_SIMULATED,
    structure: Structure | None = None,
) -> ReactionImpulse:
    """Time integral of a pair's reaction over a simulated manoeuvre (trapezoid
    rule over the saved states: save densely enough to resolve the reaction).

    **Arguments:** as [`pair_reaction_history`][redundax.analysis.pair_reaction_history].

    **Returns:** a [`ReactionImpulse`][redundax.analysis.ReactionImpulse] (`value`: the magnitude of
    the impulse of the force on the pair's first moving body, or of the `component`, as
    [`peak_reaction`][redundax.analysis.peak_reaction] measures its peak; `wrench` (nb, ws),
    `components` (k,), `unique`).

    **Raises:** as [`pair_reaction`][redundax.analysis.pair_reaction] when `method` is None and the
    reaction is
    not unique at some saved state; [`ConstraintsLeftError`][redundax.ConstraintsLeftError] (a
    `RuntimeError`) naming the first saved time off the constraints when `trajectory.valid` is
    concrete and False somewhere.
    """
    history = _history(
        model, trajectory, "reaction_impulse", pair, component, method, drift_control, structure
    )
    w = _trapezoid_weights(trajectory.ts)
    wrench = jnp.einsum("t,tbw->bw", w, history.wrench)
    components = jnp.einsum("t,tk->k", w, history.components)
    if component is None:
        vector = wrench[first_moving_body(model, pair), : model.dim]
    else:
        vector = components
    return ReactionImpulse(
        value=_safe_sqrt(jnp.sum(vector**2)),
        wrench=wrench,
        components=components,
        unique=jnp.all(history.unique),
    )


def final_marker_position(
    model: Model, trajectory: Trajectory, marker: str
) -> Float[Array, " dim"]:
    """Global position [m] of the tracked point `marker` at the last saved state
    of `trajectory`: differentiable through the simulation. Positions are always
    determined, so there is no uniqueness guard.

    **Raises:** `ValueError` naming the known markers if `marker` is unknown.
    """
    names = model.markers.names
    if marker not in names:
        raise ValueError(
            f"no marker named {marker!r}; known markers: {', '.join(names) or '(none)'}"
        )
    return marker_positions(model, trajectory.q[-1])[names.index(marker)]
