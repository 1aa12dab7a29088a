"""Forward dynamics in joint coordinates by the divide-and-conquer algorithm.

[`decide_joint`][redundax.joint_coordinates.decide_joint] takes the discrete decisions once, at a
state (the assembly tree,
its static plan, which crossing rows each assembly keeps), as [`redundax.decide`][]
does for absolute coordinates; [`dca_dynamics`][redundax.joint_coordinates.dca_dynamics] then
evaluates the four passes of
Featherstone's DCA at any state: the preliminary passes (positions and velocities
of the bodies from the joint coordinates, by pointer jumping), the main pass
(leaves → root, articulated equations of the subassemblies) and the
back-substitution (root → leaves, multipliers and body accelerations), and maps
the body accelerations back to q̈ joint by joint.
"""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._model import State
from .._qr import DECISION_RTOL
from .._types import Scalar
from ..drift._baumgarte import Baumgarte
from ._dca import (
    ActiveRows,
    AssemblyNode,
    DcaPlan,
    assembly_nodes,
    assembly_tree,
    dca_plan,
    dca_solve,
    decide_active_rows,
)
from ._kinematics import joint_accelerations
from ._model import JointModel
from ._terms import RowPlan, body_terms, jitted_body_terms, row_plan


class JointStructure(eqx.Module):
    """The discrete decisions of a joint-coordinate model, taken once (static).

    - `rows`: the rows carried and their bodies (`RowPlan`).
    - `plan`: the assembly tree and its padded plan.
    - `active`: per assembly, the crossing rows kept; the dropped ones number p.
    """

    rows: RowPlan
    plan: DcaPlan
    active: ActiveRows

    @property
    def redundancy(self) -> int:
        """p, the degree of redundancy: rows dropped by the assemblies."""
        return self.active.n_redundant

    @property
    def assemblies(self) -> tuple[AssemblyNode, ...]:
        """Every assembly of the tree, leaves to root: its two children, parent,
        height, bodies, the rows it owns (`crossing`, indices into `rows.rows`) and
        how many of them it drops (`nullity`)."""
        return assembly_nodes(self.plan, self.active)


def decide_joint(
    jm: JointModel,
    state: State,
    *,
    order: Sequence | None = None,
    ground: str = "split",
    rtol: float = DECISION_RTOL,
) -> JointStructure:
    """Decide, at the joint-coordinate `state`, the assembly tree (balanced, or the
    nested body `order` given) and the rows each assembly keeps.

    **Arguments:**

    - `jm`: the model; `state`: a joint-coordinate state at a regular
      configuration (the rank of the constraints is decided here).
    - `order`: nested tuples of body names or indices, e.g. `(("crank", "coupler"),
      "rocker")`; default: balanced, following the connectivity.
    - `ground`: "split" (default): every body with a joint to the ground is first
      assembled with its own copy of the ground (the ground is fixed, so copies are
      exact), which keeps every assembly's handles O(1) for mechanisms with many
      ground joints (A02's chain: 744 µs per solve at N = 64 instead of a cubic
      growth); "root": the whole mechanism is joined to the ground last, as in seed
      002's Fig. 1 (its propagation then starts with the reactions to the base).
      Verdicts and accelerations are the same either way.
    - `rtol`: the rank decision's relative tolerance.
    """
    model = jm.model
    rows = row_plan(model)
    pairs = tuple(zip(rows.body_a, rows.body_b, strict=True))
    tree = assembly_tree(model.bodies.count, pairs, _indices(model, order), ground=ground)
    plan = dca_plan(tree, rows.body_a, rows.body_b, rows.pair_of_row)
    terms = jitted_body_terms(jm, rows, state.q, state.qd, state.t)
    active = decide_active_rows(
        plan, np.asarray(terms.inertia), np.asarray(terms.G_a), np.asarray(terms.G_b), rtol=rtol
    )
    return JointStructure(rows=rows, plan=plan, active=active)


def _indices(model, order):
    if order is None:
        return None
    if isinstance(order, str):
        return model.body_index(order)
    if isinstance(order, int):
        return order
    return tuple(_indices(model, o) for o in order)


class JointDynamics(eqx.Module):
    """The solution of the equations of motion at one joint-coordinate state.

    - `qdd`: joint accelerations.
    - `multipliers`: λ per row of the absolute model's C (zero on the rigid-body
      rows of natural coordinates, which joint coordinates hold identically, and on
      the rows the assemblies dropped: one valid λ among all when p > 0).
    - `accelerations`: the bodies' twist rates (v̇, ω̇), `(nb, d)`.
    - `xdd`: the absolute coordinates' accelerations.
    """

    qdd: Float[Array, " nj"]
    multipliers: Float[Array, " nc"]
    accelerations: Float[Array, "nb d"]
    xdd: Float[Array, " nq"]


@eqx.filter_jit
def dca_dynamics(
    jm: JointModel,
    structure: JointStructure,
    q: Float[Array, " nj"],
    qd: Float[Array, " nj"],
    t: Scalar,
    drift_control: Baumgarte | None = None,
) -> JointDynamics:
    """q̈, the multipliers and the body accelerations at (q, q̇, t) by the DCA.

    `drift_control`: Baumgarte's terms −2α (C ẋ + b) − β² Φ added to γ of the
    carried rows, from the same terms (None: none).
    """
    terms = body_terms(jm, structure.rows, q, qd, t)
    gamma = terms.gamma
    if drift_control is not None:
        gamma = (
            gamma
            - 2.0 * drift_control.alpha * terms.velocity_error
            - drift_control.beta**2 * terms.phi
        )
    sol = dca_solve(
        structure.plan, structure.active, terms.inertia, terms.bias, terms.G_a, terms.G_b, gamma
    )
    xdd = jnp.einsum("bkd,bd->bk", terms.E, sol.accelerations) + terms.edot
    XDD = jnp.concatenate([xdd, jnp.zeros((1, xdd.shape[1]))])
    qdd = jnp.zeros(jm.n_coordinates)
    for group in jm.joints:
        if group.coordinates.shape[1]:
            qdd = qdd.at[group.coordinates].set(
                joint_accelerations(group, jm.model, q, qd, terms.x, terms.xd, XDD)
            )
    carried = np.asarray(structure.rows.rows, dtype=int)
    lam = jnp.zeros(jm.model.n_constraints).at[carried].set(sol.multipliers)
    return JointDynamics(
        qdd=qdd, multipliers=lam, accelerations=sol.accelerations, xdd=xdd.reshape(-1)
    )
