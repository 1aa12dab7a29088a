"""Pairs given by your own residual: holonomic (positions) and linear
nonholonomic (velocities), planar or spatial; their derivatives come from autodiff."""

import dataclasses
from collections.abc import Callable
from typing import Any

from .._pairs import CustomHolonomicConstraint, CustomPfaffianConstraint
from .._spec_fields import Problems, custom_params


@dataclasses.dataclass(frozen=True)
class CustomHolonomic:
    """Any other holonomic pair: `residual(params, qb, t) -> (size,)` where `qb`
    stacks the coordinates [x, y, φ] of `bodies` (shape `(len(bodies), 3)`).
    Write it with `jax.numpy`; its derivatives come from autodiff."""

    name: str
    bodies: tuple[str, ...]
    residual: Callable[..., Any]
    size: int
    params: Any = None

    kind = "custom"

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(f"row {k + 1}" for k in range(int(self.size)))

    def _member(self, p: Problems, index, rows):
        return CustomHolonomicConstraint(
            bodies=index(self, ("bodies",)),
            rows=rows,
            fn=self.residual,
            params=custom_params(self.params),
        )


@dataclasses.dataclass(frozen=True)
class CustomPfaffian:
    """Any other linear nonholonomic pair: `velocity_residual(params, qb, qdb) ->
    (size,)`, linear in `qdb`."""

    name: str
    bodies: tuple[str, ...]
    velocity_residual: Callable[..., Any]
    size: int
    params: Any = None

    kind = "custom-pfaffian"

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(f"row {k + 1}" for k in range(int(self.size)))

    def _member(self, p: Problems, index, rows):
        return CustomPfaffianConstraint(
            bodies=index(self, ("bodies",)),
            rows=rows,
            fn=self.velocity_residual,
            params=custom_params(self.params),
        )
