"""Prescribed motions d(t) of drivers and load profiles: constant, polynomial, smooth steps
(C² ramps between given values, whose knots the step-size controller steps onto), or a
function of your own.
"""

from ._motion import (
    AbstractMotion as AbstractMotion,
    Constant as Constant,
    Function as Function,
    Polynomial as Polynomial,
    SmoothSteps as SmoothSteps,
)

__all__ = [
    "AbstractMotion",
    "Constant",
    "Function",
    "Polynomial",
    "SmoothSteps",
]
