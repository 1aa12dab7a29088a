"""Planar pairs and drivers (absolute coordinates x, y, θ per body): the specs a
planar [`redundax.Mechanism`][] is built from."""

import dataclasses
from collections.abc import Sequence
from typing import Any

from .._motion import AbstractMotion
from .._pairs import (
    KnifeEdgeConstraint,
    RevoluteConstraint,
    RevoluteDriverConstraint,
    TranslationalConstraint,
    TranslationalDriverConstraint,
    WeldConstraint,
)
from .._spec_fields import Problems, motion_field, unit_vector

Vector = Sequence[float] | Any


@dataclasses.dataclass(frozen=True)
class Revolute:
    """Revolute joint: point `point_i` of `body_i` coincides with `point_j` of
    `body_j` (body-frame coordinates [m]). 2 rows: global x, y."""

    name: str
    body_i: str
    body_j: str
    point_i: Vector = (0.0, 0.0)
    point_j: Vector = (0.0, 0.0)

    kind = "revolute"
    size = 2
    components = ("force x", "force y")

    def _member(self, p: Problems, index, rows):
        return RevoluteConstraint(
            bodies=index(self, ("body_i", "body_j")),
            rows=rows,
            s_i=p.vector(self.point_i, 2, f"pair {self.name!r} field 'point_i'"),
            s_j=p.vector(self.point_j, 2, f"pair {self.name!r} field 'point_j'"),
        )


@dataclasses.dataclass(frozen=True)
class Translational:
    """Translational (prismatic) joint. `normal` is a body-j vector perpendicular
    to the sliding axis; `angle` is the constant φ_i − φ_j [rad]. 2 rows."""

    name: str
    body_i: str
    body_j: str
    point_i: Vector = (0.0, 0.0)
    point_j: Vector = (0.0, 0.0)
    normal: Vector = (0.0, 1.0)
    angle: float = 0.0

    kind = "translational"
    size = 2
    components = ("normal force on body_j along n", "moment")

    def _member(self, p: Problems, index, rows):
        where = f"pair {self.name!r} field"
        return TranslationalConstraint(
            bodies=index(self, ("body_i", "body_j")),
            rows=rows,
            s_i=p.vector(self.point_i, 2, f"{where} 'point_i'"),
            s_j=p.vector(self.point_j, 2, f"{where} 'point_j'"),
            normal=unit_vector(p, self.normal, f"{where} 'normal'"),
            angle=p.scalar(self.angle, f"{where} 'angle'"),
        )


@dataclasses.dataclass(frozen=True)
class Weld:
    """Weld (fixed) joint: coincident points and constant relative angle. 3 rows."""

    name: str
    body_i: str
    body_j: str
    point_i: Vector = (0.0, 0.0)
    point_j: Vector = (0.0, 0.0)
    angle: float = 0.0

    kind = "weld"
    size = 3
    components = ("force x", "force y", "moment")

    def _member(self, p: Problems, index, rows):
        where = f"pair {self.name!r} field"
        return WeldConstraint(
            bodies=index(self, ("body_i", "body_j")),
            rows=rows,
            s_i=p.vector(self.point_i, 2, f"{where} 'point_i'"),
            s_j=p.vector(self.point_j, 2, f"{where} 'point_j'"),
            angle=p.scalar(self.angle, f"{where} 'angle'"),
        )


@dataclasses.dataclass(frozen=True)
class TranslationalDriver:
    """Prescribed displacement: (P_j − P_i) · R_j u = d(t), with `direction` u a
    body-j vector and P the two points. 1 row."""

    name: str
    body_i: str
    body_j: str
    motion: AbstractMotion
    point_i: Vector = (0.0, 0.0)
    point_j: Vector = (0.0, 0.0)
    direction: Vector = (1.0, 0.0)

    kind = "translational-driver"
    size = 1
    components = ("driving force on body_j along u",)

    def _member(self, p: Problems, index, rows):
        where = f"pair {self.name!r} field"
        return TranslationalDriverConstraint(
            bodies=index(self, ("body_i", "body_j")),
            rows=rows,
            s_i=p.vector(self.point_i, 2, f"{where} 'point_i'"),
            s_j=p.vector(self.point_j, 2, f"{where} 'point_j'"),
            direction=unit_vector(p, self.direction, f"{where} 'direction'"),
            motion=motion_field(p, self.motion, f"{where} 'motion'"),
        )


@dataclasses.dataclass(frozen=True)
class RevoluteDriver:
    """Prescribed relative angle φ_i − φ_j = d(t) [rad]. 1 row."""

    name: str
    body_i: str
    body_j: str
    motion: AbstractMotion

    kind = "revolute-driver"
    size = 1
    components = ("driving torque",)

    def _member(self, p: Problems, index, rows):
        return RevoluteDriverConstraint(
            bodies=index(self, ("body_i", "body_j")),
            rows=rows,
            motion=motion_field(p, self.motion, f"pair {self.name!r} field 'motion'"),
        )


@dataclasses.dataclass(frozen=True)
class KnifeEdge:
    """Knife edge on `body` at `point`, with `normal` the body-frame unit vector
    across the edge: the contact point has no velocity along the normal. 1 row."""

    name: str
    body: str
    point: Vector = (0.0, 0.0)
    normal: Vector = (0.0, 1.0)

    kind = "knife-edge"
    size = 1
    components = ("lateral force",)

    def _member(self, p: Problems, index, rows):
        where = f"pair {self.name!r} field"
        return KnifeEdgeConstraint(
            bodies=index(self, ("body",)),
            rows=rows,
            point=p.vector(self.point, 2, f"{where} 'point'"),
            normal=unit_vector(p, self.normal, f"{where} 'normal'"),
        )
