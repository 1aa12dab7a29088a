"""The singularity monitor of `simulate`: its log against closed forms, and what a
run through singular configurations reports (issue 14).

The log sees σ_r/σ_1 only at the integrator's step ends and refines a passage from
three of them by the vertex of the parabola through (t, (σ_r/σ_1)²). Near a passage
σ_r(t) = √(c²(t − t*)² + d²) to leading order, so for singular values of exactly
that form the refinement is exact: the tests feed such sequences and compare with
t* and d."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import a02_exact_b0, a02_flat_instants
from redundax import models
from redundax._singularity import SingularityLog


class _Decided:
    """What `SingularityLog.start` reads from a Structure."""

    def __init__(self, rank=2, sigma_ratio=0.5, rtol=1e-8):
        self.rank, self.sigma_ratio, self.rtol = rank, sigma_ratio, rtol


def _sigma(t, t_star, c, d):
    """Singular values (descending) of a 3-row C whose second one passes near 0 at
    t_star (depth d) and whose third is 0 (a structural redundancy: r = 2)."""
    return jnp.stack([jnp.ones_like(t), jnp.sqrt((c * (t - t_star)) ** 2 + d**2), 0.0 * t])


def _run(ts, sigma_of, structure=None):
    log = SingularityLog.start(structure or _Decided(), ts[0])
    for t0, t1 in zip(ts[:-1], ts[1:], strict=True):
        log = log.record(t0, t1, sigma_of(t1))
    return log


@pytest.mark.parametrize("depth", [0.0, 1e-3, 2e-2])
def test_a_passage_is_refined_exactly_from_three_step_ends(depth):
    """Uneven steps; σ_2/σ_1 = √(c²(t − t*)² + d²): one passage, at t* with depth d
    (to round-off), the smallest ratio of the run."""
    ts = jnp.asarray([0.0, 0.07, 0.2, 0.31, 0.37, 0.5, 0.66, 0.8, 1.0])
    t_star, c = 0.3456, 1.7
    log = _run(ts, lambda t: _sigma(t, t_star, c, depth))
    assert int(log.passages) == 1
    np.testing.assert_allclose(float(log.passage_t[0]), t_star, rtol=0, atol=1e-12)
    np.testing.assert_allclose(float(log.passage_ratio[0]), depth, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(log.passage_window[0]), [0.31, 0.5])
    assert float(log.min_ratio) == pytest.approx(depth, abs=1e-9)
    assert int(log.rank_changes) == 0  # no step end lands on the singular pose


def test_no_passage_without_a_deep_enough_minimum():
    """A shallow dip (to 0.9 of the largest ratio) is no passage; the ratios are
    kept."""
    ts = jnp.linspace(0.0, 1.0, 11)
    log = _run(ts, lambda t: jnp.stack([1.0, 0.5 - 0.05 * jnp.sin(jnp.pi * t), 0.0]))
    assert int(log.passages) == 0
    assert float(log.max_ratio) == pytest.approx(0.5)
    assert float(log.min_ratio) == pytest.approx(0.45, abs=2e-3)


def test_rank_changes_are_logged_with_their_step():
    """A step end exactly on the singular pose drops the rank (rtol 1e-8), the next
    one restores it: two changes, each in its step."""
    ts = jnp.asarray([0.0, 0.25, 0.5, 0.75, 1.0])
    log = _run(ts, lambda t: _sigma(t, 0.5, 1.0, 0.0))
    assert int(log.rank_changes) == 2
    np.testing.assert_allclose(np.asarray(log.rank_t[:2]), [[0.25, 0.5], [0.5, 0.75]])
    assert list(np.asarray(log.rank_value[:2])) == [1, 2]
    assert int(log.passages) == 1 and float(log.passage_ratio[0]) == 0.0


def test_the_log_under_jit_and_vmap():
    """`record` is pure jax.numpy: jit ≡ eager, and vmap over passage instants ≡ a
    loop."""
    ts = jnp.linspace(0.0, 1.0, 9)
    stars = jnp.asarray([0.31, 0.52, 0.77])

    def passage(t_star):
        log = _run(ts, lambda t: _sigma(t, t_star, 2.0, 0.0))
        return log.passage_t[0], log.passages

    batched = jax.jit(jax.vmap(passage))(stars)
    for k, t_star in enumerate(stars):
        eager = passage(t_star)
        assert float(batched[0][k]) == pytest.approx(float(eager[0]), abs=1e-14)
        assert float(eager[0]) == pytest.approx(float(t_star), abs=1e-12)
        assert int(batched[1][k]) == 1


@pytest.fixture(scope="module")
def parallelogram():
    mech = models.n_four_bar(1)
    return mech.build(), mech.initial_state()


def test_baumgarte_alone_through_a_flat_pose_warns(parallelogram):
    """A02's parallelogram passes its first two flat poses in 2 s (0.708 and 1.215 s
    on the exact 1-DOF motion, tests/helpers.py). With Baumgarte terms alone the run
    says that the motion may have left its branch; the default (projection after
    every step) is silent and logs the same passages."""
    model, s = parallelogram
    with pytest.warns(rx.SingularPassageWarning, match=r"2 singular configuration\(s\)"):
        risky = rx.simulate(model, s, 2.0, n_save=21, drift_control=rx.Baumgarte())
    with warnings.catch_warnings():
        warnings.simplefilter("error", rx.SingularPassageWarning)
        kept = rx.simulate(model, s, 2.0, n_save=201)
    flat = a02_flat_instants(1, 2.0)  # the exact 1-DOF motion's flat poses
    for traj, branch_kept in ((risky, False), (kept, True)):
        report = rx.singularity_report(traj)
        assert report.branch_kept is branch_kept
        np.testing.assert_allclose([p.t for p in report.passages], flat, rtol=0, atol=1e-2)
        assert all(p.sigma_ratio < 2e-2 for p in report.passages)
    # The default run on the branch: B0 on the exact motion; and the host-side search
    # over the saved states (rx.singular_instants) finds the same two instants, where
    # the rank of C drops.
    b0 = np.asarray(jax.vmap(lambda q: rx.marker_positions(model, q)[0])(kept.q))
    assert float(np.max(np.linalg.norm(b0 - a02_exact_b0(1, kept.ts), axis=1))) < 1e-6
    instants = rx.singular_instants(model, kept)
    np.testing.assert_allclose([t for t, _, _ in instants], flat, rtol=0, atol=1e-3)
    assert all(rank < model.n_constraints and gap < 1e-6 for _, gap, rank in instants)
    # Off: no log, no report.
    quiet = rx.simulate(model, s, 0.1, n_save=2, monitor_singularities=False)
    assert quiet.singularities is None and rx.singularity_report(quiet) is None
