"""Spatial mechanisms in natural coordinates, end to end: specs → Model →
analysis, dynamics, reactions.

Oracles: the classical rigid-body kinetic energy and virtual power (closed forms in
the test), planar models of the same mechanisms (the library's planar path, whose
own tests check it against closed forms and the seed paper), three independent
uniqueness tests (QR, SVD, rank), runs at tighter tolerances, and central finite
differences computed here.
"""

import dataclasses
import functools

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import (
    TOL_EXACT,
    TOL_SAME_MOTION,
    TOL_SAME_REACTION,
    central_difference,
    planar_rotation as _rot2,
    planar_twin,
)
from redundax._bodies import natural_from_pose, natural_velocity
from redundax._pairs import SphericalConstraint

# Spatial twin of a planar mechanism vs the planar model: max |Δ position| [m] and
# |Δ angle| [rad] over 3 s, both at rtol = 1e-10, atol = 1e-12 (measured ~1e-9).
TOL_TWIN_POSITION = 1e-8
# Rigid-body rows of the natural coordinates along a run (rtol = 1e-11, atol = 1e-13,
# Baumgarte α = β = 10 /s; measured 3e-14).
TOL_RIGID_ROWS = 1e-10
# Bricard: |E(t) − E(0)| over 10 s with NullSpace at rtol 1e-10 / atol 1e-12 [J]
# (measured 2e-9 J; E ~ 10 J).
TOL_BRICARD_ENERGY = 1e-8
# Bricard P3: y stays in [−1, −0.866] (IFToMM A04) and comes within this of each end.
BRICARD_Y = (-1.0, -0.866)
TOL_REACHES_END = 1e-3
# Kinetic energy / virtual power: sums of O(10) products of O(1–10) numbers.
TOL_ENERGY = 1e-11
# Gradient of a reaction component vs central differences (relative, in norm).
TOL_FD_REACTION = 1e-5
# Same-method results eager vs jit / vmap vs loop (different fusion → round-off).
TOL_TRANSFORM = 1e-10
# Relative size by which non-unique components must differ between two choices.
MIN_NONUNIQUE_DIFFERENCE = 1e-3

# Rank decisions on simulated Bricard states (off the manifold by ~1e-13 at rtol =
# 1e-12): the library's DECISION_RTOL; the gap is 1e-15 vs 0.18 in σ/σ_max.
BRICARD_RTOL = 1e-8
# Rank of a C built here, by NumPy's SVD (σ ≤ RANK_RTOL σ_max counts as zero).
RANK_RTOL = 1e-9

TIGHT = dict(
    stepsize_controller=diffrax.PIDController(rtol=np.float64(1e-10), atol=np.float64(1e-12))
)
# NumPy scalars are floats to the type checks but arrays to `filter_jit`, so the runs
# at different tolerances below share one compilation.
TOLERANCES = (1e-6, 1e-8, 1e-10, 1e-11)
N_SAVE = 201  # Bricard: 10 s, Δt = 0.05 s
T_METHODS = 50  # Bricard method comparison: the first 50 intervals (2.5 s)


def _random_rotation(rng) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def _random_inertia(rng) -> np.ndarray:
    """A realisable central inertia tensor (not diagonal): I = tr(S) I₃ − S, S ≻ 0."""
    A = rng.normal(size=(3, 3))
    S = A @ A.T + 0.1 * np.eye(3)
    return np.trace(S) * np.eye(3) - S


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def bricard():
    mech = rx.models.bricard()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def bricard_runs(bricard):
    """10 s of Bricard by NullSpace at each of TOLERANCES (one compilation)."""
    model, s = bricard
    return {
        tol: rx.simulate(
            model,
            s,
            10.0,
            stepsize_controller=diffrax.PIDController(
                rtol=np.float64(tol), atol=np.float64(tol * 1e-2)
            ),
            solver=diffrax.Dopri8(),
            saveat=rx.SaveAt(n=N_SAVE),
        )
        for tol in TOLERANCES
    }


@pytest.fixture(scope="module")
def bricard_states(bricard, bricard_runs):
    """The initial state and two later ones (t = 1.7 s, 3.3 s) of the rtol = 1e-11
    run (|Φ| ≤ 1e-13 there); rank decisions on them use BRICARD_RTOL."""
    model, s = bricard
    run = bricard_runs[1e-11]
    return [(s.q, s.qd, s.t)] + [(run.q[k], run.qd[k], run.ts[k]) for k in (34, 66)]


def _p3(model, traj) -> np.ndarray:
    return np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q))(traj.q)[:, 0])


def _prefixed(mech: rx.Mechanism, prefix: str):
    """Bodies and pairs of `mech` with `prefix` on every name but the ground's."""

    def rename(name):
        return name if name == "ground" else prefix + name

    bodies = [dataclasses.replace(b, name=prefix + b.name) for b in mech.bodies]
    pairs = [
        dataclasses.replace(
            p, name=prefix + p.name, body_i=rename(p.body_i), body_j=rename(p.body_j)
        )
        for p in mech.pairs
    ]
    return bodies, pairs


@pytest.fixture(scope="module")
def twins():
    """The planar four-bar (`fb_…`) and slider-crank (`sc_…`) side by side in one
    planar model, and its spatial twin, 3 s each, with their reactions along the
    motion. (Two independent mechanisms in one model: C is block diagonal, so the
    analysis of each is unchanged, and each model is compiled once, not twice.)"""
    fb, sc = _prefixed(rx.models.four_bar(), "fb_"), _prefixed(rx.models.slider_crank(), "sc_")
    planar = rx.Mechanism(fb[0] + sc[0], fb[1] + sc[1], gravity=(0.0, -9.81))
    spatial = planar_twin(planar)
    m2, s2 = planar.build(), planar.initial_state()
    m3, s3 = spatial.build(), spatial.initial_state()
    rx.equations.check_consistency(m3, s3)
    t2 = rx.simulate(m2, s2, 3.0, saveat=rx.SaveAt(n=31), **TIGHT)
    t3 = rx.simulate(m3, s3, 3.0, saveat=rx.SaveAt(n=31), **TIGHT)
    return m2, t2, rx.reaction_history(m2, t2), m3, t3, rx.reaction_history(m3, t3)


def _svd_rank(A) -> int:
    s = np.linalg.svd(np.asarray(A), compute_uv=False)
    return int(np.sum(s > RANK_RTOL * s[0])) if s.size else 0


# One compilation per model structure: the model is an argument, so its arrays
# (and the tree_at-modified ones below) are traced, not baked in.
_reactions_jit = eqx.filter_jit(rx.reactions)
_analyze_jit = eqx.filter_jit(rx.analyze_solvability)
_qr_test = jax.jit(functools.partial(rx.analysis.solvability_by_qr, rtol=BRICARD_RTOL))
_svd_test = jax.jit(functools.partial(rx.analysis.solvability_by_svd, rtol=BRICARD_RTOL))
_rank_test = jax.jit(functools.partial(rx.analysis.solvability_by_rank, rtol=BRICARD_RTOL))


# ------------------------------------------------------ 1. mass matrix, rigid-body rows


def test_mass_matrix_is_the_classical_kinetic_energy():
    """½ q̇ᵀ M q̇ of a three-body model = Σ ½ m |v_c|² + ½ ω_bᵀ I_c ω_b for random
    poses, rigid velocities and (non-diagonal) inertias, with the centre of mass
    offset from the frame origin (set on SpatialBodies; the spec puts it at 0)."""
    rng = np.random.default_rng(0)
    nb = 3
    bodies = [
        rx.SpatialBody(f"b{k}", float(rng.uniform(0.5, 3.0)), _random_inertia(rng))
        for k in range(nb)
    ]
    model = rx.Mechanism(bodies, []).build()
    com = rng.normal(size=(nb, 3))
    model = eqx.tree_at(lambda m: m.bodies.com, model, jnp.asarray(com))
    M = rx.equations.mass_matrix(model)
    for _ in range(10):
        R = [_random_rotation(rng) for _ in range(nb)]
        r, v, w = (rng.normal(size=(nb, 3)) for _ in range(3))
        q = jnp.concatenate(
            [natural_from_pose(jnp.asarray(r[k]), jnp.asarray(R[k])) for k in range(nb)]
        )
        qd = jnp.concatenate(
            [
                natural_velocity(q[12 * k : 12 * k + 12], jnp.asarray(v[k]), jnp.asarray(w[k]))
                for k in range(nb)
            ]
        )
        classical = 0.0
        for k, b in enumerate(bodies):
            v_c = v[k] + np.cross(w[k], R[k] @ com[k])
            w_b = R[k].T @ w[k]
            classical += 0.5 * b.mass * v_c @ v_c + 0.5 * w_b @ np.asarray(b.inertia) @ w_b
        assert abs(float(0.5 * qd @ M @ qd) - classical) <= TOL_ENERGY * max(1.0, classical)
        assert abs(float(rx.equations.kinetic_energy(model, qd)) - classical) <= TOL_ENERGY * max(
            1.0, classical
        )
        # The velocities the library reports are the ones we built the state from.
        v_lib, w_lib = rx.equations.body_velocities(model, q, qd)
        v_c = v + np.cross(w, np.einsum("kab,kb->ka", np.stack(R), com))
        assert np.allclose(v_lib, v_c, rtol=0.0, atol=TOL_EXACT)
        assert np.allclose(w_lib, w, rtol=0.0, atol=TOL_EXACT)


def test_rigid_body_rows_hold_along_bricard(bricard, bricard_runs):
    """The 30 rigid-body rows (model.internal_rows) of the Bricard run at rtol =
    1e-11, atol = 1e-13 (the default drift control) stay below 1e-10 at
    every saved state; at 1e-10 / 1e-12 below 2e-9. (The saved states are
    Dopri8's interpolants between projected step ends: their residual follows the
    tolerance, 1.0e-9 measured at 1e-10, moving by a few per cent with the round-off
    of the compiled program.)"""
    model, _ = bricard
    rows = np.asarray(model.internal_rows)
    assert rows.size == model.n_internal == 30
    for tol, bound in ((1e-11, TOL_RIGID_ROWS), (1e-10, 20 * TOL_RIGID_ROWS)):
        phi = jax.vmap(lambda q: rx.equations.position_residual(model, q))(bricard_runs[tol].q)
        assert float(jnp.max(jnp.abs(phi[:, rows]))) < bound, tol


# -------------------------------------------------- 2. spatial twins of planar models


def test_twin_moves_like_the_planar_model(twins):
    m2, t2, _, m3, t3, _ = twins
    pos, R = jax.vmap(lambda q: rx.equations.body_poses(m3, q))(t3.q)
    q2 = np.asarray(t2.q).reshape(t2.q.shape[0], -1, 3)
    assert float(np.max(np.abs(pos[..., :2] - q2[..., :2]))) < TOL_TWIN_POSITION
    assert float(np.max(np.abs(pos[..., 2]))) < TOL_TWIN_POSITION
    angle = np.arctan2(R[..., 1, 0], R[..., 0, 0])
    dphi = (angle - q2[..., 2] + np.pi) % (2 * np.pi) - np.pi
    assert float(np.max(np.abs(dphi))) < TOL_TWIN_POSITION
    # The body z axes stay along global z.
    assert float(np.max(np.abs(R[..., 2, 2] - 1.0))) < TOL_TWIN_POSITION
    # The motion is not trivial.
    assert float(np.ptp(q2[..., 2])) > 0.5


def test_twin_in_plane_reactions_equal_the_planar_ones(twins):
    """Along the motion, for every pair and body: the in-plane force and moment at
    the centre of mass (F_x, F_y, M_z) equal the planar model's (all unique there),
    and so does the moment about the joint point (z component; zero for revolutes)."""
    m2, _, r2, m3, _, r3 = twins
    assert m2.pair_names == m3.pair_names
    assert bool(np.all(r2.unique))
    w2, w3 = np.asarray(r2.wrench), np.asarray(r3.wrench)
    scale = np.max(np.abs(w2))
    assert np.max(np.abs(w3[..., :2] - w2[..., :2])) <= TOL_SAME_REACTION * scale
    assert np.max(np.abs(w3[..., 5] - w2[..., 2])) <= TOL_SAME_REACTION * scale
    jm2, jm3 = np.asarray(r2.joint_moment), np.asarray(r3.joint_moment)[..., 2]
    assert np.max(np.abs(jm3 - jm2)) <= TOL_SAME_REACTION * scale
    revolutes = [k for k, p in enumerate(m2.pairs) if p.kind == "revolute"]
    assert np.max(np.abs(jm3[:, revolutes])) <= TOL_SAME_REACTION * scale


def test_twin_transverse_components_equal_planar_forces(twins):
    """Revolute components: the transverse forces e₁, e₂ (axes fixed on body j,
    = global x, y at t = 0 for an axis along z) of the spatial model, rotated by
    body j's rotation since t = 0, are the planar 'force x', 'force y' (same sign
    convention: −λ on body i), and are flagged unique."""
    m2, t2, r2, m3, _, r3 = twins
    q2 = np.asarray(t2.q).reshape(t2.q.shape[0], -1, 3)
    for p in m2.pairs:
        if p.kind != "revolute":
            continue
        c2, c3 = r2.components(p.name), r3.components(p.name)
        f2 = np.stack([c2["force x"][0], c2["force y"][0]], axis=-1)
        f3 = np.stack([c3["transverse force e1"][0], c3["transverse force e2"][0]], axis=-1)
        if p.bodies[1] == "ground":
            dphi = np.zeros(q2.shape[0])
        else:
            j = m2.body_index(p.bodies[1])
            dphi = q2[:, j, 2] - q2[0, j, 2]
        f3 = np.einsum("tab,tb->ta", np.stack([_rot2(a) for a in dphi]), f3)
        assert np.max(np.abs(f3 - f2)) <= TOL_SAME_REACTION * np.max(np.abs(f2)), p.name
        assert bool(np.all(c3["transverse force e1"][1])), p.name
        assert bool(np.all(c3["transverse force e2"][1])), p.name
        for label in ("axial force", "bending moment e1", "bending moment e2"):
            assert not bool(np.any(c3[label][1])), (p.name, label)
    # The slider-crank's driving torque is unique in both, and equal.
    d2 = r2.components("sc_drive")["driving torque"]
    d3 = r3.components("sc_drive")["driving torque"]
    assert bool(np.all(d2[1])) and bool(np.all(d3[1]))
    assert np.max(np.abs(d3[0] - d2[0])) <= TOL_SAME_REACTION * np.max(np.abs(d2[0]))


# The in-plane components of each spatial pair kind (by label); the rest are out of plane.
IN_PLANE = {
    "revolute-3d": ("transverse force e1", "transverse force e2"),
    # Axis x: e₁ = y, e₂ = z (perpendicular_pair): in-plane are the y force and the
    # moment about z.
    "prismatic-3d": ("transverse force e1", "moment e2"),
    "revolute-driver-3d": ("driving torque",),
}


def test_twin_redundancy_and_unique_components(twins):
    """A planar mechanism with spatial joints is redundant: each body has 3
    out-of-plane freedoms (z, rotations about x and y) and each revolute or
    prismatic 3 out-of-plane rows, so p = 3 · (such pairs) − 3 · nb: four-bar
    12 − 9 = 3, slider-crank 12 − 9 = 3 (6 for the two side by side), while the
    in-plane rows are the planar model's rows (p = 0 there) and, in the plane,
    decoupled from the out-of-plane ones. Hence exactly the in-plane components are
    unique. Checked: p of each mechanism by NumPy ranks of its block of C; the
    report's per-row verdicts against a rank test written here (row k is unique iff
    rank C_k + rank C_{¬k} = rank C) and against rx.analysis.solvability_by_rank; mobility
    equal to the planar one."""
    m2, t2, _, m3, t3, _ = twins
    q = t3.q[0]
    rep3 = rx.analyze_solvability(m3, q)
    C = np.asarray(rx.equations.constraint_matrix(m3, q))
    C2 = np.asarray(rx.equations.constraint_matrix(m2, t2.q[0]))
    assert C2.shape[0] - _svd_rank(C2) == 0
    assert int(rep3.dof) == C2.shape[1] - _svd_rank(C2) == 1
    out_of_plane = sum(p.kind in ("revolute-3d", "prismatic-3d") for p in m3.pairs)
    assert int(rep3.redundancy) == 3 * out_of_plane - 3 * m3.bodies.count == 6
    for prefix in ("fb_", "sc_"):
        bodies = [k for k, n in enumerate(m3.bodies.names) if n.startswith(prefix)]
        cols = np.concatenate([np.arange(12 * k, 12 * k + 12) for k in bodies])
        block = C[np.any(C[:, cols] != 0.0, axis=1)][:, cols]
        assert block.shape[0] - _svd_rank(block) == 3, prefix
    rank = _svd_rank(C)
    by_rank = np.array(
        [_svd_rank(C[[k]]) + _svd_rank(np.delete(C, k, axis=0)) == rank for k in range(len(C))]
    )
    assert np.array_equal(by_rank, np.asarray(rep3.row_unique))
    singles = rx.analysis.membership(len(C), [(k,) for k in range(len(C))])
    assert np.array_equal(by_rank, np.asarray(_rank_test(jnp.asarray(C), singles).unique))
    for p in m3.pairs:
        want = [label in IN_PLANE[p.kind] for label in p.components]
        assert [bool(by_rank[r]) for r in p.rows] == want, p.name
        assert rep3.verdict(p.name) == all(want), p.name


def test_four_bar_non_unique_components_depend_on_the_choice():
    """With an out-of-plane load on the coupler (which leaves the in-plane motion
    alone), two weightings of the minimum-norm multipliers give the same in-plane
    transverse forces and different axial forces: the rank verdicts show up in the
    numbers."""
    mech = planar_twin(rx.models.four_bar())
    mech = rx.Mechanism(
        mech.bodies,
        mech.pairs,
        gravity=mech.gravity,
        loads=[rx.Load("coupler", force=(0.0, 0.0, 5.0))],
    )
    model, s = mech.build(), mech.initial_state()
    react = eqx.filter_jit(
        lambda w: rx.reactions(
            model, s.q, s.qd, s.t, method=rx.methods.WeightedMinimumNorm(weights=w)
        )
    )
    nc = model.n_constraints
    a, b = react(jnp.ones(nc)), react(jnp.asarray(np.random.default_rng(1).uniform(0.1, 10.0, nc)))
    for p in model.pairs:
        ca, cb = a.components(p.name), b.components(p.name)
        for label in IN_PLANE["revolute-3d"]:
            assert bool(ca[label][1])
            assert abs(float(ca[label][0] - cb[label][0])) <= TOL_SAME_REACTION * max(
                1.0, abs(float(ca[label][0]))
            )
    axial = np.array(
        [[float(r.components(p.name)["axial force"][0]) for p in model.pairs] for r in (a, b)]
    )
    assert np.max(np.abs(axial[0] - axial[1])) > MIN_NONUNIQUE_DIFFERENCE * np.max(np.abs(axial))
    # The total generalised reaction is unique whatever the choice.
    assert np.allclose(
        a.total, b.total, rtol=0.0, atol=TOL_SAME_REACTION * float(jnp.max(jnp.abs(a.total)))
    )


# ------------------------------------------------------------------------- 3. Bricard


def test_bricard_counts_at_three_configurations(bricard, bricard_states):
    """n = 60, m = 60; rank 59, p = 1, mobility 1 (Grübler–Kutzbach predicts 0) at
    the initial and two later configurations; NumPy's SVD rank agrees."""
    model, _ = bricard
    for q, _, t in bricard_states:
        rep = rx.analyze_solvability(model, q, t, rtol=BRICARD_RTOL)
        assert (rep.n, rep.m, rep.h) == (60, 60, 0)
        assert (int(rep.rank), int(rep.redundancy), int(rep.dof)) == (59, 1, 1)
        assert _svd_rank(rx.equations.constraint_matrix(model, q, t)) == 59
    # The later configurations are really elsewhere.
    assert float(jnp.max(jnp.abs(bricard_states[1][0] - bricard_states[0][0]))) > 0.1


def test_bricard_p3_oscillates_between_its_ends(bricard, bricard_runs):
    model, _ = bricard
    run = bricard_runs[1e-10]
    P3 = _p3(model, run)
    y = P3[:, 1]
    assert BRICARD_Y[0] - TOL_REACHES_END <= y.min() <= BRICARD_Y[0] + TOL_REACHES_END
    assert BRICARD_Y[1] - TOL_REACHES_END <= y.max() <= BRICARD_Y[1]
    assert np.all(np.abs(P3[:, 0]) <= 1.0 + TOL_REACHES_END)
    # Back and forth: the midpoint is crossed at least 6 times in 10 s (period ≈ 2.45 s).
    mid = 0.5 * sum(BRICARD_Y)
    assert int(np.sum(np.diff(np.sign(y - mid)) != 0)) >= 6
    assert float(np.max(np.abs(run.energy - run.energy[0]))) < TOL_BRICARD_ENERGY


def test_bricard_converges_as_tolerances_tighten(bricard, bricard_runs):
    """P3 at t = 10 s vs the rtol = 1e-11 run: the error falls by at least 10×
    for each 100× tighter tolerance (measured ≈ 100×)."""
    model, _ = bricard
    ref = _p3(model, bricard_runs[1e-11])[-1]
    errors = [float(np.linalg.norm(_p3(model, bricard_runs[t])[-1] - ref)) for t in TOLERANCES[:-1]]
    assert errors[0] > 10 * errors[1] > 100 * errors[2]
    assert errors[-1] < TOL_SAME_MOTION


def test_bricard_uniqueness_tests_agree_and_nothing_is_unique(bricard, bricard_states):
    """QR (the report), SVD and rank tests agree on every pair and every row at the
    three configurations. Finding: with p = 1, the single self-stress of the loop
    loads every joint component, so no component (and no pair) of Bricard's
    reactions is unique; some rigid-body rows are. The left null vector from
    NumPy's SVD is non-zero on every joint row, which is what that verdict means."""
    model, _ = bricard
    nc = model.n_constraints
    pair_rows = [p.rows for p in model.pairs]
    singles = [(k,) for k in range(nc)]
    for q, _, t in bricard_states:
        C = rx.equations.constraint_matrix(model, q, t)
        rep = rx.analyze_solvability(model, q, t, rtol=BRICARD_RTOL)
        for groups, from_report in ((pair_rows, rep.unique), (singles, rep.row_unique)):
            S = rx.analysis.membership(nc, groups)
            verdicts = [np.asarray(f(C, S).unique) for f in (_qr_test, _svd_test, _rank_test)]
            for v in verdicts:
                assert np.array_equal(v, np.asarray(from_report))
        joint_rows = [r for rows in pair_rows for r in rows]
        assert not np.any(np.asarray(rep.row_unique)[joint_rows])
        assert not np.any(np.asarray(rep.unique))
        _, s, Vt = np.linalg.svd(np.asarray(C).T)
        left_null = Vt[-1]  # C ᵀ-null vector: the self-stress
        assert np.min(np.abs(left_null[joint_rows])) > 1e-3


def test_elimination_among_symmetric_rows_takes_the_lowest_numbered(bricard):
    """At Bricard's square configuration every joint row carries the same share of
    the self-stress (the last left singular vector of C, by NumPy's SVD here): the
    automatic elimination drops the lowest-numbered of them, and the same row from a
    configuration moved by round-off (1e-15), which reorders the tied shares."""
    model, s = bricard
    joint_rows = [r for p in model.pairs for r in p.rows]
    C = np.asarray(rx.equations.constraint_matrix(model, s.q, s.t))
    stress = np.abs(np.linalg.svd(C)[0][:, -1])
    share = stress / stress[joint_rows].max()
    tied = [r for r in joint_rows if share[r] > 1 - 1e-9]
    assert len(tied) >= 6
    for q in (s.q, s.q + 1e-15 * np.random.default_rng(0).standard_normal(s.q.shape)):
        assert rx.methods.eliminate(model, q, s.t).eliminated == (min(tied),)


@pytest.fixture(scope="module")
def bricard_methods(bricard, bricard_runs):
    """The first 2.5 s by each method of handling the redundant row."""
    model, s = bricard
    ref = bricard_runs[1e-10]
    ts = ref.ts[: T_METHODS + 1]
    # Every joint row carries the same share of the self-stress at the square
    # configuration, but half of them lose it along the motion (where a dropped row's
    # share vanishes, the kept rows become dependent). Here, independently of
    # `eliminate`: the self-stress (last left singular vector of C) along the run.
    joint_rows = [r for p in model.pairs for r in p.rows]
    shares = []
    for q, t in zip(np.asarray(ref.q[: T_METHODS + 1]), np.asarray(ts), strict=True):
        C = np.asarray(rx.equations.constraint_matrix(model, jnp.asarray(q), jnp.asarray(t)))
        stress = np.abs(np.linalg.svd(C)[0][:, -1])
        shares.append(stress / stress[joint_rows].max())
    smallest = np.min(shares, axis=0)
    assert np.sum(smallest[joint_rows] < 0.01) >= 10  # many rows lose their share
    automatic = rx.methods.eliminate(model, s.q, s.t, along=ref)
    (dropped,) = automatic.eliminated
    assert smallest[dropped] > 0.5
    # (Any other choice of redundant row gives the same motion too: the mobile
    # robot's three choices in test_dynamics.)
    methods = {
        "weighted minimum norm": rx.methods.WeightedMinimumNorm(),
        "elimination (automatic, along the run)": automatic,
        "augmented Lagrangian": rx.methods.AugmentedLagrangian(),
    }
    runs = {
        name: rx.simulate(
            model,
            s,
            float(ts[-1]),
            method=method,
            saveat=rx.SaveAt(ts=ts),
            solver=diffrax.Dopri8(),
            **TIGHT,
        )
        for name, method in methods.items()
    }
    return methods, runs


# Three compilations of `simulate` (~30 s of CPU).
def test_bricard_methods_give_the_same_motion(bricard, bricard_runs, bricard_methods):
    methods, runs = bricard_methods
    ref = bricard_runs[1e-10]
    dropped = [m.eliminated for m in methods.values() if isinstance(m, rx.methods.Elimination)]
    assert [len(d) for d in dropped] == [1]
    for name, traj in runs.items():
        assert float(jnp.max(jnp.abs(traj.q - ref.q[: T_METHODS + 1]))) < TOL_SAME_MOTION, name
        assert float(jnp.max(jnp.abs(traj.qd - ref.qd[: T_METHODS + 1]))) < TOL_SAME_MOTION, name


# ----------------------------------------------------------- 4. jit / vmap / grad


def _double_pendulum(spin: float = 2.0):
    """A spatial double pendulum, p = 0: rod 1 (1 m along x) on a revolute to the
    ground about the tilted axis (0, 0.3, 1) at the origin, rod 2 (1 m, from (1, 0,
    0) towards (0, −0.6, 0.8)) on a ball joint at rod 1's tip; gravity −y. Rod 1
    spins at `spin` rad/s about its axis, rod 2 has a velocity of its own."""
    inertia = (0.02 / 12, (1 + 0.01) / 12, (1 + 0.01) / 12)  # slender box along x
    axis = np.array([0.0, 0.3, 1.0])
    w1 = spin * axis / np.linalg.norm(axis)
    c1, tip = np.array([0.5, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    ex, ey = np.array([0.0, -0.6, 0.8]), np.array([1.0, 0.0, 0.0])
    R2 = np.stack([ex, ey, np.cross(ex, ey)], axis=1)
    c2 = tip + 0.5 * ex
    w2 = w1 + np.array([0.4, -1.0, 0.7])
    bodies = [
        rx.SpatialBody(
            "rod1", 1.0, inertia, position=c1, velocity=np.cross(w1, c1), angular_velocity=w1
        ),
        rx.SpatialBody(
            "rod2",
            1.5,
            inertia,
            position=c2,
            rotation=R2,
            velocity=np.cross(w1, tip) + np.cross(w2, c2 - tip),
            angular_velocity=w2,
        ),
    ]
    pairs = [
        rx.joints.Revolute3D("J1", "rod1", "ground", point=(0.0, 0.0, 0.0), axis=axis),
        rx.joints.Spherical("J2", "rod2", "rod1", point=tip),
    ]
    mech = rx.Mechanism(bodies, pairs, gravity=(0.0, -9.81, 0.0))
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def pendulum3d():
    model, s = _double_pendulum()
    rx.equations.check_consistency(model, s)
    # The spec builds the masses weakly typed; the tree_at-modified models of the
    # gradient test carry strong float64 ones. Same dtype here: one compilation.
    model = eqx.tree_at(lambda m: m.bodies.mass, model, jnp.asarray(np.asarray(model.bodies.mass)))
    return model, s


def _states(s, n, seed):
    """`n` states near `s` (off the manifold by 1e-2: every function here is
    defined there too)."""
    rng = np.random.default_rng(seed)
    qs = s.q[None] + 1e-2 * jnp.asarray(rng.normal(size=(n, s.q.size)))
    qds = s.qd[None] + jnp.asarray(rng.normal(size=(n, s.q.size)))
    return qs, qds


def test_double_pendulum_is_not_redundant(pendulum3d):
    """n = 24, 5 + 3 + 12 rows of full rank (NumPy): p = 0, mobility 4, and every
    reaction component is flagged unique."""
    model, s = pendulum3d
    C = rx.equations.constraint_matrix(model, s.q)
    assert C.shape == (20, 24) and _svd_rank(C) == 20
    r = _reactions_jit(model, s.q, s.qd, s.t)
    assert bool(np.all(r.unique)) and bool(np.all(r.component_unique))


def test_jit_equals_eager(pendulum3d, twins):
    """constraint_matrix and analyze_solvability eager ≡ jit. (rx.analyze_solvability
    is itself filter_jit'd; here it is re-traced inside jax.jit. An eager
    rx.reactions is left out: op-by-op it costs ~40 s; `reactions` is checked
    under jit, vmap and grad, and against the planar models.)"""
    model, s = pendulum3d
    C = rx.equations.constraint_matrix(model, s.q, s.t)
    assert np.allclose(
        eqx.filter_jit(rx.equations.constraint_matrix)(model, s.q, s.t), C, rtol=0.0, atol=TOL_EXACT
    )
    *_, m3, t3, _ = twins
    for q in t3.q[::10]:
        rep, rep_jit = rx.analyze_solvability(m3, q), _analyze_jit(m3, q)
        assert int(rep.rank) == int(rep_jit.rank) == m3.n_constraints - 6
        assert np.array_equal(rep.row_unique, rep_jit.row_unique)
        assert np.allclose(rep.row_b_norm, rep_jit.row_b_norm, rtol=0.0, atol=TOL_TRANSFORM)


def test_vmap_equals_loop(pendulum3d, twins):
    model, s = pendulum3d
    qs, qds = _states(s, 4, seed=2)
    Cs = jax.vmap(lambda q: rx.equations.constraint_matrix(model, q))(qs)
    batch = jax.vmap(lambda q, qd: _reactions_jit(model, q, qd, s.t))(qs, qds)
    for k in range(qs.shape[0]):
        assert np.allclose(
            Cs[k], rx.equations.constraint_matrix(model, qs[k]), rtol=0.0, atol=TOL_EXACT
        )
        one = _reactions_jit(model, qs[k], qds[k], s.t)
        for field in ("multipliers", "wrench", "qdd"):
            a, b = getattr(one, field), getattr(batch, field)[k]
            tol = TOL_TRANSFORM * max(1.0, float(jnp.max(jnp.abs(a))))
            assert np.allclose(a, b, rtol=0.0, atol=tol), field
        assert np.array_equal(one.component_unique, batch.component_unique[k])
    *_, m3, t3, _ = twins
    qs = t3.q[::10]
    reps = jax.vmap(lambda q: rx.analyze_solvability(m3, q))(qs)
    for k in range(qs.shape[0]):
        rep = rx.analyze_solvability(m3, qs[k])
        assert int(reps.rank[k]) == int(rep.rank)
        assert np.array_equal(reps.row_unique[k], rep.row_unique)


def test_grad_of_a_unique_component(pendulum3d):
    """d(J1 transverse force e1)/d(ball-joint point on rod 2, s_i; both masses) by
    jax.grad vs central differences computed here."""
    model, s = pendulum3d
    k = next(i for i, g in enumerate(model.holonomic) if isinstance(g, SphericalConstraint))
    row = model.pair("J1").rows[model.pair("J1").components.index("transverse force e1")]

    def component(x):
        m = eqx.tree_at(lambda m: (m.holonomic[k].s_i, m.bodies.mass), model, (x[None, :3], x[3:]))
        r = _reactions_jit(m, s.q, s.qd, s.t)
        return -r.multipliers[row], r.component_unique[row]

    x0 = np.concatenate([np.asarray(model.holonomic[k].s_i[0]), np.asarray(model.bodies.mass)])
    assert bool(component(x0)[1])
    grad = np.asarray(jax.grad(lambda x: component(x)[0])(jnp.asarray(x0)))
    fd = central_difference(lambda x: component(x)[0], x0)
    assert np.min(np.abs(fd)) > 1e-3  # every parameter matters
    assert np.linalg.norm(grad - fd) <= TOL_FD_REACTION * np.linalg.norm(fd)


# ---------------------------------------------------------------- 5. spec errors


def _rod(name="rod", **kw):
    return rx.SpatialBody(name, 1.0, (0.01, 0.1, 0.1), **kw)


@pytest.mark.parametrize(
    "bodies, pairs, match",
    [
        (
            [_rod(rotation=((1, 0, 0), (0, 2, 0), (0, 0, 1)))],
            [],
            r"body 'rod' field 'rotation': not a proper rotation",
        ),
        (
            [_rod(rotation=((1, 0, 0), (0, 1, 0), (0, 0, -1)))],
            [],
            r"body 'rod' field 'rotation': not a proper rotation.*det = -1",
        ),
        (
            [rx.SpatialBody("rod", 1.0, ((1, 0.2, 0), (0, 1, 0), (0, 0, 1)))],
            [],
            r"body 'rod' field 'inertia': must be symmetric",
        ),
        (
            [rx.SpatialBody("rod", 1.0, (0.1, 0.1, 0.3))],
            [],
            r"body 'rod' field 'inertia': .*triangle inequality",
        ),
        (
            [rx.SpatialBody("rod", 1.0, (0.1, 0.1))],
            [],
            r"body 'rod' field 'inertia': expected a 3 × 3 matrix",
        ),
        (
            [_rod(position=(0.0, 1.0))],
            [],
            r"body 'rod' field 'position': expected a vector of length 3",
        ),
        (
            [_rod()],
            [rx.joints.Revolute3D("J", "rod", "ground", point=(0, 0), axis=(0, 0, 1))],
            r"pair 'J' field 'point': expected a vector of length 3",
        ),
        (
            [_rod()],
            [rx.joints.Revolute3D("J", "rod", "ground", point=(0, 0, 0), axis=(0, 0, 0))],
            r"pair 'J' field 'axis': must be a non-zero vector",
        ),
        (
            [_rod()],
            [rx.joints.Revolute3D("J", "rod", "nobody", point=(0, 0, 0), axis=(0, 0, 1))],
            r"pair 'J' field 'body_j': unknown body 'nobody'",
        ),
        (
            [_rod(), rx.Body("plate", 1.0, 0.1)],
            [],
            r"body 'plate': planar Body and SpatialBody cannot be mixed",
        ),
        (
            [_rod()],
            [rx.joints.Revolute("J", "rod", "ground")],
            r"pair 'J': a planar pair \(Revolute\) in a spatial mechanism",
        ),
        (
            [_rod(), _rod("arm")],
            [
                rx.joints.Universal(
                    "U", "rod", "arm", point=(0, 0, 0), axis=(1, 0, 0), normal=(1, 1, 0)
                )
            ],
            r"pair 'U': the pins 'axis' and 'normal' of a universal joint must be perpendicular",
        ),
        (
            [_rod()],
            [rx.joints.Revolute3D("J", "rod", "ground", point=(0, 0, 0))],
            r"pair 'J' field 'axis': required for a revolute-3d joint",
        ),
    ],
)
def test_spec_errors_name_the_culprit(bodies, pairs, match):
    with pytest.raises(ValueError, match=match):
        rx.Mechanism(bodies, pairs).build()


def test_spec_errors_are_collected():
    bodies = [rx.SpatialBody("rod", -1.0, (0.1, 0.1, 0.3), position=(0, 0))]
    pairs = [rx.joints.Spherical("S", "rod", "nobody", point=(0, 0, 0))]
    with pytest.raises(ValueError, match=r"\(4 problem\(s\)\)") as info:
        rx.Mechanism(bodies, pairs).build()
    for part in ("field 'mass'", "field 'inertia'", "field 'position'", "unknown body 'nobody'"):
        assert part in str(info.value)


def test_inconsistent_initial_configuration_names_the_pair_and_body():
    mech = rx.models.bricard()
    model, s = mech.build(), mech.initial_state()
    rx.equations.check_consistency(model, s)
    # Rod 3 shifted by 0.1 m along x: its joints J2, J3 are violated, not its axes.
    q = s.q.at[24].add(0.1)
    with pytest.raises(ValueError, match=r"2 pair\(s\) or bodies") as info:
        rx.equations.check_consistency(model, rx.State(0.0, q, s.qd))
    assert "pair 'J2'" in str(info.value) and "pair 'J3'" in str(info.value)
    # Rod 4's axis u stretched by 1 %: its rigid-body rows (and its joints) are named.
    q = s.q.at[12 * 3 + 3 : 12 * 3 + 6].multiply(1.01)
    with pytest.raises(
        ValueError, match=r"body 'rod4' \(rigid-body constraints: its axes must stay orthonormal\)"
    ):
        rx.equations.check_consistency(model, rx.State(0.0, q, s.qd))


# ------------------------------------------------------------------------ 6. loads


def test_spatial_loads_do_the_classical_virtual_power():
    """Gravity, a point force F at s̄ and a torque τ on a spatial body: F(q)·q̇ =
    m g·v_c + F·v_P + τ·ω for random poses and rigid velocities (v_P = v_c + ω × R s̄)."""
    rng = np.random.default_rng(3)
    force, torque, s_bar = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    g = np.array([0.0, -9.81, 0.0])
    mech = rx.Mechanism(
        [
            rx.SpatialBody("b", 2.0, _random_inertia(rng)),
            rx.SpatialBody("other", 1.0, (1.0, 1.0, 1.0)),
        ],
        [],
        gravity=g,
        loads=[rx.Load("b", force=force, point=s_bar, torque=torque)],
    )
    model = mech.build()
    for _ in range(10):
        R = [_random_rotation(rng) for _ in range(2)]
        r, v, w = (rng.normal(size=(2, 3)) for _ in range(3))
        q = jnp.concatenate(
            [natural_from_pose(jnp.asarray(r[k]), jnp.asarray(R[k])) for k in range(2)]
        )
        qd = jnp.concatenate(
            [
                natural_velocity(q[12 * k : 12 * k + 12], jnp.asarray(v[k]), jnp.asarray(w[k]))
                for k in range(2)
            ]
        )
        F = rx.equations.generalized_forces(model, q, qd)
        v_P = v[0] + np.cross(w[0], R[0] @ s_bar)
        power = 2.0 * g @ v[0] + 1.0 * g @ v[1] + force @ v_P + torque @ w[0]
        assert abs(float(F @ qd) - power) <= TOL_ENERGY * max(1.0, abs(power))
        # Same through the library's body velocities.
        v_lib, w_lib = rx.equations.body_velocities(model, q, qd)
        assert np.allclose(v_lib, v, rtol=0.0, atol=TOL_EXACT) and np.allclose(
            w_lib, w, rtol=0.0, atol=TOL_EXACT
        )
