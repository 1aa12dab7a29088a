"""Saved states at given times, written by the solver itself.

`diffrax.SaveAt(ts=...)` interpolates each accepted step's dense output at the
save times it passes, as done here; it also checks the save times inside the
program with `eqx.error_if`, which JAX compiles to two host callbacks even where
the times are constants of the program. A program with a host callback is never
written to JAX's persistent compilation cache, and it cannot be exported for
another platform (`jax.export(..., platforms=["cuda"])` from a CPU host: checked
with Diffrax 0.7.2). redundax checks the save times on the host before the run
(`simulate`'s arguments) and saves with `SavedAt`, a solver wrapper that keeps
the saved states in its solver state: Diffrax keeps the solver state of accepted
steps only, so a rejected step saves nothing, exactly as `SaveAt(ts=...)`. Same
interpolation, same states, no callback.

The save loop is Equinox's checkpointed while loop (`equinox.internal.while_loop`),
as Diffrax's own save loop: a plain `lax.while_loop` cannot be differentiated in
reverse mode, and a `lax.scan` over every save time at every step would cost
O(number of saved times) per step.
"""

import diffrax
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._wrapped_solver import AbstractDelegatingSolver, around


class SavedAt(AbstractDelegatingSolver):
    """A Diffrax solver that steps like `solver` and, after every step, writes the
    state at each save time the step passed — interpolated from the step's dense
    output, as `diffrax.SaveAt(ts=...)` — into the second half of its solver
    state: `(next save index, saved states)`, `inf` where not reached. Read it
    with `saved_states` from a solve with `SaveAt(solver_state=True)`.

    `ts`: the save times, in Diffrax's internal time (multiplied by the direction
    of integration, see `internal_times`), non-decreasing."""

    solver: diffrax.AbstractSolver
    ts: Float[Array, " T"]

    def init(self, terms, t0, t1, y0, args):
        unsaved = jax.tree.map(
            lambda x: jnp.full((self.ts.shape[0], *jnp.shape(x)), jnp.inf, jnp.result_type(x)),
            y0,
        )
        index = jnp.asarray(0, dtype=jnp.int32)
        return self.solver.init(terms, t0, t1, y0, args), (index, unsaved)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        state, saved = solver_state
        y1, error, dense, state, result = self.solver.step(
            terms, t0, t1, y0, args, state, made_jump
        )
        interpolation = self.solver.interpolation_cls(t0=t0, t1=t1, **dense)
        ts = self.ts
        n = ts.shape[0]

        def passed(carry):
            index, _ = carry
            return (index < n) & (ts[jnp.minimum(index, n - 1)] <= t1)

        def save(carry):
            index, states = carry
            y = interpolation.evaluate(ts[index])
            # `y` leads: the buffers are pytree nodes of their own inside the loop.
            states = jax.tree.map(lambda x, buffer: buffer.at[index].set(x), y, states)
            return index + 1, states

        saved = eqxi.while_loop(
            passed,
            save,
            saved,
            max_steps=n,
            buffers=lambda carry: carry[1],
            kind="checkpointed",
            checkpoints=n,
        )
        return y1, error, dense, (state, saved), result


def internal_times(ts: Float[Array, " T"]) -> Float[Array, " T"]:
    """Save times as Diffrax steps through them: multiplied by the direction of
    integration (−1 where ts[-1] ≤ ts[0], as `diffeqsolve` turns t0 ≥ t1)."""
    direction = jnp.where(ts[0] < ts[-1], 1, -1)
    return ts * direction


def saved_states(solver_state):
    """`(inner solver state, saved states)` of a `SavedAt` solve's final solver
    state (its saved states `inf` where the solve did not reach their time)."""
    state, (_, states) = solver_state
    return state, states


def save_at(solver: diffrax.AbstractSolver, ts) -> SavedAt:
    """`solver` saving at `ts` (real times), itself an implicit solver when
    `solver` is one (see `redundax._wrapped_solver.around`)."""
    return around(SavedAt, solver, internal_times(jnp.asarray(ts)))
