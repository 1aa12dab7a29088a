"""The block pattern of S = C M⁻¹ Cᵀ (Kraus, Winckler & Bock 2001, §6) and the seed's
structural diagram of the descriptor matrix (§7, Fig. 3), on mechanisms built here
whose counts follow by hand from their topology:

- a chain: each body carries two pairs, S is block tridiagonal (bandwidth 1), no
  fill-in;
- a tree: the blocks acting on the branching body form a clique (bandwidth = their
  number − 1), and still no fill-in;
- a ring of n bodies off the ground: S is a cycle of n blocks, whose elimination
  triangulates a polygon: n − 3 fill-in blocks at bandwidth 2, linear in n (§6: "up
  to two blocks propagated along the set of bodies in the loop");
- the 6-bar and Bricard: one loop each, but it closes through the ground, which is
  no block: their pairs form a path in S, and nothing fills in.

Host-side only (patterns and figures): no program is compiled.
"""

import collections
import math

import pytest

import redundax as rx
from redundax import models
from redundax.joints import Revolute, Spherical
from redundax.plot import plot_descriptor_pattern


def _pattern(mech: rx.Mechanism):
    model = mech.build()
    return rx.internal.block_pattern(model, rx.analysis.topology(model))


def _link(name: str, a, b) -> rx.Body:
    """A unit planar link from point `a` to point `b`, its frame at its middle."""
    angle = math.atan2(b[1] - a[1], b[0] - a[0])
    middle = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    return rx.Body(name, 1.0, 1.0 / 12.0, position=middle, angle=angle)


def _ball(name: str, position) -> rx.SpatialBody:
    return rx.SpatialBody(name, 1.0, (0.1, 0.1, 0.1), position=position)


def planar_chain(n: int) -> rx.Mechanism:
    """n unit links along x, the first pinned to the ground at the origin."""
    bodies = [_link(f"b{k}", (k, 0.0), (k + 1, 0.0)) for k in range(n)]
    pairs = [Revolute("O", "b0", "ground", (-0.5, 0.0), (0.0, 0.0))]
    pairs += [Revolute(f"J{k}", f"b{k - 1}", f"b{k}", (0.5, 0.0), (-0.5, 0.0)) for k in range(1, n)]
    return rx.Mechanism(bodies, pairs)


def planar_tree(branches: int, length: int) -> rx.Mechanism:
    """A hub pinned to the ground with `branches` chains of `length` links on it."""
    bodies = [rx.Body("hub", 1.0, 0.1)]
    pairs = [Revolute("O", "hub", "ground")]
    for b in range(branches):
        turn = 2 * math.pi * b / branches
        u = (math.cos(turn), math.sin(turn))
        for k in range(length):
            bodies.append(
                _link(f"b{b}_{k}", (k * u[0], k * u[1]), ((k + 1) * u[0], (k + 1) * u[1]))
            )
            parent, at = ("hub", (0.0, 0.0)) if k == 0 else (f"b{b}_{k - 1}", (0.5, 0.0))
            pairs.append(Revolute(f"J{b}_{k}", parent, f"b{b}_{k}", at, (-0.5, 0.0)))
    return rx.Mechanism(bodies, pairs)


def spatial_tree(branches: int, length: int) -> rx.Mechanism:
    """A hub on a spherical joint at the origin with `branches` chains of `length`
    bodies on it, spherical joints between them (natural coordinates: each body also
    has its block of rigid-body rows)."""
    bodies = [_ball("hub", (0.0, 0.0, 0.0))]
    pairs = [Spherical("O", "hub", "ground", point=(0.0, 0.0, 0.0))]
    for b in range(branches):
        for k in range(length):
            bodies.append(_ball(f"b{b}_{k}", (float(b), k + 1.0, 0.0)))
            parent = "hub" if k == 0 else f"b{b}_{k - 1}"
            pairs.append(Spherical(f"J{b}_{k}", parent, f"b{b}_{k}", point=(b, k + 0.5, 0.0)))
    return rx.Mechanism(bodies, pairs)


def planar_ring(n: int) -> rx.Mechanism:
    """n unit links pinned into a regular n-gon, not attached to the ground."""
    radius = 0.5 / math.sin(math.pi / n)
    corner = [
        (radius * math.cos(2 * math.pi * k / n), radius * math.sin(2 * math.pi * k / n))
        for k in range(n)
    ]
    bodies = [_link(f"l{k}", corner[k], corner[(k + 1) % n]) for k in range(n)]
    pairs = [
        Revolute(f"J{k}", f"l{k}", f"l{(k + 1) % n}", (0.5, 0.0), (-0.5, 0.0)) for k in range(n)
    ]
    return rx.Mechanism(bodies, pairs)


def spatial_ring(n: int) -> rx.Mechanism:
    """n spatial bodies on a circle, each joined to the next by a spherical joint
    half-way between them, not attached to the ground."""

    def at(x: float) -> tuple[float, float, float]:
        return (math.cos(2 * math.pi * x / n), math.sin(2 * math.pi * x / n), 0.0)

    bodies = [_ball(f"l{k}", at(k)) for k in range(n)]
    pairs = [Spherical(f"S{k}", f"l{k}", f"l{(k + 1) % n}", point=at(k + 0.5)) for k in range(n)]
    return rx.Mechanism(bodies, pairs)


@pytest.mark.parametrize("n", [2, 5, 12])
def test_a_chain_is_block_tridiagonal(n):
    # Planar: one block per pair; pair k shares a body with pairs k − 1 and k + 1 only.
    pattern = _pattern(planar_chain(n))
    assert pattern.n_blocks == n
    assert not pattern.fill
    assert pattern.bandwidth == 1
    # Spatial (natural coordinates): a body's rigid-body block is a third block on
    # it, coupled to the body's two joints: bandwidth 2, still no fill-in.
    pattern = _pattern(models.spherical_chain(n))
    assert pattern.n_blocks == 2 * n
    assert not pattern.fill
    assert pattern.bandwidth == 2


@pytest.mark.parametrize(("branches", "length"), [(3, 1), (3, 3), (4, 2), (5, 4)])
def test_a_tree_couples_the_blocks_at_its_branching_body(branches, length):
    # The hub carries its ground pin and the first pair of every branch: a clique of
    # branches + 1 blocks, whose first eliminated block is coupled to the others; the
    # branches are chains (bandwidth 1).
    pattern = _pattern(planar_tree(branches, length))
    assert pattern.n_blocks == 1 + branches * length
    assert not pattern.fill
    assert pattern.bandwidth == (branches + 1) - 1
    # Spatial: the hub's rigid-body block joins the clique.
    pattern = _pattern(spatial_tree(branches, length))
    assert pattern.n_blocks == 2 * (1 + branches * length)
    assert not pattern.fill
    assert pattern.bandwidth == (branches + 2) - 1


@pytest.mark.parametrize("n", [3, 4, 5, 8, 13, 20])
def test_a_ring_off_the_ground_fills_in_linearly(n):
    # S is a cycle of the n joints (joint k shares body k + 1 with joint k + 1).
    # Eliminating a block of a cycle of m ≥ 4 couples its two neighbours (one fill
    # block) and leaves a cycle of m − 1; a triangle needs none: n − 3 in all, and
    # every step is coupled to at most two later blocks.
    pattern = _pattern(planar_ring(n))
    assert pattern.n_blocks == n
    assert len(pattern.fill) == n - 3
    assert pattern.bandwidth == 2
    # Spatial: the rigid-body blocks hang on one body each (coupled to its two
    # joints, which are coupled already) and add no fill-in.
    pattern = _pattern(spatial_ring(n))
    assert pattern.n_blocks == 2 * n
    assert len(pattern.fill) == n - 3
    assert pattern.bandwidth == 2
    joints = {g for g in range(pattern.n_blocks) if len(pattern.bodies[g]) == 2}
    assert all({pattern.order[i], pattern.order[j]} <= joints for i, j in pattern.fill)


@pytest.mark.parametrize(("build", "pairs"), [(models.six_bar, 6), (models.bricard, 6)])
def test_the_six_bar_and_bricard_close_their_loop_through_the_ground(build, pairs):
    # Five moving bodies in a row between two pairs to the ground (J1 and J6 of the
    # 6-bar, J0 and J5 of Bricard's linkage): the ground is no block, so the six
    # pairs form a path in S, with each body's rigid-body block on the pairs at its
    # body. A path eliminated from its ends has no fill-in, and the solver's order
    # finds it; each step is coupled to at most two later blocks.
    pattern = _pattern(build())
    assert pattern.n_bodies == 5
    assert pattern.n_blocks == pairs + 5
    assert not pattern.fill
    assert pattern.bandwidth == 2


def _drawn(fig) -> collections.Counter:
    return collections.Counter(patch.get_gid() for patch in fig.axes[0].patches)


def test_descriptor_diagram_of_the_six_bar():
    """The seed's Fig. 3 of its own mechanism: 5 bodies, 6 revolute joints, counted
    by hand from the joints' bodies (J1: A1 and the ground; J2: A1–A2; J3: A2–P; J4:
    P–B2; J5: B2–B1; J6: B1 and the ground)."""
    model = models.six_bar().build()
    fig = plot_descriptor_pattern(model)
    drawn = _drawn(fig)
    assert drawn["body"] == 5
    # One joint block per pair and moving body: 1 + 2 + 2 + 2 + 2 + 1.
    assert drawn["joint"] == drawn["joint_transpose"] == 10
    # Introduced by eliminating the bodies: the six pairs' diagonal blocks and the
    # five pairs of pairs on a common body (J1–J2 on A1, J2–J3 on A2, J3–J4 on P,
    # J4–J5 on B2, J5–J6 on B1).
    assert drawn["introduced"] == 6 + 5
    assert drawn["introduced_transpose"] == 5
    assert drawn["fill"] == drawn["fill_transpose"] == 0
    assert sum(drawn.values()) == 5 + 2 * 10 + 11 + 5
    # The rows: the five bodies, numbered, then the pairs in the solver's
    # elimination order (the blocks of S that are not a body's rigid-body rows; the
    # pairs are blocks 0-5, the rigid-body rows 6-10).
    pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    numbers, names = zip(*(label.split(" ", 1) for label in labels[:5]), strict=True)
    assert numbers == ("1", "2", "3", "4", "5")
    assert sorted(names) == sorted(model.bodies.names)
    assert labels[5:] == [pattern.names[g] for g in pattern.order if g < len(model.pairs)]
    # Each pair's joint blocks in its bodies' columns.
    joints = {
        (round(p.get_y()), round(p.get_x())) for p in fig.axes[0].patches if p.get_gid() == "joint"
    }
    expected = {
        (labels.index(pair.name), next(k for k in range(5) if names[k] == body))
        for pair in model.pairs
        for body in pair.bodies
        if body != "ground"
    }
    assert joints == expected


@pytest.mark.parametrize(("ring", "n"), [(planar_ring, 5), (spatial_ring, 4), (spatial_ring, 7)])
def test_descriptor_diagram_of_a_ring_draws_its_fill_in(ring, n):
    # n bodies, n pairs on two bodies each; introduced: n diagonal blocks and the n
    # neighbouring pairs of the cycle; fill-in n − 3 (the test above), in S's part.
    fig = plot_descriptor_pattern(ring(n).build())
    drawn = _drawn(fig)
    assert drawn["body"] == n
    assert drawn["joint"] == drawn["joint_transpose"] == 2 * n
    assert drawn["introduced"] == 2 * n
    assert drawn["introduced_transpose"] == n
    assert drawn["fill"] == drawn["fill_transpose"] == n - 3
    fill = [p.get_xy() for p in fig.axes[0].patches if p.get_gid() == "fill"]
    assert all(x >= n and y > x for x, y in fill)  # below the diagonal, among the pairs
