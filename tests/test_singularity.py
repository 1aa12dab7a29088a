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
from redundax.monitors._singularity import SingularityLog


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


def test_a_measure_read_at_the_start_starts_the_rank_and_the_largest_ratio():
    """The pivot sines of a row that is independent at the structure's 1e-8 but
    below the sines' 1e-3 (a nearly singular start): the log starts from the
    measure's own rank (1, not the structure's 2) and ratio, so constant values
    log no rank change; from the structure, the first step would log one."""
    sines = jnp.asarray([1.0, 2e-4, 0.0])
    ts = jnp.linspace(0.0, 1.0, 5)
    log = SingularityLog.start(_Decided(), ts[0], measure="pivots", sigma0=sines)
    assert int(log.rank) == 1 and float(log.max_ratio) == pytest.approx(2e-4)
    for t0, t1 in zip(ts[:-1], ts[1:], strict=True):
        log = log.record(t0, t1, sines)
    assert int(log.rank_changes) == 0 and int(log.passages) == 0
    from_structure = SingularityLog.start(_Decided(), ts[0], measure="pivots")
    assert int(from_structure.record(ts[0], ts[1], sines).rank_changes) == 1
    with pytest.raises(ValueError, match="measure"):
        SingularityLog.start(_Decided(), ts[0], measure="svd")


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
        risky = rx.simulate(
            model, s, 2.0, saveat=rx.SaveAt(n=21), drift_control=rx.drift.Baumgarte()
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", rx.SingularPassageWarning)
        kept = rx.simulate(model, s, 2.0, saveat=rx.SaveAt(n=201))
    flat = a02_flat_instants(1, 2.0)  # the exact 1-DOF motion's flat poses
    for traj, branch_kept in ((risky, False), (kept, True)):
        report = rx.singularity_report(traj)
        assert report.branch_kept is branch_kept
        np.testing.assert_allclose([p.t for p in report.passages], flat, rtol=0, atol=1e-2)
        assert all(p.sigma_ratio < 2e-2 for p in report.passages)
    # The default run on the branch: B0 on the exact motion; and the host-side search
    # over the saved states (rx.monitors.singular_instants) finds the same two instants, where
    # the rank of C drops.
    b0 = np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q)[0])(kept.q))
    assert float(np.max(np.linalg.norm(b0 - a02_exact_b0(1, kept.ts), axis=1))) < 1e-6
    instants = rx.monitors.singular_instants(model, kept)
    np.testing.assert_allclose([t for t, _, _ in instants], flat, rtol=0, atol=1e-3)
    assert all(rank < model.n_constraints and gap < 1e-6 for _, gap, rank in instants)
    # Off: no log, no report.
    quiet = rx.simulate(model, s, 0.1, saveat=rx.SaveAt(n=2), monitor=None)
    assert quiet.singularities is None and rx.singularity_report(quiet) is None


# The block solver's monitor: the pivot sines of the block elimination of C Cᵀ.


def _sines_by_least_squares(C, order, rtol=rx.methods.PIVOT_RTOL):
    """The sine of the angle between each row of C and the rows kept before it in
    `order` (kept: sine² above `rtol`), by least squares in NumPy: an independent
    reading of `row_pivots` (which eliminates C Cᵀ block by block)."""
    C = np.asarray(C)
    sines, kept = np.zeros(C.shape[0]), []
    for j in order:
        row = C[j]
        if kept:
            A = C[kept].T
            row = row - A @ np.linalg.lstsq(A, row, rcond=None)[0]
        sines[j] = np.linalg.norm(row) / np.linalg.norm(C[j])
        if sines[j] ** 2 > rtol:
            kept.append(j)
    return sines


@pytest.fixture(scope="module")
def spatial_parallelograms():
    """IFToMM A02's chain of three parallelograms with spatial revolute joints
    (natural coordinates: 84 coordinates, 92 rows of rank 83)."""
    mech = models.spatial_twin(models.n_four_bar(3))
    model, s = mech.build(), mech.initial_state()
    structure = rx.decide(model, s.q, s.t)
    # The default null-space run to 17 ms before the first flat pose, with its
    # default monitor: the state there for the pivots' test, the dense measure for the
    # block solver's (one program of the 84 coordinates' run serves both).
    nominal = rx.simulate(model, s, 0.7, structure=structure, saveat=rx.SaveAt(n=2))
    return model, s, structure, nominal


def test_pivot_sines_equal_least_squares_angles(spatial_parallelograms):
    """`row_pivots` (block LDLᵀ of C Cᵀ) against row-by-row least squares, on A02's
    spatial chain at its start and near its first flat pose and on Bricard's
    linkage: the squared sines equal to 1e-13; as many sines above 1e-3 as the rank
    of C; the redundant rows' sines below 1e-6. Under jit ≡ eager, vmap ≡ loop, and its derivative
    along q equals central differences."""
    model, s, structure, exact = spatial_parallelograms
    bricard = models.bricard().build()
    b0 = models.bricard().initial_state()
    cases = [
        (model, s.q, s.t, structure),
        (model, exact.q[-1], 0.7, structure),  # 17 ms before the flat pose
        (bricard, b0.q, b0.t, rx.decide(bricard, b0.q, b0.t)),
    ]
    for mdl, q, t, st in cases:
        pattern = st.blocks
        R, B = rx.equations.constraint_rows(mdl, q, t)
        pivots = np.asarray(rx.methods.row_pivots(pattern, R, B))
        order = [r for g in pattern.order for r in pattern.rows[g]]
        expected = _sines_by_least_squares(rx.equations.constraint_matrix(mdl, q, t), order)
        # No row in the soft band (a decade above the threshold), where the block
        # elimination enforces a row partly and least squares wholly.
        assert not np.any((pivots > 1e-6) & (pivots < 1e-5))
        # Equal in the squares (the pivots): the elimination of C Cᵀ resolves sines
        # down to √round-off ≈ 1e-8, least squares down to 1e-15.
        np.testing.assert_allclose(pivots, expected**2, rtol=0, atol=1e-13)
        sines = np.sqrt(np.clip(pivots, 0.0, 1.0))
        assert int(np.sum(sines > 1e-3)) == int(st.rank)
        assert np.sort(sines)[: -int(st.rank)].max() < 1e-6
    # jit, vmap and grad on the spatial chain.
    pattern = structure.blocks

    def sines(q):
        return rx.methods.row_pivots(pattern, *rx.equations.constraint_rows(model, q, 0.0))

    qs = jnp.stack([s.q, exact.q[-1]])
    batched = jax.jit(jax.vmap(sines))(qs)
    for k in range(2):
        np.testing.assert_allclose(batched[k], sines(qs[k]), rtol=0, atol=1e-13)
    direction = jnp.sin(jnp.arange(s.q.shape[0]) + 1.0)
    j = int(np.argmin(np.where(np.asarray(batched[1]) > 1e-3, np.asarray(batched[1]), 2.0)))
    row = jax.jit(lambda q: sines(q)[j])
    slope = jax.grad(row)(qs[1]) @ direction
    h = 1e-6
    central = (row(qs[1] + h * direction) - row(qs[1] - h * direction)) / (2 * h)
    assert float(slope) == pytest.approx(float(central), rel=1e-5)


def test_the_block_solver_monitors_its_pivots(spatial_parallelograms):
    """A run by the block solver reads the pivot sines after every step (linear in
    the bodies) and finds A02's flat poses as the dense σ_r/σ_1 does: the same three
    passages in 3 s, at the exact motion's instants (10 ms, as the dense monitor),
    between the same step ends, as deep in proportion; rank changes (sines below
    1e-3: each of the three loops loses a row) only at a flat pose. A
    null-space run of the same 84 coordinates keeps σ_r/σ_1 (dense); a measure is
    also chosen by name, an unknown one refused."""
    model, s, structure, nominal = spatial_parallelograms
    flat = a02_flat_instants(3, 3.0)
    reports = {}
    for measure in (None, "singular_values"):
        traj = rx.simulate(
            model,
            s,
            3.0,
            structure=structure,
            saveat=rx.SaveAt(n=31),
            method=rx.methods.BlockSparse(),
            monitor=rx.Singularities(measure),
        )
        reports[measure] = rx.singularity_report(traj, rx.methods.BlockSparse())
    pivots, dense = reports[None], reports["singular_values"]
    assert pivots.measure == "pivots" and dense.measure == "singular_values"
    for report in (pivots, dense):
        np.testing.assert_allclose([p.t for p in report.passages], flat, rtol=0, atol=1e-2)
    # The monitor does not touch the integration: the same steps, so the same
    # windows; the depths in proportion (the r-th sine is 3.7-4.5 σ_r/σ_1 along
    # this motion) or both refined to 0.
    assert [p.window for p in pivots.passages] == [p.window for p in dense.passages]
    for p, d in zip(pivots.passages, dense.passages, strict=True):
        assert (p.sigma_ratio == d.sigma_ratio == 0.0) or (
            3.0 * d.sigma_ratio < p.sigma_ratio < 6.0 * d.sigma_ratio
        )
    for a, b, rank in pivots.rank_changes:  # where a step end lands that close
        assert np.min(np.abs(flat - 0.5 * (a + b))) < 1e-2 and 80 <= rank <= 83
    assert dense.rank_changes == ()  # none at the structure's 1e-8
    assert rx.singularity_report(nominal).measure == "singular_values"
    with pytest.raises(ValueError, match="Singularities field 'measure'"):
        rx.simulate(model, s, 0.05, structure=structure, monitor=rx.Singularities("svd"))
