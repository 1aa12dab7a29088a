"""Shared tolerances (named, never bare literals) and small test utilities."""

import math
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np

import redundax as rx

# Reference data published by others, vendored with its source (tests/data/README.md).
DATA = Path(__file__).resolve().parent / "data"
CONFIGS = Path(__file__).resolve().parents[1] / "configs"

# Exactness of assembled quantities against hand-derived oracles (float64 round-off).
TOL_EXACT = 1e-12
# Paper values printed with 3 significant digits.
TOL_PAPER = 1e-3
# Central finite differences with h ~ eps^(1/3): truncation + round-off ~ 1e-10 relative.
TOL_FD = 1e-6
# Solvability: B_X of a unique pair is round-off; of a non-unique one, O(1).
TOL_ZERO_B = 1e-10
# A projected state: constraint residual below this [m, rad, m/s].
TOL_CONSISTENT = 1e-10


def central_difference(f, x, h=None):
    """Central finite-difference derivative of scalar-valued `f` along each entry of `x`."""
    x = np.asarray(x, dtype=float)
    h = np.cbrt(np.finfo(float).eps) * max(1.0, float(np.max(np.abs(x)))) if h is None else h
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        out.flat[k] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


def read_reference(name, dtype=float):
    """A table of tests/data/: `(column names, rows)`. Its `#` lines (source,
    licence) are skipped wherever they are; the first other line names the columns."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    header, *rows = [line for line in lines if line.strip() and not line.startswith("#")]
    return header.split(","), np.loadtxt(rows, delimiter=",", dtype=dtype, ndmin=2)


# --- dynamics (tests/test_dynamics.py) ---
# Same motion by different methods at rtol = 1e-10, atol = 1e-12 (issue 3): max |Δq| [m, rad].
TOL_SAME_MOTION = 1e-7
# Unique reactions by different methods: relative difference.
TOL_SAME_REACTION = 1e-6
# Non-unique reactions must differ by more than this (relative) somewhere in the run.
MIN_NONUNIQUE_DIFFERENCE = 1e-3
# Constraint violation with projection (positions and velocities).
TOL_PROJECTED_VIOLATION = 1e-9
# Documented bound with Baumgarte (α = β = 10 /s) alone at rtol = 1e-8, atol = 1e-10.
TOL_BAUMGARTE_VIOLATION = 1e-8
# Energy drift relative to the largest kinetic energy of the run (rtol = 1e-11).
TOL_ENERGY_RELATIVE = 1e-7
# IFToMM A01 high-precision threshold [m].
TOL_A01_POSITION = 1e-3
# IFToMM A02 high precision on B0 [m] (the same level).
TOL_A02_POSITION = 1e-3
# Closed-form reactions (with 1e-9-kg "massless" links or 1e-12 m² point-mass inertia).
TOL_CLOSED_FORM = 1e-6
# Gradients through Diffrax against central differences: relative error.
TOL_FD_SOLVE = 1e-5


def assert_similar_steps(steps, reference, what=""):
    """Two compiled programs of one run (eager and `jit`, single and `vmap`, two JAX
    releases) take about as many steps: the adaptive controller accepts or rejects a
    step on an error estimate near its tolerance, which round-off tips either way
    (jax 0.12: 8 against 10 steps for one robot variant), so a count is never compared
    exactly; the states and violations are asserted to their tolerances instead. The
    bound still catches another controller or drift control (Baumgarte instead of the
    projection: 2-3x the steps on these motions)."""
    steps, reference = int(steps), int(reference)
    assert abs(steps - reference) <= max(2, 0.25 * reference), (what, steps, reference)


def planar_rotation(a: float) -> np.ndarray:
    return np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])


def planar_twin(mech: rx.Mechanism) -> rx.Mechanism:
    """The spatial model of a planar mechanism (`rx.models.spatial_twin`)."""
    return rx.models.spatial_twin(mech)


# --- force elements (tests/test_forces.py) ---
# Linear oscillators (spring, torsion spring, dampers) against their closed-form motion
# at rtol = 1e-10, atol = 1e-12 [m, rad].
TOL_OSCILLATOR = 1e-8
# Accelerations at a closed-form static equilibrium (bushing), relative to g.
TOL_STATIC = 1e-9
# Andrews' squeezer: the seven angles at t = 0.03 s against the Bari test set [rad]
# (issue 14).
TOL_ANDREWS_ANGLE = 1e-6


def a02_exact_b0(n: int, ts) -> np.ndarray:
    """B0 of IFToMM A02 with n parallelograms on its parallelogram branch, from the
    exact 1-DOF reduction: cranks (1/3 kg m² about their pivots) and translating
    couplers, θ the crank angle from the ground line, T = ½ ((n + 1)/3 + n) θ̇²,
    V = g ((n + 1)/2 + n) sin θ, θ(0) = π/2, θ̇(0) = −1 rad/s (B0 at 1 m/s along x);
    SciPy's DOP853 at rtol = atol = 1e-12."""
    from scipy.integrate import solve_ivp

    a = 9.81 * ((n + 1) / 2 + n) / ((n + 1) / 3 + n)
    sol = solve_ivp(
        lambda t, y: [y[1], -a * np.cos(y[0])],
        (0.0, float(ts[-1])),
        [np.pi / 2, -1.0],
        t_eval=ts,
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
    )
    return np.stack([np.cos(sol.y[0]), np.sin(sol.y[0])], axis=1)


def a02_flat_instants(n: int, t_final: float) -> np.ndarray:
    """The instants the exact A02 cranks lie along the ground line (B0 at y = 0)."""
    ts = np.linspace(0.0, t_final, 100_001)
    y = a02_exact_b0(n, ts)[:, 1]
    k = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return ts[k] - y[k] * (ts[k + 1] - ts[k]) / (y[k + 1] - y[k])


def a02_config(n: int, t_final: float, n_save: int) -> str:
    """IFToMM A02 with n parallelograms (`redundax.models.n_four_bar(n)`) as a
    configuration file with no method, solver or drift control: links 1 m, 1 kg
    slender bars, cranks vertical at t = 0, B0 at 1 m/s along x, g = 9.81 m/s²."""
    lines = [
        "[mechanism]",
        f'name = "A02 N = {n}"',
        "gravity = [0.0, -9.81]",
        "[simulation]",
        f"t_final = {t_final}",
        f"n_save = {n_save}",
    ]
    bar = ["mass = 1.0", f"inertia = {1 / 12!r}"]
    for k in range(n + 1):
        lines += ["[[bodies]]", f'name = "crank{k}"', *bar, f"position = [{float(k)}, 0.5]"]
        lines += [f"angle = {math.pi / 2!r}", "velocity = [0.5, 0.0]", "angular_velocity = -1.0"]
    for k in range(1, n + 1):
        lines += ["[[bodies]]", f'name = "coupler{k}"', *bar, f"position = [{k - 0.5}, 1.0]"]
        lines += ["velocity = [1.0, 0.0]"]
    for k in range(n + 1):
        lines += ["[[pairs]]", f'name = "O{k}"', 'type = "revolute"', f'body_i = "crank{k}"']
        lines += ['body_j = "ground"', "point_i = [-0.5, 0.0]", f"point_j = [{float(k)}, 0.0]"]
    for k in range(1, n + 1):
        for name, crank, end in (("A", k - 1, -0.5), ("B", k, 0.5)):
            lines += ["[[pairs]]", f'name = "{name}{k}"', 'type = "revolute"']
            lines += [f'body_i = "crank{crank}"', f'body_j = "coupler{k}"']
            lines += ["point_i = [0.5, 0.0]", f"point_j = [{end}, 0.0]"]
    lines += ["[[markers]]", 'name = "B0"', 'body = "crank0"', "point = [0.5, 0.0]"]
    return "\n".join(lines) + "\n"


FOUR_BAR_DESIGN = """[optimize]
mechanism = "{mechanism}"
steps = 3
learning_rate = 0.5
t_final = 0.6
n_save = 13

[[optimize.objective]]
type = "peak-reaction"
pair = "O"
order = 8

[[optimize.variables]]
name = "ground_pivot_x"
unit = "m"
lower = 0.9
upper = 1.1
scale = 0.01
addresses = {{ "pairs.D.point_j.x" = 1.0 }}
"""


def four_bar_design(folder: Path, edit=lambda text: text) -> Path:
    """A small design study of `configs/four_bar.toml` (three Adam steps on the
    ground pivot, the peak reaction in O), written to `folder/design.toml` after
    `edit(text)`."""
    design = folder / "design.toml"
    design.write_text(edit(FOUR_BAR_DESIGN.format(mechanism=CONFIGS / "four_bar.toml")))
    return design


# Compiled once per model (called eagerly, each of their operations would be compiled
# on its own: seconds per model).
_constraint_matrix = eqx.filter_jit(rx.equations.constraint_matrix)
_position_residual = eqx.filter_jit(rx.equations.position_residual)
_velocity_residual = eqx.filter_jit(rx.equations.velocity_residual)


def consistent_states(model, state, count, seed, spread=0.05):
    """States on the constraint manifold near `state`: a random step along the
    manifold's tangent (the null space of Φ_q, by SVD) and random velocities,
    projected (positions, then velocities)."""
    rng = np.random.default_rng(seed)
    project = eqx.filter_jit(rx.drift.Projection(iterations=10))
    m = model.n_holonomic
    A = np.asarray(_constraint_matrix(model, state.q, state.t))[:m]
    _, sv, Vt = np.linalg.svd(A)
    tangent = Vt[int(np.sum(sv > 1e-8 * sv[0])) :].T
    states = []
    for _ in range(count):
        q = state.q + spread * tangent @ rng.normal(size=tangent.shape[1])
        qd = rng.normal(size=state.qd.shape)
        q, qd = project(model, q, qd, state.t)
        phi = _position_residual(model, q, state.t)
        assert float(jnp.max(jnp.abs(phi))) < TOL_CONSISTENT, float(jnp.max(jnp.abs(phi)))
        velocity = _velocity_residual(model, q, qd, state.t)
        assert float(jnp.max(jnp.abs(velocity))) < TOL_CONSISTENT
        states.append(rx.State(state.t, q, qd))
    return states


def four_bar_apart(folder: Path) -> Path:
    """configs/four_bar.toml with its ground pivots 3 m apart (links 0.4 + 1.2 + 0.8
    m: no configuration closes the loop) and `initial = "project"`, written to
    `folder`: a state the initial projection cannot assemble."""
    text = (CONFIGS / "four_bar.toml").read_text(encoding="utf-8")
    for old, new in (
        ("point_j = [1.0, 0.0]            # D", "point_j = [3.0, 0.0]"),
        ("t_final = 2.0", 't_final = 2.0\ninitial = "project"'),
    ):
        assert old in text
        text = text.replace(old, new)
    path = folder / "apart.toml"
    path.write_text(text, encoding="utf-8")
    return path


def three_rrr(
    step: float = -0.15, spatial: bool = False, symmetric: bool = True, gravity: float = 9.81
):
    """The planar 3-RRR parallel manipulator a new user modelled (issue 34): base
    joints on a 1 m circle at 90°, 210° and 330°, platform joints on a 0.3 m circle
    at the same angles, each elbow 0.3 m off the middle of its leg; links of
    1 kg/m with I = m L²/12 about their centres, a 2 kg platform with 0.09 kg m²;
    each proximal link driven from its initial angle by a smooth step of `step`
    rad over 1 s (−0.15 stays inside the workspace, +0.15 leaves it). `spatial`:
    its spatial twin (3-D revolutes: p = 6). `symmetric` False: the third leg's
    distal link 1 % heavier (the symmetry broken). `gravity` [m/s²] along −y."""
    bodies, pairs = [], []
    for k, deg in enumerate((90.0, 210.0, 330.0)):
        a = math.radians(deg)
        u = np.array([math.cos(a), math.sin(a)])
        base, tip = 1.0 * u, 0.3 * u
        elbow = 0.5 * (base + tip) - 0.3 * np.array([-u[1], u[0]])
        for name, start, end in ((f"prox{k}", base, elbow), (f"dist{k}", elbow, tip)):
            d = end - start
            length = float(np.hypot(*d))
            mass = length * (1.01 if (not symmetric and name == "dist2") else 1.0)
            bodies.append(
                rx.Body(
                    name,
                    mass=mass,
                    inertia=mass * length**2 / 12,
                    position=tuple(0.5 * (start + end)),
                    angle=math.atan2(d[1], d[0]),
                )
            )
        lp = float(np.hypot(*(elbow - base)))
        ld = float(np.hypot(*(tip - elbow)))
        pairs += [
            rx.joints.Revolute(f"A{k + 1}", f"prox{k}", "ground", (-lp / 2, 0.0), tuple(base)),
            rx.joints.Revolute(f"B{k + 1}", f"prox{k}", f"dist{k}", (lp / 2, 0.0), (-ld / 2, 0.0)),
            rx.joints.Revolute(f"C{k + 1}", f"dist{k}", "platform", (ld / 2, 0.0), tuple(tip)),
        ]
        d0 = bodies[-2].angle
        pairs.append(
            rx.joints.RevoluteDriver(f"M{k + 1}", f"prox{k}", "ground", rx.motions.SmoothSteps([0.0, 1.0], [d0, d0 + step]))
        )
    bodies.append(rx.Body("platform", mass=2.0, inertia=0.09))
    mech = rx.Mechanism(bodies, pairs, gravity=(0.0, -gravity))
    return rx.models.spatial_twin(mech) if spatial else mech
