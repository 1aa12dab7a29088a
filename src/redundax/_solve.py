"""q̈ and λ at one state: the equations of motion solved by a method of handling
redundancy, with the discrete facts taken from the mechanism's [`Structure`][redundax.Structure]."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._equations import Terms, dynamics_terms, stabilised_gamma
from ._friction import with_friction
from ._model import Model
from ._structure import Structure, decide
from ._types import Scalar
from ._validation import check_vector
from .methods import AbstractRedundancyMethod, NullSpace
from .methods._specialise import checked


def solve_terms(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    drift_control=None,
) -> tuple[Terms, Float[Array, " nq"], Float[Array, " nc"]]:
    """`(terms, qdd, lam)` at (q, q̇, t): the shared core of
    [`solve_dynamics`][redundax.equations.solve_dynamics]
    and [`reactions`][redundax.reactions]. `structure` defaults to [`decide`][redundax.decide] at
    (q, t)."""
    if structure is None:
        structure = decide(model, q, t)
    method = checked(method, structure, model)
    return _solve(model, q, qd, jnp.asarray(t, dtype=float), structure, method, drift_control)


# Jitted (t always an array): one program per mechanism and method, called eagerly
# state by state or traced once inside a larger program.
@eqx.filter_jit
def _solve(model, q, qd, t, structure, method, drift_control):
    terms = dynamics_terms(model, q, qd, t)
    gamma = stabilised_gamma(terms, drift_control)
    terms = with_friction(model, method, structure, terms, gamma, q, qd)
    qdd = method.acceleration(terms, gamma, structure)
    return terms, qdd, method.multipliers(terms, gamma, qdd, structure)


def solve_dynamics(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    structure: Structure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    drift_control=None,
) -> tuple[Float[Array, " nq"], Float[Array, " nc"]]:
    """Accelerations q̈ and multipliers λ at (q, q̇, t) by `method`.

    **Arguments:**

    - `model`, `q`, `qd`, `t`: the mechanism and its state [m, rad, s].
    - `structure`: the mechanism's [`Structure`][redundax.Structure] (default:
      [`decide`][redundax.decide] at (q, t);
      pass the one decided at the initial state of a motion).
    - `method`: how redundant constraints are handled (default
      [`NullSpace`][redundax.methods.NullSpace]).
    - `drift_control`: a drift-control term for Γ (e.g. [`Baumgarte`][redundax.drift.Baumgarte]) or
      None.

    **Returns:** `(qdd, lam)`, shapes `(nq,)` and `(m + h,)`.
    """
    check_vector(q, model.n_coordinates, "q", "solve_dynamics")
    check_vector(qd, model.n_coordinates, "qd", "solve_dynamics")
    _, qdd, lam = solve_terms(
        model, q, qd, t, structure=structure, method=method, drift_control=drift_control
    )
    return qdd, lam
