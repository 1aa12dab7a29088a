"""Compliant semi-implicit Euler stepping with optional projection (González,
Kövecses, Teichmann & Courchesne 2011, Eqs. 1–3; Lacoursière 2006; DESIGN.md §2).

One step of size h from (q, v, t), with v = q̇ (absolute or natural coordinates:
N = I and no Coriolis or centrifugal vector), A = C(q, t), b = [Φ_t; 0], and the
library's sign convention M q̈ + Cᵀ λ = F for the multipliers λ:

    [ M    Aᵀ ] [ v₊ ]   [ M v + h F(q, v, t)       ]
    [ A   −C̄  ] [ μ  ] = [ −Φ(q, t)/(h + τ) − b     ],   q₊ = q + h v₊,

with μ = h λ₊ the constraint impulse over the step, and the diagonal matrices

    C̄ = diag(c_i / (h (h + τ_i))),   B̄ = −diag(1 / (h + τ_i)).

Derivation. A compliant row is a Kelvin–Voigt spring-damper of compliance c_i
and relaxation (damping) time τ_i: c_i λ_i = Φ_i + τ_i Φ̇_i. Evaluated at the end
of the step with the linearisations Φ(q₊, t + h) ≈ Φ + h (A v₊ + b) and
Φ̇₊ ≈ A v₊ + b, it reads c λ₊ = Φ + (h + τ)(A v₊ + b), which is the second block
row above. With μ_G = −μ (González's multipliers enter as −Aᵀ) this is exactly
González et al.'s Eq. (1): A v₊ + C̄ μ_G = B̄ Φ, plus the term −b that a rheonomic
constraint adds. Pfaffian rows have no Φ; their position-level residual is taken
as zero at the start of every step (a viscous row c λ = (h + τ) Ψ v₊).

- Rigid limit, c → 0: A v₊ + b = −Φ/(h + τ): the velocity constraints with a
  drift correction that, for τ = 0, removes the linearised violation in one step.
- Uniqueness: eliminating v₊ gives S μ = A ṽ + b + Φ/(h + τ) with
  S = A M⁻¹ Aᵀ + C̄ and ṽ = v + h M⁻¹ F. S is positive definite, so μ is unique,
  whenever the rows of zero compliance are linearly independent, in particular
  for every c > 0 even when A is rank-deficient (redundant constraints).
- With c = 0 on dependent rows S is singular; `simulate` refuses this at
  the edge rather than regularise silently: give those rows a compliance > 0, which
  is a regularisation with a physical meaning (the projection does not help: it
  acts after the step, whose matrix is the singular one).

Lacoursière's SPOOK stepper (2007) is a variational discretisation of the same
spring-damper with factors of 4 and an extra Υ A v term on the right-hand side; it
is not the form of González et al.'s Eq. (1) and is not what is implemented here.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._assembly import (
    constraint_matrix,
    generalized_forces,
    mass_matrix,
    position_residual,
    potential_energy,
    velocity_bias,
)
from ._friction import refuse_friction
from ._integration import AbstractTrajectory
from ._model import Model, State
from ._qr import DECISION_RTOL, independent_rows, pivoted_qr
from ._validation import host_values, known
from .drift._projection import weighted_pinv_step


class Compliance(eqx.Module):
    """Per-row compliance and damping of the constraints (González et al. 2011,
    the diagonal C̄_Φ and B̄_Φ of Eq. 1).

    - `compliance`: c_i ≥ 0, a scalar for every row or one value per row of C
      (shape `(m + h,)`), in [m/N] for rows whose residual is a length and
      [rad/(N m)] for angular rows (the inverse of a joint stiffness). 0 is rigid.
    - `damping_time`: τ_i ≥ 0 [s], the relaxation time of a Kelvin–Voigt row
      c_i λ_i = Φ_i + τ_i Φ̇_i (damping coefficient τ_i / c_i); scalar or per row.
      In the rigid limit it sets how fast drift is corrected, Φ/(h + τ).

    Build per-row arrays from pair names with
    [`Compliance.from_pairs`][redundax.Compliance.from_pairs].

    **Raises:** `ValueError` naming the field for negative or non-finite values or
    arrays of more than one dimension (values are checked when concrete).
    """

    compliance: Float[Array, "..."]
    damping_time: Float[Array, "..."]

    def __init__(
        self,
        compliance: Float[ArrayLike, "..."] = 0.0,
        damping_time: Float[ArrayLike, "..."] = 0.0,
    ):
        self.compliance = jnp.asarray(compliance, dtype=float)
        self.damping_time = jnp.asarray(damping_time, dtype=float)

    def __check_init__(self):
        problems = []
        for name in ("compliance", "damping_time"):
            value = getattr(self, name)
            if value.ndim > 1:
                problems.append(
                    f"Compliance field {name!r}: expected a scalar or one value per "
                    f"constraint row, got shape {value.shape}"
                )
            elif host_values(value) is not None:
                v = np.asarray(value)
                if not np.all(np.isfinite(v)) or np.any(v < 0.0):
                    problems.append(
                        f"Compliance field {name!r}: values must be finite and ≥ 0, got "
                        f"{np.array2string(v, threshold=8)}"
                    )
        if problems:
            raise ValueError("\n".join(problems))

    @classmethod
    def from_pairs(
        cls,
        model: Model,
        compliance: dict[str, float] | float = 0.0,
        damping_time: dict[str, float] | float = 0.0,
        *,
        default_compliance: float = 0.0,
        default_damping_time: float = 0.0,
    ) -> "Compliance":
        """Per-row arrays from values per kinematic pair.

        **Arguments:**

        - `model`: the mechanism; its `pairs` give each pair's rows of C.
        - `compliance`: `{pair name: c}` [m/N or rad/(N m)], or one value for all.
        - `damping_time`: `{pair name: τ}` [s], or one value for all.
        - `default_compliance`, `default_damping_time`: for pairs not named.

        The bodies' internal rows (the rigid-body constraints of spatial bodies in
        natural coordinates, `model.internal_rows`) belong to no pair: they get
        compliance 0 (rigid bodies) and `default_damping_time`.

        **Returns:** a `Compliance` with arrays of shape `(m + h,)`.

        **Raises:** `ValueError` naming unknown pairs.

        !!! example
            ```python
            comp = rx.Compliance.from_pairs(model, {"A3": 1e-8}, damping_time=1e-3)
            ```
        """
        known = set(model.pair_names)
        arrays = []
        for what, values, default in (
            ("compliance", compliance, default_compliance),
            ("damping_time", damping_time, default_damping_time),
        ):
            if not isinstance(values, dict):
                values, default = {}, float(values)
            unknown = sorted(set(values) - known)
            if unknown:
                raise ValueError(
                    f"Compliance.from_pairs field {what!r}: unknown pair(s) "
                    f"{', '.join(map(repr, unknown))}; known pairs: {', '.join(model.pair_names)}"
                )
            out = np.full(model.n_constraints, float(default))
            if what == "compliance":
                out[list(model.internal_rows)] = 0.0
            for pair in model.pairs:
                if pair.name in values:
                    out[list(pair.rows)] = float(values[pair.name])
            arrays.append(out)
        return cls(arrays[0], arrays[1])


class GonzalezStepper(eqx.Module):
    """González et al.'s compliant semi-implicit Euler scheme (2011, Eq. 1) as the
    `solver` of [`redundax.simulate`][]: fixed steps of `h` [s], the constraints
    as stiff springs of [`Compliance`][redundax.Compliance] `compliance` (default: rigid),
    optionally followed by a projection of positions and velocities onto the constraints
    (Eqs. 2–3). Returns a [`GonzalezTrajectory`][redundax.GonzalezTrajectory].

    - `h`: step size [s]; the run's length must be a whole number of steps.
    - `compliance`: per-row compliance and damping time; rows of zero compliance
      must be linearly independent (a redundant rigid row is refused by name).
    - `projection`: after each step, project q onto Φ = 0 by q ← q − W Φ(q), then
      v ← v − W (C v + b), W = L⁻¹ (A L⁻¹)⁺, M = Lᵀ L, with ranks decided once at
      the initial state by pivoted QR.
    - `projection_tol`: stop iterating when max |Φ| ≤ this [m, rad];
      `max_projection_iterations`: the iteration's fixed length (masked after
      convergence, so the loop is reverse-differentiable).

    All fields but `compliance` are static (Python numbers).

    !!! example
        ```python
        stepper = rx.GonzalezStepper(h=1e-3, compliance=rx.Compliance(1e-9))
        ```
    """

    h: float = eqx.field(static=True, default=1e-2)
    compliance: Compliance | None = None
    projection: bool = eqx.field(static=True, default=False)
    projection_tol: float = eqx.field(static=True, default=1e-12)
    max_projection_iterations: int = eqx.field(static=True, default=8)

    def __check_init__(self):
        problems = []
        if not (isinstance(self.h, float | int) and self.h > 0.0):
            problems.append(f"field 'h': the step size must be a number > 0, got {self.h!r}")
        if isinstance(self.max_projection_iterations, bool) or not (
            isinstance(self.max_projection_iterations, int) and self.max_projection_iterations >= 1
        ):
            problems.append(
                "field 'max_projection_iterations': expected an integer ≥ 1, got "
                f"{self.max_projection_iterations!r}"
            )
        if problems:
            raise ValueError("GonzalezStepper " + "; ".join(problems))


class GonzalezTrajectory(AbstractTrajectory):
    """A motion computed by [`GonzalezStepper`][redundax.GonzalezStepper] (through
    [`redundax.simulate`][]), sampled every `save_every` steps.

    - `ts` (T,), `q`, `qd` (T, nq): saved states.
    - `position_violation` (T,): max |Φ| [m or rad] at each saved time.
    - `velocity_violation` (T,): max |C q̇ + b| (holonomic and Pfaffian rows).
    - `energy` (T,): kinetic + potential energy of gravity and the constant loads
      [J]; the elastic energy stored in compliant rows is not included.
    - `multipliers` (T, nc): λ of the step that *starts* at each saved state
      (force over [t_k, t_k + h], convention M q̈ + Cᵀ λ = F; the last one is the
      step after `ts[-1]`, solved but not taken).
    - `projection_converged`: every projection met `projection_tol` (True when the
      projection is off).
    - `num_steps`: steps taken.
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nq"]
    qd: Float[Array, "T nq"]
    position_violation: Float[Array, " T"]
    velocity_violation: Float[Array, " T"]
    energy: Float[Array, " T"]
    multipliers: Float[Array, "T nc"]
    projection_converged: Bool[Array, ""]
    num_steps: Int[Array, ""]


def _step(model: Model, G, c, tau, h: float, q, v, t):
    """One step of Eq. (1): returns (q₊, v₊, λ₊) and, for free, the diagnostics of
    the starting state (max |Φ|, max |C v + b|, energy). `G` is the lower Cholesky
    factor of the (constant) mass matrix, M = G Gᵀ."""
    F = generalized_forces(model, q, v, t)
    v_free = v + h * jax.scipy.linalg.cho_solve((G, True), F)
    Gv = G.T @ v
    energy = 0.5 * Gv @ Gv + potential_energy(model, q)
    nc, m = model.n_constraints, model.n_holonomic
    if nc == 0:
        zero = jnp.zeros(())
        return q + h * v_free, v_free, jnp.zeros(0), (zero, zero, energy)
    A = constraint_matrix(model, q, t)
    b = velocity_bias(model, q, t)
    phi = jnp.concatenate([position_residual(model, q, t), jnp.zeros(nc - m)])
    K = jax.scipy.linalg.solve_triangular(G, A.T, lower=True)  # G⁻¹ Aᵀ
    S = K.T @ K + jnp.diag(c / (h * (h + tau)))  # A M⁻¹ Aᵀ + C̄
    rhs = A @ v_free + b + phi / (h + tau)
    mu = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(S, lower=True), rhs)
    v_new = v_free - jax.scipy.linalg.solve_triangular(G.T, K @ mu, lower=False)
    record = (jnp.max(jnp.abs(phi)), jnp.max(jnp.abs(A @ v + b)), energy)
    return q + h * v_new, v_new, mu / h, record


def _project(model: Model, M, q, v, t, ranks, tol: float, iterations: int):
    """Seed Eqs. 2–3: q ← q − W Φ(q) until max |Φ| ≤ tol (a loop of fixed length
    `iterations` whose later iterations are skipped, so that reverse-mode
    derivatives exist), then v ← v − W (C v + b); W = L⁻¹ (A L⁻¹)⁺ with the
    ranks fixed at the initial configuration."""
    m = model.n_holonomic
    rank_q, rank_c = ranks
    converged = jnp.asarray(True)
    if m:

        def correct(q):
            A = constraint_matrix(model, q, t)[:m]
            return q - weighted_pinv_step(M, A, position_residual(model, q, t), rank_q)

        def iterate(_, carry):
            q, done = carry
            small = jnp.max(jnp.abs(position_residual(model, q, t))) <= tol
            # `cond` skips the work once converged (under vmap it becomes a select).
            # The iteration that starts within tolerance is still taken: the
            # derivative of an iterate is exact only up to the residual it started
            # from (as for Newton's method), so this makes it accurate to `tol`.
            q = jax.lax.cond(done, lambda q: q, correct, q)
            return q, done | small

        q, _ = jax.lax.fori_loop(0, iterations, iterate, (q, jnp.asarray(False)))
        converged = jnp.max(jnp.abs(position_residual(model, q, t))) <= tol
    if model.n_constraints:
        C = constraint_matrix(model, q, t)
        v = v - weighted_pinv_step(M, C, C @ v + velocity_bias(model, q, t), rank_c)
    return q, v, converged


@eqx.filter_jit
def _simulate_gonzalez(
    model: Model,
    state0: State,
    compliance: Compliance,
    h: float,
    n_saves: int,
    save_every: int,
    projection: bool,
    tol: float,
    iterations: int,
) -> GonzalezTrajectory:
    nc = model.n_constraints
    c = jnp.broadcast_to(compliance.compliance, (nc,))
    tau = jnp.broadcast_to(compliance.damping_time, (nc,))
    # M is constant in absolute and natural coordinates: factorised once.
    M = mass_matrix(model, state0.q)
    G = jnp.linalg.cholesky(M)
    if projection and nc:
        # The ranks are decided once, at the initial configuration (as `simulate`):
        # off the manifold dependent rows are independent only by about the drift.
        C0 = constraint_matrix(model, state0.q, state0.t)
        m = model.n_holonomic
        rank_q = pivoted_qr(C0[:m], DECISION_RTOL).rank if m else jnp.asarray(0)
        ranks = (rank_q, pivoted_qr(C0, DECISION_RTOL).rank)
    t0 = jnp.asarray(state0.t, dtype=float)

    def one_step(carry, _):
        q, v, k, ok = carry
        # Times as t0 + k h, not accumulated: no round-off drift of the clock.
        q, v, lam, record = _step(model, G, c, tau, h, q, v, t0 + k * h)
        k = k + 1
        if projection and nc:
            q, v, converged = _project(model, M, q, v, t0 + k * h, ranks, tol, iterations)
            ok = ok & converged
        return (q, v, k, ok), (lam, record)

    def one_save(carry, _):
        start = carry
        carry, (lams, records) = jax.lax.scan(one_step, carry, None, length=save_every)
        # The state saved, and what the step leaving it found there.
        first = jax.tree.map(lambda x: x[0], (lams, records))
        return carry, (start[:3], first)

    init = (state0.q, state0.qd, jnp.asarray(0, dtype=int), jnp.asarray(True))
    (q1, v1, k1, ok), ((qs, vs, ks), (lams, records)) = jax.lax.scan(
        one_save, init, None, length=n_saves
    )
    # The step after the last saved state is solved (for its λ and diagnostics), not taken.
    last = _step(model, G, c, tau, h, q1, v1, t0 + k1 * h)[2:]

    def append(xs, x):
        return jnp.concatenate([xs, x[None]])

    q, qd, ts = append(qs, q1), append(vs, v1), t0 + append(ks, k1) * h
    lams = append(lams, last[0])
    pos, vel, energy = jax.tree.map(append, records, last[1])
    q = eqx.error_if(
        q,
        ~jnp.all(jnp.isfinite(q)),
        "simulate (GonzalezStepper): non-finite state. If rows with zero compliance are redundant "
        "(linearly dependent), the step matrix A M⁻¹ Aᵀ + C̄ is singular: give them a "
        "compliance > 0; otherwise reduce h.",
    )
    return GonzalezTrajectory(
        ts=ts,
        q=q,
        qd=qd,
        position_violation=pos,
        velocity_violation=vel,
        energy=energy,
        multipliers=lams,
        projection_converged=ok,
        num_steps=jnp.asarray(n_saves * save_every),
    )


@eqx.filter_jit
def _initial_matrix(model: Model, state0: State):
    return constraint_matrix(model, state0.q, state0.t)


def _raise_if_rigid_redundant(model: Model, state0: State, c: np.ndarray) -> None:
    rigid = np.flatnonzero(np.broadcast_to(c, (model.n_constraints,)) == 0.0)
    if rigid.size == 0:
        return
    C0 = np.asarray(_initial_matrix(model, state0))[rigid]
    if len(independent_rows(C0)) == rigid.size:
        return
    names = [p.name for p in model.pairs if set(p.rows) & set(rigid.tolist())]
    raise ValueError(
        "simulate (GonzalezStepper) field 'compliance': the rows with zero compliance (pairs "
        f"{', '.join(map(repr, names))}) are linearly dependent at state0 (redundant "
        "constraints), so the step matrix A M⁻¹ Aᵀ + C̄ is singular and the multipliers "
        "are not determined. Give the redundant pairs a compliance > 0, e.g. "
        "Compliance.from_pairs(model, {name: 1e-9}) or Compliance(1e-9) for every row."
    )


def simulate_gonzalez(
    model: Model,
    state0: State,
    t1: float,
    *,
    h: float = 1e-2,
    compliance: Compliance | None = None,
    projection: bool = False,
    projection_tol: float = 1e-12,
    max_projection_iterations: int = 8,
    save_every: int = 1,
) -> GonzalezTrajectory:
    """Integrate with González et al.'s compliant semi-implicit Euler scheme
    (2011, Eq. 1), optionally projecting positions and velocities onto the
    constraint manifold after every step (Eqs. 2–3).

    Each step solves

        [ M    Aᵀ ] [ v₊  ]   [ M v + h F      ]
        [ A   −C̄  ] [ h λ ] = [ −Φ/(h + τ) − b ]

    with A = C(q, t), b = [Φ_t; 0], Φ padded with zeros on the Pfaffian rows,
    C̄ = diag(c / (h (h + τ))) and the convention M q̈ + Cᵀ λ = F, then sets
    q₊ = q + h v₊ (see the module docstring for the derivation and the link to the
    seed's notation). The Schur
    complement A M⁻¹ Aᵀ + C̄ is solved by Cholesky: λ is unique for c > 0 even when
    the constraints are redundant. First order in h; the constraint forces are
    implicit, so tiny compliances (stiff rows) are stable.

    **Arguments:**

    - `model`: the mechanism; `state0`: its initial [`State`][redundax.State], used as given (a
      violated compliant row starts as a stretched spring).
    - `t1`: the duration [s], a whole number n = t1 / h of steps from `state0.t`
      (the final time when `state0.t` = 0). n is static, so that `state0.t` may be
      traced (batched).
    - `h`: step size [s].
    - `compliance`: a [`Compliance`][redundax.Compliance] (default: rigid, c = 0 and τ = 0). Rows of
      zero compliance must be linearly independent.
    - `projection`: after each step, project q onto Φ(q, t) = 0 by the fixed-point
      iteration q ← q − W Φ(q) and then v ← v − W (C v + b), with
      W = L⁻¹ (A L⁻¹)⁺, M = Lᵀ L, and ranks decided once at `state0` by pivoted QR.
    - `projection_tol`: stop iterating when max |Φ| ≤ this [m, rad].
    - `max_projection_iterations`: the iteration's fixed length (iterations after
      convergence are masked, so the loop is reverse-differentiable).
    - `save_every`: save every this many steps; must divide n.

    `h`, `t1`, `save_every`, `projection`, `projection_tol` and
    `max_projection_iterations` are static (Python numbers).

    **Returns:** a [`GonzalezTrajectory`][redundax.GonzalezTrajectory].

    **Raises:** `ValueError` naming the field for h ≤ 0, t1 ≤ 0 or not a multiple of h,
    `save_every` not dividing the number of steps, a compliance array of the wrong
    length, or (for concrete inputs) zero compliance on redundant rows. At run time
    an error if the state becomes non-finite.

    Jitted; works under `jax.vmap` (over states, models or compliances) and
    `jax.grad` (with respect to model parameters, the initial state or the
    compliance).

    !!! example
        ```python
        model, s0 = mech.build(), mech.initial_state()
        traj = rx.simulate(model, s0, 5.0, solver=rx.GonzalezStepper(h=1e-3,
        compliance=rx.Compliance(1e-9)))
        traj.position_violation.max()
        ```
    """
    refuse_friction(
        model,
        "simulate (GonzalezStepper)",
        "its compliant step takes the applied forces before the multipliers",
    )
    problems = []
    if not h > 0.0:
        problems.append(f"field 'h': the step size must be > 0, got {h}")
    if not t1 > 0.0:
        problems.append(f"field 't1': the final time must be > 0, got {t1}")
    if problems:
        raise ValueError("simulate (GonzalezStepper): " + "; ".join(problems))
    n_steps = round(float(t1) / float(h))
    if n_steps < 1 or abs(n_steps * float(h) - float(t1)) > 1e-9 * float(t1):
        raise ValueError(
            f"simulate (GonzalezStepper) field 't1': must be a whole number of steps h = {h}, "
            f"got {t1}"
        )
    if int(save_every) < 1 or n_steps % int(save_every):
        raise ValueError(
            f"simulate (GonzalezStepper) field 'save_every': must be ≥ 1 and divide the number of "
            f"steps round(t1 / h) = {n_steps}, got {save_every}"
        )
    if int(max_projection_iterations) < 1:
        raise ValueError(
            "simulate (GonzalezStepper) field 'max_projection_iterations': must be ≥ 1, got "
            f"{max_projection_iterations}"
        )
    compliance = Compliance() if compliance is None else compliance
    nc = model.n_constraints
    for name in ("compliance", "damping_time"):
        shape = getattr(compliance, name).shape
        if shape not in ((), (nc,)):
            raise ValueError(
                f"simulate (GonzalezStepper) field 'compliance.{name}': expected a scalar or one "
                f"value per constraint row (m + h = {nc}), got shape {shape}"
            )
    if known(model, state0, compliance.compliance):
        _raise_if_rigid_redundant(model, state0, np.asarray(compliance.compliance))
    return _simulate_gonzalez(
        model,
        state0,
        compliance,
        float(h),
        n_steps // int(save_every),
        int(save_every),
        bool(projection),
        float(projection_tol),
        int(max_projection_iterations),
    )
