"""The block-sparse solver with constraint partitioning (`rx.methods.BlockSparse`, Kraus et
al. 2001 §6 and §8), in its descriptor and null-space forms, against the dense
null-space method: the same q̈, the same unique reactions, at consistent states of
planar and spatial mechanisms, chains and loops; rigid-body rows never dropped;
eager ≡ jit, vmap ≡ loop, and gradients against central differences."""

import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import central_difference, consistent_states, planar_twin
from redundax import models
from redundax._equations import dynamics_terms
from redundax.methods._block_kernel import _ldl
from redundax.sweep import apply_parameters, resolve_parameters

# q̈ of two exact solvers of the same consistent equations: round-off of the
# factorisations (both well conditioned at regular states), relative to max |q̈|.
TOL_SAME_QDD = 1e-10
# Unique reactions of two methods: round-off amplified by the multipliers' size.
TOL_SAME_UNIQUE = 1e-8
# Autodiff gradient vs central differences of a 1 s solve (FD error ~1e-9 relative).
TOL_GRADIENT = 1e-5
# eager vs jit of the same arithmetic (XLA may fuse differently).
TOL_JIT = 1e-12
# A02 with two parallelograms: its first singular configuration is at 0.714 s.
T_SMOOTH = 0.6

MECHANISMS = {
    "mobile robot": lambda: models.mobile_robot(),
    "bricard": lambda: models.bricard(),
    "6-bar": lambda: models.six_bar(),
    "parallelogram (p = 1)": lambda: models.parallelogram(3),
    "spatial four-bar (p = 3)": lambda: planar_twin(models.four_bar()),
    "A02 chain, 1 spatial loop": lambda: planar_twin(models.n_four_bar(1)),
    "A02 chain, 7 spatial loops": lambda: planar_twin(models.n_four_bar(7)),
}


def _a02_at(n: int, angle: float, rate: float) -> rx.Mechanism:
    """IFToMM A02's chain of `n` parallelograms (`models.n_four_bar`) at crank
    angle `angle` (from the ground line; the model starts at π/2) turning at `rate`,
    in closed form: every crank k from (k, 0) at `angle`, every coupler k
    horizontal between the tips of cranks k − 1 and k, translating with them."""
    c, s = np.cos(angle), np.sin(angle)
    tip_velocity = (-rate * s, rate * c)
    bodies = []
    for b in models.n_four_bar(n).bodies:
        k = int(b.name.removeprefix("crank").removeprefix("coupler"))
        if b.name.startswith("crank"):
            pose = dict(position=(k + c / 2, s / 2), angle=angle, angular_velocity=rate)
            velocity = (tip_velocity[0] / 2, tip_velocity[1] / 2)
        else:
            pose = dict(position=(k - 0.5 + c, s), angle=0.0, angular_velocity=0.0)
            velocity = tip_velocity
        bodies.append(dataclasses.replace(b, velocity=velocity, **pose))
    return dataclasses.replace(models.n_four_bar(n), bodies=bodies)


@eqx.filter_jit
def _both(model, state, structure):
    """The dense null-space q̈ and the block solutions of both forms with both
    pivot metrics, in one program (one per mechanism: the dense terms built once;
    a planar model has no rigid-body rows: its null-space form is its descriptor
    form, the same solution)."""
    terms = dynamics_terms(model, state.q, state.qd, state.t)
    dense = rx.methods.NullSpace(schur=False).acceleration(terms, terms.gamma, structure)
    forms = ("descriptor", "null-space") if model.internal_rows else ("descriptor",)
    blocks = {
        pivots: [
            rx.methods.BlockSparse(pivots=pivots, form=form).solve(terms, terms.gamma, structure)
            for form in forms
        ]
        * (3 - len(forms))
        for pivots in PIVOTS
    }
    return dense, blocks, terms


PIVOTS = ("mass", "coordinates")


@pytest.mark.parametrize("name", MECHANISMS)
def test_block_solver_gives_the_null_space_acceleration(name):
    """With the pivots of C M⁻¹ Cᵀ (Kraus et al.) and with those of C Cᵀ; in the
    descriptor form and in the null-space form (the same as the descriptor form for
    the planar ones, which have no rigid-body rows). Both metrics in one program
    per mechanism (a program per metric compiled the dense terms twice)."""
    mech = MECHANISMS[name]()
    model, state = mech.build(), mech.initial_state()
    internal = np.asarray(model.internal_rows, dtype=int)
    for s in consistent_states(model, state, 3, seed=len(name)):
        structure = rx.decide(model, s.q, s.t)
        dense, blocks, terms = _both(model, s, structure)
        scale = float(jnp.max(jnp.abs(dense)))
        assert scale > 1e-3, "a state that does not move tests nothing"
        for pivots, (block, reduced) in blocks.items():
            for solution in (block, reduced):
                error = float(jnp.max(jnp.abs(solution.qdd - dense)))
                assert error < TOL_SAME_QDD * scale, (name, pivots)
                # The partitioning drops exactly the redundant rows, never a
                # rigid-body row, and the multipliers satisfy M q̈ + Cᵀ μ = F.
                assert int(jnp.sum(~solution.active)) == int(structure.redundancy), name
                assert bool(jnp.all(solution.active[internal]))
                balance = terms.M @ solution.qdd + terms.C.T @ solution.multipliers - terms.F
                assert float(jnp.max(jnp.abs(balance))) < TOL_SAME_QDD * float(
                    jnp.max(jnp.abs(terms.F)) + scale
                )
            # The two forms keep the same rows and give the same multipliers (those
            # of the kept pairs' rows are unique, and each body's balance fixes its
            # rigid-body rows').
            np.testing.assert_array_equal(reduced.active, block.active)
            mu_scale = float(jnp.max(jnp.abs(block.multipliers)))
            assert float(jnp.max(jnp.abs(reduced.multipliers - block.multipliers))) < (
                TOL_SAME_UNIQUE * mu_scale
            )


@pytest.mark.parametrize("name", ["mobile robot", "bricard"])
def test_block_solver_gives_the_same_unique_reactions(name):
    mech = MECHANISMS[name]()
    model, state = mech.build(), mech.initial_state()
    (s,) = consistent_states(model, state, 1, seed=7)
    structure = rx.decide(model, s.q, s.t)
    dense = rx.reactions(model, s.q, s.qd, s.t, structure=structure)
    block = rx.reactions(
        model, s.q, s.qd, s.t, structure=structure, method=rx.methods.BlockSparse()
    )
    unique = np.asarray(structure.stable_unique[: len(model.pairs)])
    scale = float(jnp.max(jnp.abs(dense.wrench)))
    np.testing.assert_allclose(
        block.wrench[unique], dense.wrench[unique], rtol=0, atol=TOL_SAME_UNIQUE * scale
    )
    if name == "bricard":  # nothing unique: the partitioning's choice differs from min-norm
        assert not unique.any()
        assert float(jnp.max(jnp.abs(block.wrench - dense.wrench))) > 1e-3 * scale


def test_null_space_form_gives_the_unique_reaction_components():
    """The 6-bar (p = 1): every reaction component the structure flags unique
    (its rows' multipliers, the rigid-body rows' among them: 42 of 60) is the dense
    method's with the null-space form, whose rigid-body multipliers come from each
    body's balance; the others are its partitioning's choice, not min-norm."""
    mech = models.six_bar()
    model, state = mech.build(), mech.initial_state()
    (s,) = consistent_states(model, state, 1, seed=7)
    structure = rx.decide(model, s.q, s.t)
    dense = rx.reactions(model, s.q, s.qd, s.t, structure=structure)
    method = rx.methods.BlockSparse(form="null-space")
    reduced = rx.reactions(model, s.q, s.qd, s.t, structure=structure, method=method)
    unique = np.asarray(dense.component_unique)
    assert unique[list(model.internal_rows)].any() and unique.sum() < unique.size
    scale = float(jnp.max(jnp.abs(dense.multipliers)))
    np.testing.assert_allclose(
        reduced.multipliers[unique],
        dense.multipliers[unique],
        rtol=0,
        atol=TOL_SAME_UNIQUE * scale,
    )
    assert float(jnp.max(jnp.abs(reduced.multipliers - dense.multipliers))) > 1e-3 * scale


def test_block_pattern_of_chains_and_loops():
    # A chain of bodies (the slider-crank's crank and rod, a tree): no fill-in.
    def pattern_of(mech):
        model = mech.build()
        return rx.internal.block_pattern(model, rx.analysis.topology(model))

    assert not pattern_of(models.slider_crank()).fill
    # The A02 chain's loops all pass through the ground, which is not a block: the
    # blocks of each loop form a path and nothing fills in, so the work per body
    # (the largest coupling) stays the same as the chain grows, planar or spatial.
    for build in (models.n_four_bar, lambda n: planar_twin(models.n_four_bar(n))):
        shapes = []
        for n in (2, 4, 8, 16):
            pattern = pattern_of(build(n))
            shapes.append((len(pattern.fill), pattern.bandwidth))
        assert shapes == [shapes[0]] * 4 and shapes[0][0] == 0, shapes
    # A loop off the ground (the mobile robot's platform, steering bodies and
    # wheels) fills in along itself: a few blocks, not the whole matrix.
    pattern = pattern_of(models.mobile_robot())
    assert 0 < len(pattern.fill) < pattern.n_blocks
    # The blocks partition the rows of C (Bricard: its pairs and rigid-body rows).
    pattern = pattern_of(models.bricard())
    assert pattern.n_rows == models.bricard().build().n_constraints
    assert sorted(r for rows in pattern.rows for r in rows) == list(range(pattern.n_rows))
    assert sorted(pattern.order) == list(range(pattern.n_blocks))


def test_block_solver_eager_jit_vmap_agree():
    """The descriptor form, eager ≡ jit ≡ vmap, on the smallest spatial mechanism
    with a redundant loop (the spatial four-bar, p = 3; the mobile robot compiled
    the same arithmetic at seven bodies for no other claim)."""
    mech = planar_twin(models.four_bar())
    model, state = mech.build(), mech.initial_state()
    states = consistent_states(model, state, 4, seed=3)
    structure = rx.decide(model, states[0].q, states[0].t)

    def qdd(q, qd):
        terms = dynamics_terms(model, q, qd, state.t)
        return rx.methods.BlockSparse().acceleration(terms, terms.gamma, structure)

    eager = np.stack([qdd(s.q, s.qd) for s in states])
    jitted = np.stack([jax.jit(qdd)(s.q, s.qd) for s in states])
    q, qd = jnp.stack([s.q for s in states]), jnp.stack([s.qd for s in states])
    batched = jax.jit(jax.vmap(qdd))(q, qd)
    np.testing.assert_allclose(jitted, eager, rtol=0, atol=TOL_JIT * np.max(np.abs(eager)))
    np.testing.assert_allclose(batched, eager, rtol=0, atol=TOL_JIT * np.max(np.abs(eager)))


def test_rigid_body_rows_are_never_dropped():
    """Kraus et al. §8: a body's rigid-body rows stay in the active set and only the
    pairs' rows are monitored, by construction. (1) A pattern ordered with every
    rigid-body block last, where three rigid-body rows would be the dependent rows
    of the spatial four-bar's loop (the solver before issue 39 dropped rows 24, 36
    and 37 there): the plan eliminates them first whatever the order, drops three
    rows of pairs, and q̈ is the dense method's. (2) The pivot test itself: a
    column the factorisation does not monitor keeps its full weight however small
    its pivot, where a monitored one is dropped."""
    name = "spatial four-bar (p = 3)"  # a state of the test above: its program reused
    mech = MECHANISMS[name]()
    model, state = mech.build(), mech.initial_state()
    s = consistent_states(model, state, 3, seed=len(name))[0]
    structure = rx.decide(model, s.q, s.t)
    dense, _, terms = _both(model, s, structure)
    pattern = structure.blocks
    internal = np.asarray(model.internal_rows, dtype=int)
    rigid = [g for g in pattern.order if set(pattern.rows[g]) <= set(internal.tolist())]
    last = dataclasses.replace(
        pattern, order=tuple(g for g in pattern.order if g not in rigid) + tuple(rigid)
    )
    local = rx.equations.local_terms(model, s.q, s.qd, s.t)
    solution = rx.methods.block_solve(
        last, local.R, local.B, local.mass_blocks, local.F, local.gamma
    )
    assert bool(jnp.all(solution.active[internal]))
    assert int(jnp.sum(~solution.active)) == int(structure.redundancy) == 3
    scale = float(jnp.max(jnp.abs(dense)))
    assert float(jnp.max(jnp.abs(solution.qdd - dense))) < TOL_SAME_QDD * scale
    # (2) Column 1 is column 0 again: pivot 0, below the floor 1e-3 × its diagonal
    # (column 0's pivot is 1,000 times its floor: fully kept).
    A = jnp.asarray([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    floor = 1e-3 * jnp.diagonal(A)
    _, dinv, weights, pivots = _ldl(A, floor, monitored=jnp.asarray([True, True, True]))
    np.testing.assert_array_equal(np.asarray([pivots[1], weights[1], dinv[1]]), 0.0)
    # Nearly so (pivot 2e-4, a tenth of its floor), in a column not monitored.
    nearly = A + 1e-4 * jnp.eye(3)
    _, dinv, weights, pivots = _ldl(nearly, floor, monitored=jnp.asarray([True, False, True]))
    assert 0.0 < float(pivots[1]) < 0.2 * float(floor[1])
    np.testing.assert_array_equal(weights, 1.0)
    np.testing.assert_allclose(dinv[1], 1.0 / pivots[1], rtol=TOL_JIT)


def test_null_space_form_eager_jit_vmap_and_gradient():
    """The null-space form on the spatial four-bar: eager ≡ jit of vmap at three
    consistent states and one off the constraints (axes no longer orthonormal, by
    1e-5: the basis D(p) N̄ is exact there too, so q̈ is the descriptor form's);
    and the gradient of a weighted sum of q̈ with respect to q (through the basis,
    the reduced masses and the pairs' rows, by reverse mode) against central
    differences of the same program's value."""
    mech = planar_twin(models.four_bar())
    model, state = mech.build(), mech.initial_state()
    states = consistent_states(model, state, 3, seed=13)
    structure = rx.decide(model, states[0].q, states[0].t)
    rng = np.random.default_rng(13)
    drifted = states[0].q + 1e-5 * rng.standard_normal(states[0].q.shape)
    qs = jnp.stack([s.q for s in states] + [jnp.asarray(drifted)])
    qds = jnp.stack([s.qd for s in states] + [states[0].qd])
    w = jnp.asarray(rng.standard_normal(qs.shape[1]))

    def qdd(q, qd, form="null-space"):
        terms = rx.equations.local_terms(model, q, qd, state.t)
        return rx.methods.BlockSparse(form=form).acceleration(terms, terms.gamma, structure)

    @jax.jit
    def batch_and_gradient(qs, q):
        """One program: q̈ at every state (vmap), and w · q̈ and its gradient at q."""
        return jax.vmap(qdd)(qs, qds), jax.value_and_grad(lambda q: w @ qdd(q, qds[0]))(q)

    eager = np.stack([qdd(q, qd) for q, qd in zip(qs, qds, strict=True)])
    batched, (_, grad) = batch_and_gradient(qs, qs[0])
    scale = np.max(np.abs(eager))
    np.testing.assert_allclose(batched, eager, rtol=0, atol=TOL_JIT * scale)
    descriptor = qdd(qs[3], qds[3], "descriptor")
    assert float(jnp.max(jnp.abs(eager[3] - descriptor))) < TOL_SAME_QDD * scale

    direction = jnp.asarray(rng.standard_normal(qs.shape[1]))
    h = 1e-5  # truncation ~h² |f'''| ~ 1e-10, round-off ~eps |f| / h ~ 1e-11
    plus = batch_and_gradient(qs, qs[0] + h * direction)[1][0]
    minus = batch_and_gradient(qs, qs[0] - h * direction)[1][0]
    fd = float(plus - minus) / (2 * h)
    assert abs(fd) > 1e-3
    assert abs(float(grad @ direction) - fd) < TOL_GRADIENT * max(1.0, abs(fd))


def test_block_solver_simulates_like_the_null_space_method():
    """A 0.6 s motion of the A02 chain with the block solver equals the null-space
    motion. (The chain reaches its first singular configuration at 0.714 s; through
    it the partitioning relaxes the nearly dependent row for a moment and the
    motions differ by ~2e-8: not a like-for-like check.)"""
    mech = models.n_four_bar(2)
    model, state = mech.build(), mech.initial_state()
    # No record of how near C is to losing rank (an SVD or a second elimination
    # after every step): not what is compared, and it was most of both programs.
    kw = dict(
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
        saveat=rx.SaveAt(n=3),
        monitor=None,
    )
    block = rx.simulate(model, state, T_SMOOTH, method=rx.methods.BlockSparse(), **kw)
    dense = rx.simulate(model, state, T_SMOOTH, **kw)
    np.testing.assert_allclose(block.q, dense.q, rtol=0, atol=1e-8)


def test_gradient_through_a_block_solve_wrt_geometry():
    """d(final crank angle)/d(x of the rocker's ground pivot) through a 1 s block
    solve of the spatial four-bar (p = 3; the initial state projected onto each
    variant's constraints inside the differentiated function) equals central
    differences."""
    mech = planar_twin(models.four_bar())
    model, state = mech.build(), mech.initial_state()
    (target,) = resolve_parameters(model, state, ["pairs.D.point_j.x"])
    structure = rx.decide(model, state.q, state.t)
    kw = dict(
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
        saveat=rx.SaveAt(n=2),
        method=rx.methods.BlockSparse(),
        structure=structure,
        drift_control=rx.drift.Baumgarte(),
        # No record of how near C is to losing rank (`Trajectory.singularities`):
        # the block elimination it adds after every step, and its derivative, took
        # two thirds of this program's tracing and compilation; the final angle and
        # its gradient are the same to the last digit without it.
        monitor=None,
    )

    def final_angle(x):
        variant, start = apply_parameters(model, state, (target,), x)
        traj = rx.simulate(
            variant, start, 1.0, initial=rx.ProjectInitial(rx.drift.Projection()), **kw
        )
        u = traj.q[-1, 3:5]  # the crank's body x axis, in the plane
        return jnp.arctan2(u[1], u[0])

    # One compiled program serves the gradient and the differences' values.
    value_and_grad = jax.jit(jax.value_and_grad(final_angle))
    x0 = np.asarray([1.0])  # four_bar(): ground = 1 m
    grad = float(value_and_grad(jnp.asarray(x0))[1][0])
    fd = float(central_difference(lambda x: value_and_grad(x)[0], x0, h=1e-4)[0])
    assert abs(grad) > 1e-3
    assert abs(grad - fd) < TOL_GRADIENT * max(1.0, abs(fd))


@pytest.mark.parametrize("name", ["mobile robot", "bricard"])
def test_local_terms_are_the_dense_terms_row_by_row(name):
    """The block solver's assembly (no dense matrix) holds the same numbers as the
    dense one: C rebuilt from its rows, and every vector."""
    mech = MECHANISMS[name]()
    model, state = mech.build(), mech.initial_state()
    (s,) = consistent_states(model, state, 1, seed=11)
    local = rx.equations.local_terms(model, s.q, s.qd, s.t)
    dense = dynamics_terms(model, s.q, s.qd, s.t)
    nb, dof, nc = model.bodies.count, model.bodies.dof, model.n_constraints
    C = jnp.zeros((nc, nb + 1, dof)).at[jnp.arange(nc)[:, None], local.B].add(local.R)
    np.testing.assert_array_equal(C[:, :nb].reshape(nc, -1), dense.C)
    for field in ("gamma", "phi", "F", "b"):
        np.testing.assert_array_equal(getattr(local, field), getattr(dense, field))
    np.testing.assert_allclose(local.velocity_error, dense.velocity_error, rtol=0, atol=1e-14)
    structure = rx.decide(model, s.q, s.t)
    a = rx.methods.BlockSparse().solve(local, local.gamma, structure)
    b = rx.methods.BlockSparse().solve(dense, dense.gamma, structure)
    np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-13 * float(jnp.max(jnp.abs(b.qdd))))


def test_block_solver_on_a_chain_of_64_redundant_loops():
    """The spatial A02 chain with N = 64 loops (129 bodies, 1,548 coordinates,
    p = 192): the block solver, which never forms a dense matrix, gives the dense
    all-rows Schur complement's q̈ (a second solver of the same equations), at the
    model's initial state and at a random consistent one (crank angle and rate
    drawn, the state in closed form: [`_a02_at`][], checked here against the
    constraints)."""
    rng = np.random.default_rng(64)
    mechanisms = [
        models.spatial_twin(models.n_four_bar(64)),
        models.spatial_twin(_a02_at(64, rng.uniform(0.3, 2.8), rng.uniform(-3.0, 3.0))),
    ]
    pattern = None

    @eqx.filter_jit
    def both(model, state, pattern):
        local = rx.equations.local_terms(model, state.q, state.qd, state.t)
        block = rx.methods.block_solve(
            pattern, local.R, local.B, local.mass_blocks, local.F, local.gamma
        )
        dense = dynamics_terms(model, state.q, state.qd, state.t)
        reference = rx.methods.schur_acceleration(
            dense.C, dense.M, dense.F, dense.gamma, dense.block
        )
        return block, reference

    for mech in mechanisms:
        model, state = mech.build(), mech.initial_state()
        C = rx.equations.constraint_matrix(model, state.q, state.t)
        assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, state.q)))) < 1e-12
        assert float(jnp.max(jnp.abs(C @ state.qd))) < 1e-12
        pattern = pattern or rx.internal.block_pattern(model, rx.analysis.topology(model))
        assert pattern.n_blocks == 64 * 3 + 1 + 129 and pattern.bandwidth <= 3
        block, reference = both(model, state, pattern)
        scale = float(jnp.max(jnp.abs(reference)))
        assert scale > 0.5  # the cranks' tips: ω² L = 1 m/s² at the initial state
        assert float(jnp.max(jnp.abs(block.qdd - reference))) < TOL_SAME_QDD * scale
        assert int(jnp.sum(~block.active)) == 3 * 64  # the out-of-plane rows of each loop


def test_partitioning_keeps_the_branch_of_a_chain_of_spatial_loops():
    """IFToMM A02 with two parallelograms modelled with spatial revolutes (6
    redundant rows, and two more nearly dependent ones at each flat pose), 10 s
    through its singular configurations with the block solver and projection: the
    three cranks stay parallel (the parallelogram branch) to 1e-6 rad, and the
    rigid-body rows stay active throughout. Every
    change of the active set is logged during the integration, each inside a
    window around a flat pose found from the crank angle, and the changes logged
    inside each save interval add up to the change between its saved states."""
    # Two loops: a chain (the loops share crank 1, their eliminations coupled).
    # Five tested nothing more and took longer to trace and compile (the
    # elimination plan is unrolled over the blocks); the
    # motion is the same pendulum-like one (moment of gravity over inertia 3.5/3
    # against 8/7 for five), through the same flat poses.
    n = 2
    mech = models.spatial_twin(models.n_four_bar(n))
    model, state = mech.build(), mech.initial_state()
    traj = rx.simulate(
        model,
        state,
        10.0,
        method=rx.methods.BlockSparse(),
        drift_control=rx.drift.Projection(),
        stepsize_controller=diffrax.PIDController(rtol=1e-7, atol=1e-9),
        saveat=rx.SaveAt(n=101),
        # The active set's log is kept whatever this says; the record of how near
        # C is to losing rank (a second elimination after every step) is not read.
        monitor=None,
    )
    Q = np.asarray(traj.q).reshape(traj.ts.shape[0], -1, 12)
    angle = np.unwrap(np.arctan2(Q[:, : n + 1, 4], Q[:, : n + 1, 3]), axis=0)
    assert np.max(np.abs(angle - angle[:, :1])) < 1e-6
    # Flat poses: the crank angle crosses a multiple of π (linear interpolation
    # between saves, 0.1 s apart; the cranks turn at 1–6 rad/s).
    ts = np.asarray(traj.ts)
    k = np.floor(angle[:, 0] / np.pi)
    flat = [
        ts[i] + (np.pi * max(k[i], k[i + 1]) - angle[i, 0]) / (angle[i + 1, 0] - angle[i, 0]) * 0.1
        for i in np.flatnonzero(np.diff(k))
    ]
    assert len(flat) >= 5
    history = rx.monitors.active_set_history(model, traj)
    assert history.unrecorded == 0
    assert len(history.changes) >= 2 * len(flat)  # rows leave and come back at each
    # Away from the flat poses the active rows are rank C many; the rigid-body rows
    # are never dropped.
    active = np.asarray(history.active)
    assert int(active[0].sum()) == int(traj.structure.rank)
    internal = set(model.internal_rows)
    assert not set(np.flatnonzero(~active[0])) & internal
    for t_before, t_after, _, left in history.changes:
        assert t_before <= t_after
        assert min(abs(t_after - t) for t in flat) < 0.02
        assert not set(left) & internal
    # Saved active sets against the log: composing the logged changes in each save
    # interval gives the saved set at its end.
    rows = set(np.flatnonzero(active[0]))
    for i in range(1, ts.shape[0]):
        for _, t_after, entered, left in history.changes:
            if ts[i - 1] < t_after <= ts[i]:
                rows = (rows - set(left)) | set(entered)
        assert rows == set(np.flatnonzero(active[i])), ts[i]
