"""Joint reactions of a joint-coordinate model: the multipliers of the DCA's
back-substitution as the same [`redundax.Reactions`][] the absolute-coordinate
path reports (wrenches at the centres of mass, moments about the joint points,
components −λ per row), with the verdicts of seed 002's analysis
([`redundax.joint_coordinates.joint_uniqueness`][]) that a run claims: its `stable_unique` /
`stable_row_unique`, unique at the configuration analysed and at the generic one
next to it, as the absolute path's reactions (the `Structure`'s stable verdicts).

The DCA's rows are the rows of the absolute model's C (a multiplier is the same
reaction component in both coordinate systems), so the wrenches come from the
absolute model's own C at the configuration the joint coordinates give.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._equations import dynamics_terms
from .._reactions import Reactions, chunk_size, reactions_of
from .._types import Scalar
from ..drift._baumgarte import Baumgarte
from ._dynamics import JointStructure, dca_dynamics
from ._model import JointModel
from ._uniqueness import JointUniquenessReport

METHOD = "DCA"
"""The `method` of joint-coordinate reactions (in `Reactions.method` and run files)."""


def verdict_arrays(jm: JointModel, report: JointUniquenessReport):
    """`(unique per pair, unique per row of C)` that a run claims, as arrays: the
    report's `stable_unique` / `stable_row_unique` (also unique at the generic
    configuration next to the one analysed, as in absolute coordinates); rows no
    pair owns (natural coordinates' rigid-body rows) count as not unique (their λ
    is not computed in joint coordinates)."""
    model = jm.model
    if report.names != model.pair_names:
        raise ValueError(
            f"the report is of pairs {report.names}, the model has pairs {model.pair_names}"
        )
    rows = np.zeros(model.n_constraints, dtype=bool)
    for pair, flags in zip(model.pairs, report.stable_row_unique, strict=True):
        rows[list(pair.rows)] = flags
    return jnp.asarray(report.stable_unique, dtype=bool), jnp.asarray(rows)


def joint_reactions(
    jm: JointModel,
    structure: JointStructure,
    report: JointUniquenessReport,
    q: Float[Array, " nj"],
    qd: Float[Array, " nj"],
    t: Scalar = 0.0,
    drift_control: Baumgarte | None = None,
) -> Reactions:
    """The reactions at the joint-coordinate state (q, q̇, t), from the DCA.

    **Arguments:**

    - `jm`, `structure`: the model and its decisions
      ([`redundax.joint_coordinates.decide_joint`][]).
    - `report`: the verdicts ([`redundax.joint_coordinates.joint_uniqueness`][]), decided once; the
      reactions carry its `stable_unique` / `stable_row_unique`.
    - `drift_control`: the Baumgarte terms the motion was computed with (so that
      the reactions belong to its accelerations); None: none.

    **Returns:** a [`redundax.Reactions`][] of the absolute model (`qdd`, `total`
    in its coordinates; `multipliers` zero on the rows the assemblies dropped,
    one valid choice when p > 0, and on natural coordinates' rigid-body rows);
    `method` "DCA". Works under `jax.jit`, `jax.vmap`, `jax.grad`.
    """
    unique, row_unique = verdict_arrays(jm, report)
    return _reactions(jm, structure, q, qd, jnp.asarray(t, dtype=float), drift_control, unique,
                      row_unique)  # fmt: skip


@eqx.filter_jit
def _reactions(jm, structure, q, qd, t, drift_control, unique, row_unique) -> Reactions:
    dyn = dca_dynamics(jm, structure, q, qd, t, drift_control)
    x, xd = jax.jvp(jm.absolute_coordinates, (q,), (qd,))
    terms = dynamics_terms(jm.model, x, xd, t)
    return reactions_of(jm.model, x, terms, dyn.xdd, dyn.multipliers, unique, row_unique, METHOD)


def joint_reaction_history(
    jm: JointModel,
    trajectory,
    report: JointUniquenessReport,
    *,
    memory_budget: int | None = None,
) -> Reactions:
    """[`joint_reactions`][redundax.joint_coordinates.joint_reactions] at every saved state of a
    [`redundax.JointTrajectory`][], with its structure and drift control, in chunks
    within `memory_budget` bytes (as [`redundax.reaction_history`][]).

    **Returns:** a [`redundax.Reactions`][] with a leading time axis.
    """
    unique, row_unique = verdict_arrays(jm, report)
    batch = chunk_size(jm.model, trajectory.ts.shape[0], memory_budget)
    return _history(jm, trajectory, unique, row_unique, batch)


@eqx.filter_jit
def _history(jm, trajectory, unique, row_unique, batch: int):
    structure, drift = trajectory.structure, trajectory.drift_control

    def one(state):
        q, qd, t = state
        return _reactions(jm, structure, q, qd, t, drift, unique, row_unique)

    return jax.lax.map(one, (trajectory.q, trajectory.qd, trajectory.ts), batch_size=batch)
