"""Compliance makes reactions unique (issue 4, item 5).

The oracles: the rigid reactions of the uniquely solvable pairs (null-space
method), and the finite-stiffness penalty model, an independent computation
(a different linear system) that must tend to `Compliant` as its stiffnesses grow.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx

# One compilation per method type; stiffnesses are array leaves.
_reactions = eqx.filter_jit(rx.reactions)

# Stiffness scale at which the unique reactions are stated to be within 1e-4
# relative of the rigid ones (measured 2.6e-5 on the mobile robot simulated to 1 s,
# 9.1e-7 at the projected state of `robot_state`: the error falls like 1/stiffness).
STIFF = 1e8
TOL_CONVERGED = 1e-4
# Non-unique reactions must move by more than this when one stiffness ratio
# changes 10× (measured 18 % for B and C of the mobile robot; 17.7 % and 18.7 % at
# the state of `robot_state`).
MIN_CHANGE = 0.10


@pytest.fixture(scope="module")
def robot_state():
    """The mobile robot at t = 1 s, its steering turned by the drive: the initial
    (straight, symmetric) state projected onto the constraints at t = 1 s, positions
    then velocities. No simulation: the claims are about the reactions at one state
    on the constraints, and one that is not symmetric (a simulation to t = 1 s cost
    this file ~20 s of compilation for a state of the same kind)."""
    mech = rx.models.mobile_robot()
    model, state = mech.build(), mech.initial_state()
    q, qd = eqx.filter_jit(rx.drift.Projection(iterations=6))(model, state.q, state.qd, 1.0)
    assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, 1.0)))) < 1e-13
    return model, q, qd, 1.0


def _relative(a, b):
    return float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b))


def test_unique_reactions_converge_to_rigid_values(robot_state):
    model, q, qd, t = robot_state
    rigid = _reactions(model, q, qd, t)
    k = rx.methods.joint_stiffness(model, 1.0)
    errors = []
    for scale in (1e4, 1e6, STIFF):
        pen = _reactions(model, q, qd, t, method=rx.methods.Penalty(stiffness=scale * k))
        errors.append(
            max(
                _relative(pen.wrench[i], rigid.wrench[i])
                for i in range(len(model.pairs))
                if rigid.unique[i]
            )
        )
    assert errors[-1] < TOL_CONVERGED
    # First-order convergence in 1/stiffness: 100× stiffer, about 100× closer.
    assert 30.0 < errors[0] / errors[1] < 300.0
    # At 1e8 the penalty system (condition number ~1e13) adds round-off of the size of
    # the first-order error itself, and it depends on the order of summation of the
    # BLAS kernels (measured 2.6e-5 with multi-threaded Eigen, 4.3e-6 single-threaded):
    # still at least 30x closer, no upper bound.
    assert errors[1] / errors[2] > 30.0


def test_penalty_tends_to_compliant_multipliers(robot_state):
    model, q, qd, t = robot_state
    k = rx.methods.joint_stiffness(model, 1.0, {"B": 10.0})
    limit = _reactions(model, q, qd, t, method=rx.methods.Compliant(k)).multipliers
    gaps = [
        float(
            jnp.max(
                jnp.abs(
                    _reactions(model, q, qd, t, method=rx.methods.Penalty(stiffness=s * k)).multipliers
                    - limit
                )
            )
        )
        for s in (1e5, 1e7)
    ]
    assert gaps[1] < 1e-5 * float(jnp.max(jnp.abs(limit)))
    assert gaps[0] / gaps[1] > 30.0


def test_non_unique_reactions_depend_on_stiffness_ratio(robot_state):
    model, q, qd, t = robot_state
    rigid = _reactions(model, q, qd, t)
    equal = _reactions(model, q, qd, t, method=rx.methods.Compliant(rx.methods.joint_stiffness(model, 1.0)))
    ratio = _reactions(
        model, q, qd, t, method=rx.methods.Compliant(rx.methods.joint_stiffness(model, 1.0, {"B": 10.0}))
    )
    for i in range(len(model.pairs)):
        if rigid.unique[i]:
            np.testing.assert_allclose(equal.wrench[i], rigid.wrench[i], rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(ratio.wrench[i], rigid.wrench[i], rtol=1e-8, atol=1e-10)
    for name in ("B", "C"):
        i = model.pair_names.index(name)
        assert not bool(rigid.unique[i])
        change = _relative(ratio.wrench[i], equal.wrench[i])
        assert change > MIN_CHANGE, (name, change)
    # Both are equilibrium solutions: C^T λ is the same total reaction.
    C = rx.equations.constraint_matrix(model, q, t)
    np.testing.assert_allclose(C.T @ equal.multipliers, C.T @ ratio.multipliers, atol=1e-9)


def test_compliant_weights_equal_weighted_least_norm(robot_state):
    """Oracle: the closed form λ = K C (Cᵀ K C)⁺ f of compatible deflections."""
    model, q, qd, t = robot_state
    k = np.asarray(rx.methods.joint_stiffness(model, 1.0, {"B": 10.0, "W1": 3.0}))
    r = _reactions(model, q, qd, t, method=rx.methods.Compliant(k))
    C = np.asarray(rx.equations.constraint_matrix(model, q, t))
    K = np.diag(k)
    expected = K @ C @ np.linalg.pinv(C.T @ K @ C, rcond=1e-12) @ np.asarray(r.total)
    np.testing.assert_allclose(r.multipliers, expected, rtol=1e-7, atol=1e-9)


def test_compliant_under_jit_and_grad(robot_state):
    model, q, qd, t = robot_state
    k = rx.methods.joint_stiffness(model, 1.0)
    i = model.pair_names.index("B")

    def b_force(scale):
        in_b = np.isin(np.arange(k.shape[0]), model.pair("B").rows)
        kk = k * jnp.where(in_b, scale, 1.0)
        w = _reactions(model, q, qd, t, method=rx.methods.Compliant(kk)).wrench[i]
        return jnp.sum(w**2)

    eager = b_force(2.0)
    np.testing.assert_allclose(jax.jit(b_force)(2.0), eager, rtol=1e-12)
    g = jax.grad(b_force)(2.0)
    h = 1e-4
    fd = (b_force(2.0 + h) - b_force(2.0 - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5)
    assert abs(float(g)) > 1e-6  # the ratio really moves the non-unique reaction


def test_joint_stiffness_errors():
    model = rx.models.mobile_robot().build()
    with pytest.raises(ValueError, match="no pair named 'Z'"):
        rx.methods.joint_stiffness(model, 1.0, {"Z": 1.0})
    with pytest.raises(ValueError, match="pair 'A' has 2 rows, got 3"):
        rx.methods.joint_stiffness(model, 1.0, {"A": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="positive"):
        rx.methods.joint_stiffness(model, -1.0)


def test_joint_stiffness_spatial_rows():
    model = rx.models.bricard().build()
    k = np.asarray(rx.methods.joint_stiffness(model, (1e6, 1e3)))
    assert np.all(np.isinf(k[list(model.internal_rows)]))
    rows = model.pair("J0").rows
    # axial, two transverse forces: linear; two bending moments: angular.
    np.testing.assert_array_equal(k[list(rows)], [1e6, 1e6, 1e6, 1e3, 1e3])


def test_penalty_keeps_rigid_body_rows_exact_on_spatial_models():
    """`joint_stiffness` gives the rigid-body rows of natural coordinates an infinite
    stiffness; `Penalty` keeps them as exact constraints (it used to multiply them by
    ∞: NaN). Bricard's linkage at rest under gravity: finite multipliers, and q̈ and
    the total reaction Cᵀλ (always unique) tend to the rigid null-space values like
    1/stiffness (measured 1.7e-5 → 1.7e-7 for q̈ from 1e6 to 1e8)."""
    mech = rx.models.bricard()
    model, s = mech.build(), mech.initial_state()
    rigid = _reactions(model, s.q, s.qd, s.t)
    errors = []
    for k in (1e6, 1e8):
        pen = _reactions(
            model, s.q, s.qd, s.t, method=rx.methods.Penalty(stiffness=rx.methods.joint_stiffness(model, k))
        )
        assert bool(jnp.all(jnp.isfinite(pen.multipliers)))
        errors.append((_relative(pen.qdd, rigid.qdd), _relative(pen.total, rigid.total)))
    assert errors[1][0] < 1e-6 and errors[1][1] < 1e-6, errors
    for before, after in zip(errors[0], errors[1], strict=True):
        assert 30.0 < before / after < 300.0, errors
