"""The hexapod (`models.hexapod`: a 6-UPS Gough–Stewart platform, 13 moving bodies,
156 natural coordinates; the class of Kraus, Winckler & Bock 2001 §9):
configs/hexapod.toml is the model; rank, degree of redundancy, mobility and every
reaction verdict equal those of an SVD of C computed here, for the free platform,
the driven one and a redundantly actuated one (a seventh driven leg); and the free
platform, falling under a tilted gravity, moves alike in absolute coordinates with
the block solver and in joint coordinates with the divide-and-conquer algorithm.

Compilation dominates the time: three analyses (one program per mechanism), one
`decide`, one run per formulation. The runs take Tsit5 and Baumgarte terms, with no
singularity monitor: the programs are then about half the size of the default's (a
projection after every step, the monitor's pivots), and both formulations are
compared on the same footing."""

import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import CONFIGS
from redundax import models
from redundax.io import load_config
from redundax.methods._base import BLOCK_MIN_COORDINATES

# The file and the model compute the same numbers from the same floats (the file
# holds their repr): equal to the last bit (0.0 measured).
TOL_SAME_MODEL = 1e-14
# The SVD's rank: singular values below max(m, n) eps σ₁ are zero (NumPy's
# matrix_rank); at these regular configurations the smallest non-zero one is above
# 1e-2 σ₁ and the zero ones below 1e-15 σ₁ (measured), so the rank is unambiguous.
RANK_GAP = 1e-4
# A row or pair is unique when its part of the left null space (or B_X) is
# round-off: ‖·‖ ≤ this (the non-unique ones are above 0.01, measured).
TOL_NULL = 1e-8
# Free fall, 0.3 s, Tsit5 at rtol 1e-9, atol 1e-11 with Baumgarte terms: the two
# formulations' platform centres differ by 1.9e-11 m (measured); constraint
# violations 3.6e-10 m (absolute) and 2.5e-11 m (joint); energy drift 3.6e-9 J and
# 1.5e-8 J of the 30 N · 0.3 m ≈ 100 J exchanged.
TOL_SAME_POSITION = 1e-8
TOL_VIOLATION = 1e-8
TOL_ENERGY = 1e-6
T_FALL = 0.3  # s: the platform falls 0.32 m (at 0.45 s it would reach the base)
TILTED_GRAVITY = (2.0, 1.0, -9.81)  # m/s²: no symmetry of the hexapod survives


@eqx.filter_jit
def _analysis(model, q, t):
    """The report, C and Φ at (q, t): one program per mechanism (t an array, not a
    Python float, which `filter_jit` would bake in: t = 0 and t = 2.5 s share it)."""
    report = rx.analyze_solvability(model, q, t)
    return (
        report,
        rx.equations.constraint_matrix(model, q, t),
        rx.equations.position_residual(model, q, t),
    )


def _rotated_leg(mech: rx.Mechanism, k: int, new: int, angle: float):
    """Leg `k`'s bodies and pairs turned by `angle` about the vertical axis, renamed
    leg `new`; its driver holds the leg's length (`Constant(0)`)."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    names = {f"lower{k}": f"lower{new}", f"upper{k}": f"upper{new}", "platform": "platform"}
    bodies = [
        dataclasses.replace(
            b,
            name=names[b.name],
            position=tuple(R @ np.asarray(b.position)),
            inertia=R @ np.asarray(b.inertia) @ R.T,
        )
        for b in mech.bodies
        if b.name in (f"lower{k}", f"upper{k}")
    ]
    pairs = []
    for p in mech.pairs:
        if p.name[1:] != str(k):
            continue
        turned = {
            f: tuple(R @ np.asarray(getattr(p, f)))
            for f in ("point", "axis", "normal")
            if getattr(p, f) is not None
        }
        extra = {"motion": rx.motions.Constant(0.0)} if hasattr(p, "motion") else {}
        pairs.append(
            dataclasses.replace(
                p,
                name=f"{p.name[0]}{new}",
                body_i=names.get(p.body_i, p.body_i),
                body_j=names.get(p.body_j, p.body_j),
                **turned,
                **extra,
            )
        )
    return bodies, pairs


def seven_legs() -> rx.Mechanism:
    """The driven hexapod with a seventh driven leg (leg 1 turned by 180° about the
    vertical: from the base at 195° to the platform at 225°), held at its length:
    redundant actuation, analysed at t = 0 only (along the manoeuvre its length would
    contradict the other six). Turned by 100° or 60° instead, the verdicts are the
    same (measured): see `test_analysis_equals_an_svd_of_c`."""
    mech = models.hexapod()
    bodies, pairs = _rotated_leg(mech, 1, 7, np.pi)
    return dataclasses.replace(mech, bodies=[*mech.bodies, *bodies], pairs=[*mech.pairs, *pairs])


def _svd_verdicts(C: np.ndarray, rows: tuple[tuple[int, ...], ...]):
    """Rank, per-row and per-pair uniqueness from an SVD of C: the left null space
    N = U[:, r:]; a row is unique when its row of N vanishes, a pair X when
    B_X = C_Xᵀ N_X does (Wojtyra & Frączek)."""
    U, sigma, _ = np.linalg.svd(C)
    zero = max(C.shape) * np.finfo(float).eps * sigma[0]
    rank = int(np.sum(sigma > zero))
    assert sigma[rank - 1] > RANK_GAP * sigma[0], "an ambiguous rank tests nothing"
    N = U[:, rank:]
    row_unique = np.linalg.norm(N, axis=1) <= TOL_NULL
    pair_unique = np.array(
        [np.linalg.norm(C[list(r)].T @ N[list(r)]) <= TOL_NULL * sigma[0] for r in rows]
    )
    return rank, row_unique, pair_unique


def test_config_is_models_hexapod():
    config = load_config(CONFIGS / "hexapod.toml")
    mech = models.hexapod()
    model, state = mech.build(), mech.initial_state()
    assert config.model.pairs == model.pairs  # names, kinds, rows, bodies, labels
    assert config.model.bodies.names == model.bodies.names
    assert config.model.markers.names == model.markers.names == ("centre",)
    assert isinstance(config.simulation.method, rx.methods.BlockSparse)
    for got, want in [
        (config.model.bodies.mass, model.bodies.mass),
        (config.model.bodies.inertia, model.bodies.inertia),
        (config.model.gravity, model.gravity),
        (config.state.q, state.q),
        (config.state.qd, state.qd),
    ]:
        np.testing.assert_allclose(got, want, rtol=0.0, atol=TOL_SAME_MODEL)
    # At t = 2.5 s the drivers' rows of Φ(q0, t) are −d_k(t) ≠ 0: the motions agree too.
    for t in (0.0, 2.5):
        _, C_file, phi_file = _analysis(config.model, config.state.q, jnp.asarray(t))
        _, C_model, phi_model = _analysis(model, state.q, jnp.asarray(t))
        np.testing.assert_allclose(C_file, C_model, rtol=0.0, atol=TOL_SAME_MODEL)
        np.testing.assert_allclose(phi_file, phi_model, rtol=0.0, atol=TOL_SAME_MODEL)
    assert float(np.max(np.abs(phi_model))) > 1e-2


VARIANTS = {
    # name: (mechanism, (n, rows, rank, p, mobility))
    "free": (lambda: models.hexapod(driven=False), (156, 150, 150, 0, 6)),
    "driven": (lambda: models.hexapod(), (156, 156, 156, 0, 0)),
    "seven legs": (seven_legs, (180, 181, 180, 1, 0)),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_analysis_equals_an_svd_of_c(name):
    """p, mobility and every verdict, per pair and per row (reaction component), as
    an SVD of C at the initial configuration gives them. The six-legged hexapod has
    no dependent row (every reaction unique). With a seventh driven leg p = 1, and
    the one self-stress is an axial force in legs 1, 3, 5 and 7 only: the four are
    copies of one line turned about the vertical axis, so they lie on one regulus of
    a hyperboloid, whose lines span only a 3-system of wrenches (any four are
    dependent). Their driving forces and the axial components of their universal
    and spherical joints (U's e2 = −d, S's e0 = d) are not unique; every transverse
    component, and every reaction of legs 2, 4 and 6, is."""
    build, (n, rows, rank, p, mobility) = VARIANTS[name]
    mech = build()
    model, state = mech.build(), mech.initial_state()
    report, C, phi = _analysis(model, state.q, jnp.asarray(0.0))
    C = np.asarray(C)
    assert float(np.max(np.abs(phi))) < TOL_SAME_MODEL  # assembled at t = 0
    svd_rank, svd_rows, svd_pairs = _svd_verdicts(C, report.rows)
    assert C.shape == (rows, n) and svd_rank == rank
    assert (int(report.rank), int(report.redundancy), int(report.dof)) == (rank, p, mobility)
    assert (rows - svd_rank, n - svd_rank) == (p, mobility)
    np.testing.assert_array_equal(np.asarray(report.row_unique), svd_rows)
    np.testing.assert_array_equal(np.asarray(report.unique), svd_pairs)
    expected = {}
    for pair in model.pairs:
        in_loop = p and pair.name[1] in "1357"
        axial = {"D": (0,), "S": (0,), "U": (2,), "P": ()}[pair.name[0]] if in_loop else ()
        expected[pair.name] = [j not in axial for j in range(len(pair.rows))]
    got = {pair.name: [bool(svd_rows[r]) for r in pair.rows] for pair in model.pairs}
    assert got == expected
    if p:  # the labels of the axial components, as the report names them
        assert model.pair("U7").components[2] == "force e2"
        assert model.pair("S7").components[0] == "force e0"


@pytest.fixture(scope="module")
def free():
    mech = models.hexapod(driven=False)
    model, state = mech.build(), mech.initial_state()
    return model, state, rx.decide(model, state.q, state.t)


def test_decide_counts_and_the_default_path(free):
    """`decide` agrees with the SVD counts, finds the 5 independent loops of 14
    links and 18 joints, and `simulate`'s default method takes the block solver
    here (156 coordinates ≥ `BLOCK_MIN_COORDINATES`)."""
    model, _, structure = free
    assert (int(structure.rank), int(structure.redundancy), int(structure.dof)) == (150, 0, 6)
    assert structure.topology.n_loops == 5 == len(model.pairs) - (model.bodies.count + 1) + 1
    assert np.all(np.asarray(structure.stable_unique))
    assert model.n_coordinates >= BLOCK_MIN_COORDINATES
    assert rx.methods.specialise(rx.methods.NullSpace(), structure, model).block


def test_free_platform_falls_alike_in_absolute_and_joint_coordinates(free):
    """0.3 s of the free platform falling under a tilted gravity (it drops 0.32 m,
    drifts sideways and tilts): natural coordinates with the block solver, and joint
    coordinates (21: the tree U, P of every leg and S1; S2…S6 cut) with the DCA,
    give the same platform centre, stay on the constraints and conserve energy."""
    model, state, structure = free
    model = eqx.tree_at(lambda m: m.gravity, model, np.asarray(TILTED_GRAVITY))
    options = dict(
        saveat=rx.SaveAt(n=7),
        solver=diffrax.Tsit5(),
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-11),
        drift_control=rx.drift.Baumgarte(),
        monitor=None,
    )
    absolute = rx.simulate(
        model, state, T_FALL, structure=structure, method=rx.methods.BlockSparse(), **options
    )
    jm = rx.joint_coordinates.joint_model(model, state.q)
    assert jm.n_coordinates == 21 and len(jm.closure_rows) == 15
    joint = rx.simulate(jm, rx.joint_coordinates.to_joint_state(jm, state), T_FALL, **options)
    centre = jax.jit(jax.vmap(lambda x: rx.equations.marker_positions(model, x)[0]))
    c_abs, c_joint = np.asarray(centre(absolute.q)), np.asarray(centre(joint.x))
    np.testing.assert_allclose(absolute.ts, joint.ts, rtol=0.0, atol=1e-15)
    assert float(np.max(np.abs(c_abs - c_joint))) < TOL_SAME_POSITION
    drop = c_abs[0] - c_abs[-1]
    assert drop[2] > 0.3 and drop[0] < -0.05 and drop[1] < -0.02  # falls, drifts along g
    for run in (absolute, joint):
        assert bool(np.all(run.valid))
        assert float(np.max(run.position_violation)) < TOL_VIOLATION
        assert float(np.max(np.abs(run.energy - run.energy[0]))) < TOL_ENERGY


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"height": 0.0}, "hexapod: height must be a positive number"),
        ({"platform_mass": -10.0}, "hexapod: platform_mass must be a positive number"),
        ({"spread": 0.0}, r"hexapod: spread must be strictly between 0 and π/3"),
        ({"spread": np.pi / 3}, r"hexapod: spread must be strictly between 0 and π/3"),
        ({"height": 1.5}, r"hexapod: leg 1 is 1.52\d* m long"),
        ({"height": 0.3}, r"hexapod: leg 1 is 0.41\d* m long"),
    ],
)
def test_a_hexapod_that_cannot_be_built_is_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        models.hexapod(**kwargs)


def test_a_vertical_leg_gets_a_horizontal_ground_pin():
    """Equal radii and a 30° spread make every leg vertical (base and platform
    points above each other): the universal joint's ground pin is the base
    circle's tangent, and the mechanism is assembled."""
    mech = models.hexapod(platform_radius=0.5, spread=np.pi / 6)
    u1 = mech.pairs[0]
    np.testing.assert_allclose(np.cross(u1.axis, u1.normal), [0.0, 0.0, -1.0], atol=1e-15)
    model, state = mech.build(), mech.initial_state()
    assert model.n_coordinates == 156 and state.q.shape == (156,)
