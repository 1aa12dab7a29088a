"""The divide-and-conquer kernel (redundax.joint_coordinates._dca) against a dense
NumPy solve of the KKT system [M Gᵀ; G 0][a; λ] = [b; γ]."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax  # noqa: F401  (float64)
from helpers import TOL_FD, central_difference
from redundax.joint_coordinates._dca import (
    assembly_nodes,
    assembly_tree,
    dca_plan,
    dca_solve,
    decide_active_rows,
    host_solve,
    self_stresses,
)

# The DCA is a sequence of Schur complements of the KKT system: against a
# backward-stable dense solve, relative agreement to round-off times the
# (moderate) conditioning of the random test problems.
TOL_DENSE = 1e-10
# Gᵀ N of a self-stress basis: round-off relative to ‖G‖ ‖N‖.
TOL_SELF_STRESS = 1e-12
# The same program traced, jitted or vmapped: round-off.
TOL_SAME_PROGRAM = 1e-12

# Compiled once per plan; eager execution compiles each small operation alone.
solve = jax.jit(dca_solve)
stresses = self_stresses  # host side (NumPy): no compilation


class Problem:
    """Rows between bodies (−1 the ground) and random values, as NumPy arrays."""

    def __init__(self, n, d, joints, G_a, G_b, rng, consistent=False):
        self.n, self.d = n, d
        self.body_a = np.array([a for a, _, k in joints for _ in range(k)])
        self.body_b = np.array([b for _, b, k in joints for _ in range(k)])
        self.joint_of_row = np.array([j for j, (_, _, k) in enumerate(joints) for _ in range(k)])
        self.G_a, self.G_b = G_a, G_b
        A = rng.standard_normal((n, d, d))
        self.inertia = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
        self.bias = rng.standard_normal((n, d))
        G = self.dense_G()
        # A rank-deficient G needs γ in its range: γ = G a for some a.
        self.gamma = G @ rng.standard_normal(n * d) if consistent else rng.standard_normal(len(G))

    def dense_G(self):
        G = np.zeros((len(self.body_a), self.n * self.d))
        for r, (a, b) in enumerate(zip(self.body_a, self.body_b, strict=True)):
            if a >= 0:
                G[r, a * self.d : (a + 1) * self.d] += self.G_a[r]
            if b >= 0:
                G[r, b * self.d : (b + 1) * self.d] += self.G_b[r]
        return G

    def dense_solve(self, inertia=None, bias=None):
        """(a, λ) of the KKT system by least squares (a is unique; λ the
        minimum-norm one)."""
        inertia = self.inertia if inertia is None else inertia
        bias = self.bias if bias is None else bias
        G = self.dense_G()
        R, nd = G.shape
        M = np.zeros((nd, nd))
        for i in range(self.n):
            M[i * self.d : (i + 1) * self.d, i * self.d : (i + 1) * self.d] = inertia[i]
        K = np.block([[M, G.T], [G, np.zeros((R, R))]])
        x = np.linalg.lstsq(K, np.concatenate([bias.reshape(-1), self.gamma]), rcond=None)[0]
        return x[:nd].reshape(self.n, self.d), x[nd:]

    def arrays(self):
        return tuple(
            jnp.asarray(x) for x in (self.inertia, self.bias, self.G_a, self.G_b, self.gamma)
        )

    def plan(self, order=None, ground="root"):
        pairs = list(zip(self.body_a, self.body_b, strict=True))
        tree = assembly_tree(self.n, pairs, order, ground=ground)
        return dca_plan(tree, self.body_a, self.body_b, self.joint_of_row)


def random_rows(joints, d, rng):
    R = sum(k for _, _, k in joints)
    return rng.standard_normal((R, d)), rng.standard_normal((R, d))


def chain(n, d, rows_per_joint, seed):
    rng = np.random.default_rng(seed)
    joints = [(i - 1, i, rows_per_joint) for i in range(n)]
    return Problem(n, d, joints, *random_rows(joints, d, rng), rng)


def tree_with_branches(seed, dependent_row=False):
    """Planar, branching at bodies 0, 1 and 2; one joint oriented child → parent;
    optionally one joint with a third row that combines its other two."""
    rng = np.random.default_rng(seed)
    joints = [(-1, 0, 2), (0, 1, 2), (0, 2, 1), (3, 1, 2), (1, 4, 2), (2, 5, 3), (5, 6, 2)]
    G_a, G_b = random_rows(joints, 3, rng)
    if dependent_row:
        joints[3] = (3, 1, 3)
        r = 5  # the first row of joint 3
        G_a = np.insert(G_a, r + 2, 0.3 * G_a[r] - 2.0 * G_a[r + 1], axis=0)
        G_b = np.insert(G_b, r + 2, 0.3 * G_b[r] - 2.0 * G_b[r + 1], axis=0)
    return Problem(7, 3, joints, G_a, G_b, rng, consistent=dependent_row)


def revolute_rows(p):
    """Planar twist (v_x, v_y, ω) of a body in the fixed frame: the velocity of its
    point at p is v + ω (−p_y, p_x)."""
    return np.array([[1.0, 0.0, -p[1]], [0.0, 1.0, p[0]]])


def parallelogram(seed, floating_frame=False):
    """Three parallel cranks (bodies 0, 1, 2) pinned to the ground (or to a frame,
    body 4, welded to the ground by three rows) at (k, 0) and to one coupler
    (body 3) at their tips: 12 revolute rows of rank 11, one self-stress."""
    rng = np.random.default_rng(seed)
    tip = 0.8 * np.array([math.cos(0.7), math.sin(0.7)])
    joints, G_a, G_b = [], [], []
    frame = 4 if floating_frame else -1
    if floating_frame:
        joints.append((4, -1, 3))
        G_a.append(np.eye(3))
        G_b.append(np.zeros((3, 3)))
    for k in range(3):
        base = np.array([float(k), 0.0])
        joints += [(frame, k, 2), (k, 3, 2)]
        G_a += [revolute_rows(base), revolute_rows(base + tip)]
        G_b += [-revolute_rows(base), -revolute_rows(base + tip)]
    n = 5 if floating_frame else 4
    return Problem(n, 3, joints, np.concatenate(G_a), np.concatenate(G_b), rng, consistent=True)


def ladder(loops, seed):
    """IFToMM A02's chain of parallelograms, planar: cranks 0…loops pinned to the
    ground at (k, 0), couplers loops+1…2·loops joining the tips of consecutive
    cranks (body order and joint order as `models.n_four_bar`). p = 0."""
    rng = np.random.default_rng(seed)
    tip = np.array([math.cos(1.1), math.sin(1.1)])
    pins = [(-1, k, np.array([float(k), 0.0])) for k in range(loops + 1)]
    pins += [
        (crank, loops + k, np.array([float(crank), 0.0]) + tip)
        for k in range(1, loops + 1)
        for crank in (k - 1, k)
    ]
    joints = [(a, b, 2) for a, b, _ in pins]
    G_a = np.concatenate([revolute_rows(p) for _, _, p in pins])
    return Problem(2 * loops + 1, 3, joints, G_a, -G_a, rng)


def relative_error(x, reference):
    return float(np.max(np.abs(np.asarray(x) - reference)) / np.max(np.abs(reference)))


def left_null_space(G):
    """An orthonormal basis of the self-stresses of G, by SVD."""
    u, sigma, _ = np.linalg.svd(G)
    rank = int(np.sum(sigma > 1e-10 * sigma[0]))
    return u[:, rank:]


def check_against_dense(problem, plan, multipliers, accelerations):
    """a equal to the dense solve's; λ on the rows no self-stress touches too, and
    Gᵀ λ everywhere (λ is unique only up to a self-stress)."""
    G = problem.dense_G()
    a, lam = problem.dense_solve()
    assert relative_error(accelerations, a) < TOL_DENSE
    assert relative_error(G.T @ np.asarray(multipliers), G.T @ lam) < TOL_DENSE
    unique = np.all(np.abs(left_null_space(G)) < TOL_SELF_STRESS, axis=1)
    error = np.max(np.abs(np.asarray(multipliers)[unique] - lam[unique]), initial=0.0)
    assert error < TOL_DENSE * np.max(np.abs(lam))
    return unique


def check_host_solve(problem, plan, active, solution):
    """The host-side pass (NumPy, what the verdicts' nearby configuration is reached
    with) against the dense solve, and against the compiled one to round-off."""
    a, lam = host_solve(plan, active, *problem.arrays())
    check_against_dense(problem, plan, lam, a)
    assert relative_error(a, np.asarray(solution.accelerations)) < TOL_SAME_PROGRAM
    assert relative_error(lam, np.asarray(solution.multipliers)) < TOL_SAME_PROGRAM


def check_self_stresses(problem, plan, active, inertia, G_a, G_b):
    """p = R − rank G columns, independent, with Gᵀ N = 0."""
    G = problem.dense_G()
    p = left_null_space(G).shape[1]
    assert active.n_redundant == p
    assert sum(node.nullity for node in assembly_nodes(plan, active)) == p
    N = np.asarray(stresses(plan, active, inertia, G_a, G_b))
    assert N.shape == (len(G), p)
    assert np.linalg.norm(G.T @ N) < TOL_SELF_STRESS * np.linalg.norm(G) * np.linalg.norm(N)
    assert np.linalg.matrix_rank(N) == p
    return N


def test_chain_matches_dense():
    problem = chain(7, 6, 5, seed=0)
    plan = problem.plan()
    inertia, bias, G_a, G_b, gamma = problem.arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    assert active.n_redundant == 0
    solution = solve(plan, active, inertia, bias, G_a, G_b, gamma)
    unique = check_against_dense(problem, plan, solution.multipliers, solution.accelerations)
    assert np.all(unique)


def test_tree_with_a_dependent_row_matches_dense():
    problem = tree_with_branches(seed=1, dependent_row=True)
    plan = problem.plan()
    inertia, bias, G_a, G_b, gamma = problem.arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    solution = solve(plan, active, inertia, bias, G_a, G_b, gamma)
    unique = check_against_dense(problem, plan, solution.multipliers, solution.accelerations)
    check_host_solve(problem, plan, active, solution)
    # Only the joint with the dependent row has multipliers that are not unique.
    assert set(np.flatnonzero(~unique)) == {5, 6, 7}
    N = check_self_stresses(problem, plan, active, inertia, G_a, G_b)
    assert set(np.flatnonzero(np.abs(N[:, 0]) > TOL_SELF_STRESS * np.max(np.abs(N)))) <= {5, 6, 7}


@pytest.mark.parametrize("floating_frame, order", [(False, ((0, 3), (1, 2))), (True, None)])
def test_redundant_loop_and_self_stresses(floating_frame, order):
    problem = parallelogram(seed=2, floating_frame=floating_frame)
    plan = problem.plan(order)
    inertia, bias, G_a, G_b, gamma = problem.arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    solution = solve(plan, active, inertia, bias, G_a, G_b, gamma)
    check_against_dense(problem, plan, solution.multipliers, solution.accelerations)
    check_host_solve(problem, plan, active, solution)
    # The dropped row holds too (it is dependent, and γ consistent).
    G = problem.dense_G()
    residual = G @ np.asarray(solution.accelerations).reshape(-1) - problem.gamma
    assert np.max(np.abs(residual)) < TOL_DENSE * np.max(np.abs(problem.gamma))
    N = check_self_stresses(problem, plan, active, inertia, G_a, G_b)
    # The loops close through the ground, or inside the mechanism (through the
    # frame): either way the self-stress reaches rows below the dropping node.
    (dropping,) = [x for x in assembly_nodes(plan, active) if x.nullity]
    below = np.setdiff1d(np.arange(len(G)), dropping.crossing)
    assert np.max(np.abs(N[below, 0])) > 0.1 * np.max(np.abs(N))
    assert (dropping.node == plan.tree.root) == (not floating_frame)


def test_jit_equals_eager():
    # Eager execution compiles every operation on its own: one body keeps it short.
    problem = chain(1, 3, 2, seed=3)
    plan = problem.plan()
    args = problem.arrays()
    active = decide_active_rows(plan, args[0], args[2], args[3])
    eager = dca_solve(plan, active, *args)
    jitted = solve(plan, active, *args)
    for x, y in [
        (jitted.accelerations, eager.accelerations),
        (jitted.multipliers, eager.multipliers),
    ]:
        assert relative_error(x, np.asarray(y)) < TOL_SAME_PROGRAM
    check_against_dense(problem, plan, eager.multipliers, eager.accelerations)


def test_vmap_matches_dense():
    problems = [tree_with_branches(seed=s, dependent_row=True) for s in (4, 5, 6)]
    plan = problems[0].plan()
    inertia, _, G_a, G_b, _ = problems[0].arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    batch = [jnp.stack(xs) for xs in zip(*(p.arrays() for p in problems), strict=True)]
    batched = jax.jit(jax.vmap(dca_solve, in_axes=(None, None, 0, 0, 0, 0, 0)))(
        plan, active, *batch
    )
    for k, problem in enumerate(problems):
        check_against_dense(problem, plan, batched.multipliers[k], batched.accelerations[k])


def test_gradients_match_dense_finite_differences():
    problem = parallelogram(seed=2)
    plan = problem.plan(((0, 3), (1, 2)))
    inertia, bias, G_a, G_b, gamma = problem.arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    weights = np.random.default_rng(8).standard_normal(bias.shape)

    def objective(inertia, bias):
        a = dca_solve(plan, active, inertia, bias, G_a, G_b, gamma).accelerations
        return jnp.sum(jnp.asarray(weights) * a)

    d_inertia, d_bias = jax.jit(jax.grad(objective, argnums=(0, 1)))(inertia, bias)

    def dense(inertia_entry, bias_entry):
        I, b = problem.inertia.copy(), problem.bias.copy()
        I[1, 2, 2] = inertia_entry
        b[3, 0] = bias_entry
        return np.sum(weights * problem.dense_solve(I, b)[0])

    fd_inertia = central_difference(lambda x: dense(x[0], problem.bias[3, 0]), [inertia[1, 2, 2]])
    fd_bias = central_difference(lambda x: dense(problem.inertia[1, 2, 2], x[0]), [bias[3, 0]])
    assert abs(float(d_inertia[1, 2, 2]) - fd_inertia[0]) < TOL_FD * abs(fd_inertia[0])
    assert abs(float(d_bias[3, 0]) - fd_bias[0]) < TOL_FD * abs(fd_bias[0])


def test_long_chain_plan_is_logarithmic_and_local():
    problem = chain(64, 6, 5, seed=9)
    plan = problem.plan()
    assert max(plan.tree.height) <= 8
    assert max(len(h) for h in plan.handles) <= 2 * 5
    assert max(len(c) for c in plan.crossing) <= 5
    # Every row is owned by exactly one node.
    owned = sorted(r for c in plan.crossing for r in c)
    assert owned == list(range(len(problem.body_a)))


@pytest.mark.parametrize(
    "order, message",
    [
        (((0, 1), (2,)), "body 3 is missing"),
        (((0, 1), (2, 3, 1)), "body 1 appears 2 times"),
        (((0, 1), (2, 3, 7)), "body 7 is not a body"),
    ],
)
def test_bad_order_names_the_body(order, message):
    with pytest.raises(ValueError, match=message):
        assembly_tree(4, [(-1, 0), (0, 1), (1, 2), (2, 3)], order)


# (problem, order, p = R − rank G).
SPLIT_CASES = {
    "chain": (lambda: chain(7, 6, 5, seed=10), None, 0),
    "tree": (lambda: tree_with_branches(seed=11, dependent_row=True), None, 1),
    # A given order: the ground copies join their cranks inside it.
    "parallelogram": (lambda: parallelogram(seed=12), ((0, 3), (1, 2)), 1),
    "ladder": (lambda: ladder(3, seed=13), None, 0),
}


@pytest.mark.parametrize("case", SPLIT_CASES)
def test_split_ground_matches_dense(case):
    make, order, p = SPLIT_CASES[case]
    problem = make()
    plan = problem.plan(order, ground="split")
    tree = plan.tree
    # Every body pinned to the ground is first joined with its own ground leaf,
    # and that node owns exactly the body's rows to the ground.
    for k, body in enumerate(tree.grounded):
        unit = tree.parent[body]
        assert tree.children(unit) == (body, tree.n_bodies + k)
        rows = np.flatnonzero((problem.body_a == -1) & (problem.body_b == body))
        assert plan.crossing[unit] == tuple(rows)
    inertia, bias, G_a, G_b, gamma = problem.arrays()
    active = decide_active_rows(plan, inertia, G_a, G_b)
    assert assembly_nodes(plan, active)[-1].bodies == tuple(range(problem.n))
    solution = solve(plan, active, inertia, bias, G_a, G_b, gamma)
    check_against_dense(problem, plan, solution.multipliers, solution.accelerations)
    check_host_solve(problem, plan, active, solution)
    assert left_null_space(problem.dense_G()).shape[1] == p
    assert active.n_redundant == p
    if p:
        check_self_stresses(problem, plan, active, inertia, G_a, G_b)


def test_split_ground_keeps_the_ladder_narrow():
    loops = 64
    problem = ladder(loops, seed=14)
    root, split = problem.plan(), problem.plan(ground="split")
    # Split, the widest node is a crank's leaf: its ground pin and the pins of its
    # two couplers, 2 rows each. A subassembly (a contiguous stretch of the chain
    # crank0, coupler1, crank1, …) has at most its two end pins as handles.
    assert split.width <= 3 * 2
    assert max(len(h) for x, h in enumerate(split.handles) if x >= problem.n) <= 2 * 2
    # At the root, the ground meets a mechanism whose handles are every ground pin.
    assert root.width >= 2 * (loops + 1)
    assert max(split.tree.height) == max(root.tree.height) <= math.ceil(math.log2(problem.n)) + 1
    owned = sorted(r for c in split.crossing for r in c)
    assert owned == list(range(len(problem.body_a)))


def test_split_ground_names_the_missing_ground_leaf():
    with pytest.raises(ValueError, match="ground must be 'root' or 'split'"):
        assembly_tree(2, [(-1, 0), (0, 1)], ground="base")
    tree = assembly_tree(2, [(0, 1)], ground="split")  # the pin (-1, 0) not given
    with pytest.raises(ValueError, match="row 0 joins body 0 to the ground, but the tree"):
        dca_plan(tree, [-1, 0], [0, 1], [0, 1])
