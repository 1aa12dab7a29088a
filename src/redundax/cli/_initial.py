"""The state a command starts from: the file's initial state, projected onto the
constraints first when its `[simulation]` table says `initial = "project"`, as
[`redundax.simulate`][] does (`redundax simulate` and `redundax analyze` alike)."""

import numpy as np

from .. import Model, State
from .._options import initial_projection
from .._simulate import _initial_state, raise_if_not_projected
from ..io.config import Config
from ._programs import cached_call


def _start(model: Model, state: State, initial_projection):
    """`(q, q̇, correction, (Φ, C q̇ + b))`: the state a run of `redundax.simulate`
    starts from (projected when `initial_projection` is given), max |Δq|, |Δq̇| of the
    projection (zeros without one) and the constraint residuals of that state."""
    q, qd, correction, phi, vel = _initial_state(model, state, initial_projection)
    return q, qd, correction, (phi, vel)


def check_projected(config: Config, residuals) -> None:
    """Refuse, as `redundax.simulate` does, a state that the initial projection could
    not bring onto the constraints (`ModelError`: "the initial state could not be
    projected ..."); nothing without an initial projection (the loader refused an
    inconsistent state then)."""
    if initial_projection(config.simulation.initial) is not None:
        raise_if_not_projected(config.model, *residuals, config.simulation.initial.tol)


def initial_state(cache, config: Config) -> tuple[State, list[float]]:
    """The state of `config` a run starts from, checked (see `check_projected`),
    and max |Δq|, |Δq̇| of its projection (`[0.0, 0.0]` without one)."""
    state = config.state
    q, qd, correction, residuals = cached_call(
        cache, _start, config.model, state, initial_projection(config.simulation.initial)
    )
    check_projected(config, residuals)
    return State(state.t, q, qd), [float(x) for x in np.asarray(correction)]
