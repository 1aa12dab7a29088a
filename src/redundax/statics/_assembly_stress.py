"""Assembly stresses: what manufacturing deviations do to the reactions of a
redundantly constrained mechanism.

A rigid mechanism is assembled at q with Φ(q; p) = 0. Parts made with deviations
δ (a pair's point off by a tenth of a millimetre, an axis tilted) leave the misfit
g = Φ(q; p + δ) ≈ Φ_p δ. Motion absorbs the part of g in the range of C: the
mechanism simply sits a little elsewhere. The part along the left null space N of
C (the self-stresses, Nᵀ C = 0) no motion can absorb: a rigid model cannot be
assembled, and a real one is, by deforming its joints. With a compliance W per row
(1/k: bushings, bearing play taken up elastically), a compliant row is a spring
of energy ½ k Φ², whose multiplier (in this library's convention, constraint force
−Cᵀ λ) is λ = k Φ: Φ = W λ. A self-stress λ = N μ balances no load, and C Δq
vanishes along N, so Nᵀ g = Nᵀ W N μ:

    λ_s = N (Nᵀ W N)⁻¹ Nᵀ g        (first order in δ and in W;
                                    −N (Nᵀ W N)⁻¹ Nᵀ g with the convention Φ + W λ = 0).

Consequences, all tested: a reaction the rigid model determines has a zero row in
N, so it does not change to first order; the non-unique ones carry the whole
assembly stress, which grows with stiffness × misfit. (Wojtyra & Frączek: the
rigid model of a redundant mechanism "must be accompanied by a postulate that
links are geometrically perfect"; this is what happens when they are not.)

`compliant_equilibrium` solves the exact, nonlinear problem: the static equilibrium
of the model whose compliant rows are springs of stiffness k (energy ½ k Φ_k²) and
whose other rows (rigid-body rows, pairs given no compliance) stay rigid.
"""

from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, ArrayLike, Bool, Float

from .._assembly import CONSISTENCY_TOL, constraint_matrix, generalized_forces, position_residual
from .._errors import ModelError
from .._friction import refuse_friction
from .._model import Model, State
from .._parameters import apply_parameters, resolve_parameters
from .._precision import precise
from .._qr import pivoted_qr
from .._structure import Structure, decide
from .._types import Scalar
from .._validation import check_vector
from ._equilibrium import FORCE_RTOL, force_scale
from ._linearize import refuse_pfaffian, static_rank


def deviate(model: Model, deviations: Mapping[str, ArrayLike], state: State | None = None) -> Model:
    """`model` with parameter deviations δ added to its nominal values, by address
    (the sweep's: `"pairs.J0.point_i.x"`, `"bodies.crank.mass"`, …; `redundax sweep
    FILE --list-parameters` lists them). Differentiable in the values.

    **Raises:** `ValueError` naming an unknown address (with the closest known ones)."""
    state = (
        state
        if state is not None
        else State(0.0, jnp.zeros(model.n_coordinates), jnp.zeros(model.n_coordinates))
    )
    names = list(deviations)
    targets = resolve_parameters(model, state, names)
    values = (
        jnp.stack(
            [
                t.nominal + jnp.asarray(deviations[n], dtype=float)
                for t, n in zip(targets, names, strict=True)
            ]
        )
        if names
        else jnp.zeros(0)
    )
    return apply_parameters(model, state, targets, values)[0]


class AssemblyStress(eqx.Module):
    """The first-order assembly stress of a deviation (module docstring).

    - `misfit`: g = Φ(q; p + δ), per holonomic row [m, rad].
    - `trapped`: Nᵀ g, the misfit along the self-stresses (what no motion absorbs),
      one entry per self-stress (p of them).
    - `multipliers`: λ_s, per row of C; the reaction components change by −λ_s.
    - `row_unique`: per row, whether a rigid model determines that component (the
      structure's `stable_row_unique`): those change by round-off only.
    - `names`, `rows`, `labels` (static): the pairs, their rows, their components.
    """

    misfit: Float[Array, " m"]
    trapped: Float[Array, " p"]
    multipliers: Float[Array, " nc"]
    row_unique: Bool[Array, " nc"]
    names: tuple[str, ...] = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    labels: tuple[tuple[str, ...], ...] = eqx.field(static=True)

    def components(self, pair: str) -> dict[str, tuple[Array, Array]]:
        """`{label: (change of the component (−λ_s), unique)}` of the pair called `pair`."""
        try:
            k = self.names.index(pair)
        except ValueError:
            raise KeyError(
                f"no pair named {pair!r}; known pairs: {', '.join(self.names)}"
            ) from None
        return {
            label: (-self.multipliers[..., r], self.row_unique[..., r])
            for label, r in zip(self.labels[k], self.rows[k], strict=True)
        }


def _compliance(model: Model, stiffness) -> Float[Array, " nc"]:
    """W = 1/k per row (0 where k = ∞: rigid rows)."""
    k = jnp.asarray(stiffness, dtype=float)
    if k.shape != (model.n_constraints,):
        raise ModelError(
            f"assembly_stress: stiffness: expected one stiffness per row of C "
            f"({model.n_constraints}; rx.methods.joint_stiffness(model, ...) makes them), "
            f"got shape {k.shape}",
            source="assembly_stress",
        )
    return jnp.where(jnp.isinf(k), 0.0, 1.0 / jnp.where(jnp.isinf(k), 1.0, k))


def assembly_stress(
    model: Model,
    deviated: Model,
    q: Float[ArrayLike, " nq"],
    stiffness: Float[ArrayLike, " nc"],
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
) -> AssemblyStress:
    """The first-order assembly stress λ_s = N (Nᵀ W N)⁻¹ Nᵀ g of the deviations that
    turn `model` into `deviated` (same mechanism, other parameter values:
    [`deviate`][redundax.statics.deviate], or `eqx.tree_at`), at the nominal assembly q.

    **Arguments:**

    - `model`: the nominal (geometrically perfect) mechanism; `q`: a configuration of
      it on its constraints [m, rad]; `t` [s].
    - `deviated`: the mechanism as made.
    - `stiffness`: per row of C, the stiffness of that reaction component [N/m,
      N m/rad]; ∞ for rows that stay rigid
      ([`redundax.methods.joint_stiffness`][] makes them from joint-level values).
    - `structure`: the rank and verdicts (default [`decide`][redundax.decide] at q). Under a
      transformation pass one decided outside it.

    **Returns:** an [`AssemblyStress`][redundax.statics.AssemblyStress]; differentiable with
    respect to the deviations (dλ_s/dδ), the stiffnesses and the geometry.

    **Raises:** [`ModelError`][redundax.ModelError] for Pfaffian rows, a wrong number of
    stiffnesses, or a self-stress carried by rigid rows only (Nᵀ W N singular:
    give those rows a compliance).
    """
    check_vector(q, model.n_coordinates, "q", "assembly_stress")
    q = jnp.asarray(q, dtype=float)
    t = jnp.asarray(t, dtype=float)
    if structure is None:
        refuse_pfaffian(model, "assembly_stress")
        structure = decide(model, q, t)
    W, rank = checked(model, q, stiffness, structure)
    result = _first_order(model, deviated, q, t, W, structure.stable_row_unique, rank)
    trapped = result.trapped
    if not isinstance(trapped, jax.core.Tracer) and not np.all(
        np.isfinite(np.asarray(result.multipliers))
    ):
        raise ModelError(
            "assembly_stress: a self-stress of this mechanism lies on rigid rows only (Nᵀ W N is "
            "singular): give the pairs whose rows carry it a finite stiffness",
            source="assembly_stress",
        )
    return result


def checked(model: Model, q, stiffness, structure: Structure):
    """`(W, rank)` of `assembly_stress`'s inputs after its checks (refusals named there):
    the compliance per row and the structure's static rank."""
    refuse_pfaffian(model, "assembly_stress")
    check_vector(q, model.n_coordinates, "q", "assembly_stress")
    return _compliance(model, stiffness), static_rank(structure, "assembly_stress")


def self_stress_basis(model: Model, q, t, rank: int) -> Float[Array, "nc p"]:
    """N: an orthonormal basis of the left null space of C at q (the self-stresses),
    `nc − rank` columns, from the pivoted QR with the structure's rank imposed."""
    C = constraint_matrix(model, q, t)
    return pivoted_qr(C, rank=rank).q[:, rank:]


def stress_along(N, model, deviated, q, t, W, row_unique) -> AssemblyStress:
    """λ_s = N (Nᵀ W N)⁻¹ Nᵀ g of `deviated` assembled at q, with N the self-stresses
    of `model` there (`self_stress_basis`). Apart from N so that a sweep over deviated
    parts (`redundax.sweep`'s `AssemblyStresses`) computes N, which depends on the
    nominal mechanism only, once per chunk instead of once per variant: per variant
    the misfit and a p × p solve remain (Bricard, 20,000 draws: 9 s per chunk of
    1,024 before, evaluated one after another with N in each)."""
    g = position_residual(deviated, q, t)
    g = jnp.concatenate([g, jnp.zeros(model.n_pfaffian)])
    trapped = N.T @ g
    mu = jnp.linalg.solve((N.T * W[None, :]) @ N, trapped)
    return AssemblyStress(
        misfit=g[: model.n_holonomic],
        trapped=trapped,
        multipliers=N @ mu,
        row_unique=row_unique,
        names=model.pair_names,
        rows=tuple(p.rows for p in model.pairs),
        labels=tuple(p.components for p in model.pairs),
    )


@eqx.filter_jit
def _first_order(model, deviated, q, t, W, row_unique, rank: int) -> AssemblyStress:
    return stress_along(self_stress_basis(model, q, t, rank), model, deviated, q, t, W, row_unique)


class CompliantEquilibrium(eqx.Module):
    """The static equilibrium of a model with compliant rows (`compliant_equilibrium`).

    - `q`: the configuration; `multipliers`: λ per row of C (the compliant rows'
      λ = k Φ, the rigid rows' from the balance of forces); the reaction components
      are −λ. `residual`, `violation`: as in [`Equilibrium`][redundax.statics.Equilibrium] (the
      violation of the rigid rows only). `steps`: Levenberg–Marquardt steps.
    """

    q: Float[Array, " nq"]
    multipliers: Float[Array, " nc"]
    residual: Float[Array, ""]
    violation: Float[Array, ""]
    steps: Array


def compliant_equilibrium(
    model: Model,
    q0: Float[ArrayLike, " nq"],
    stiffness: Float[ArrayLike, " nc"],
    t: Scalar = 0.0,
    *,
    rtol: float = precise(1e-13, 1e-6),
    atol: float = precise(1e-15, 1e-7),
    max_steps: int = 256,
    throw: bool = True,
) -> CompliantEquilibrium:
    """The exact static equilibrium of `model` with its rows of finite `stiffness`
    made springs (energy ½ k Φ_k²) and those of stiffness ∞ kept rigid, from `q0`:
    the nonlinear counterpart of [`assembly_stress`][redundax.statics.assembly_stress]
    (call it for the nominal and the deviated model; the reactions' change is the
    difference). Every multiplier is then determined.

    **Raises:** [`ModelError`][redundax.ModelError] when no equilibrium is found (with `throw`):
    an unbalanced force above `FORCE_RTOL` of the force scale (the loads', or the
    springs' at q0), or rigid rows violated by more than `CONSISTENCY_TOL` (the stiff
    springs' forces make the problem less well conditioned than a rigid one).
    """
    refuse_pfaffian(model, "compliant_equilibrium")
    refuse_friction(model, "compliant_equilibrium", "a static solve leaves friction out")
    check_vector(q0, model.n_coordinates, "q0", "compliant_equilibrium")
    W = _compliance(model, stiffness)
    t = jnp.asarray(t, dtype=float)
    q0 = jnp.asarray(q0, dtype=float)
    k = jnp.where(W > 0.0, 1.0 / jnp.where(W > 0.0, W, 1.0), 0.0)
    rigid = W == 0.0
    # The force scale: the loads', or the springs' at q0 where they are larger (a
    # misfit with no load at all).
    springs = _balance(model, q0, t, k, rigid)[0] - generalized_forces(model, q0, None, t)
    scale = jnp.maximum(force_scale(model, q0, t), jnp.max(jnp.abs(springs), initial=0.0))
    result = _compliant(model, q0, t, k, rigid, scale, rtol, atol, max_steps)
    if throw:
        # The springs' round-off: k · eps · |q| per row, far above FORCE_RTOL of the
        # loads for stiff bearings (k = 1e8 N/m: ~1e-8 N).
        eps = jnp.finfo(q0.dtype).eps
        floor = 64.0 * eps * jnp.max(k, initial=0.0) * jnp.maximum(1.0, jnp.max(jnp.abs(q0)))
        try:
            failed = bool(
                (result.residual > FORCE_RTOL * scale + floor)
                | (result.violation > CONSISTENCY_TOL)
            )
        except jax.errors.ConcretizationTypeError:
            failed = False
        if failed:
            raise ModelError(
                f"compliant_equilibrium: no static equilibrium near q0 (unbalanced force "
                f"{float(result.residual):.3g}, rigid-row violation {float(result.violation):.3g} "
                f"after {int(result.steps)} steps)",
                source="compliant_equilibrium",
            )
    return result


def _balance(model, q, t, k, rigid):
    """(F − C_cᵀ k Φ_c, C_r, Φ_r): the applied and spring forces, and the rigid rows."""
    m = model.n_holonomic
    phi = position_residual(model, q, t)
    C = constraint_matrix(model, q, t)[:m]
    spring = jnp.where(rigid[:m], 0.0, k[:m] * phi)
    F = generalized_forces(model, q, None, t) - C.T @ spring
    w = rigid[:m].astype(F.dtype)
    return F, C * w[:, None], phi * w, spring


def _unbalanced(model, q, t, k, rigid):
    F, Cr, _, _ = _balance(model, q, t, k, rigid)
    S = Cr @ Cr.T + jnp.diag(1.0 - rigid[: model.n_holonomic].astype(F.dtype))
    lam = jnp.linalg.solve(S, Cr @ F)
    return F - Cr.T @ lam, lam


@eqx.filter_jit
def _compliant(model, q0, t, k, rigid, scale, rtol, atol, max_steps: int) -> CompliantEquilibrium:
    def residual(q, _):
        _, _, phi_r, _ = _balance(model, q, t, k, rigid)
        return jnp.concatenate([phi_r, _unbalanced(model, q, t, k, rigid)[0] / scale])

    solution = optx.least_squares(
        residual,
        optx.LevenbergMarquardt(rtol=rtol, atol=atol),
        q0,
        max_steps=max_steps,
        throw=False,
    )
    q = solution.value
    unbalanced, lam_rigid = _unbalanced(model, q, t, k, rigid)
    _, _, phi_r, spring = _balance(model, q, t, k, rigid)
    m = model.n_holonomic
    lam = jnp.where(rigid[:m], lam_rigid, spring)
    return CompliantEquilibrium(
        q=q,
        multipliers=jnp.concatenate([lam, jnp.zeros(model.n_pfaffian)]),
        residual=jnp.max(jnp.abs(unbalanced), initial=0.0),
        violation=jnp.max(jnp.abs(phi_r), initial=0.0),
        steps=solution.stats["num_steps"],
    )
