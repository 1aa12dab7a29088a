"""Properties of generated mechanisms (issue 34, item 4), checked against code
written here, not redundax's:

a. rank, degree of redundancy, mobility and the per-pair and per-row verdicts of
   `rx.analyze_solvability` and `rx.decide` equal those of a NumPy SVD of the
   constraint Jacobian written below in twist coordinates ((v_x, v_y, ω) per planar
   body, (v, ω) per spatial body) from the joints' geometry as the user gave it;
b. `Structure.stable_unique` / `stable_row_unique` / `rank_nearby` equal the
   SVD's verdicts at a generic configuration next to the decision configuration,
   found here by a step along the motion and a Newton projection in NumPy
   (laminae and slender rods included);
c. gradients of a unique reaction after `rx.drift.Projection` with respect to a
   geometric parameter (a joint point, or the scale of every joint point where
   moving one would break the redundancy) and a mass are finite and equal
   central differences, at exactly symmetric designs;
d. a drive that leaves the workspace is flagged (`rx.ConstraintsLeftError`,
   `Trajectory.valid`), a feasible one is not;
e. in joint coordinates, the DCA's redundancy and seed 002's verdicts
   (`joint_uniqueness`) equal the SVD's of a.

The mechanisms come from `tests/mechanism_generator.py`; every instance of a
family has the same structure, so the programs compiled for the first serve the
rest. The checks are functions returning failure messages, shared with
`experiments/generated_mechanisms.py` (which runs them on thousands).
"""

import math
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from mechanism_generator import generate

# Mechanisms per family in this file (analysis properties a and b).
COUNTS = {
    "four_bar": 20,
    "parallelogram3": 20,
    "parallelogram4": 12,
    "rrr3": 21,
    "branched": 18,
    "twin_four_bar": 20,
    "twin_parallelogram3": 14,
    "twin_rrr3": 18,
    "twin_branched": 18,
    "bennett": 24,
    "spatial_4r": 16,
}
# Mechanisms per family in joint coordinates (property e).
JOINT_COUNT = 8
# Driven four-bars (property d): even seeds feasible, odd seeds infeasible; 11, 21:
# cranks that stall at the dead point; 26: a feasible drive with an end of travel
# beyond it. All with the generator's tiny masses: models built from them differ from
# the others in a static field (the mass matrix's conditioning), and one set of models
# alike is one compiled simulation (two with seeds 0-5, 11, 21: half the test's time).
DRIVE_SEEDS = (2, 25, 14, 29, 26, 38, 11, 21)
# Where an infeasible drive stops, against the crank's closed-form end of travel t*
# [s] (measured on seeds 1-39: 2e-6 to 3e-4 s before it, never after).
T_STOP_BEFORE, T_STOP_AFTER = 2e-3, 1e-4

# The SVD's decisions. Rank: σ_k > RANK_RTOL σ_1. A pair's reaction is unique when
# ‖C_Xᵀ N_X‖_F ≤ UNIQUE_RTOL ‖C_X‖_F, a row's component when ‖N_k‖ ≤ UNIQUE_RTOL.
RANK_RTOL = 1e-9
UNIQUE_RTOL = 1e-8
# A generated instance must be decisive by a wide margin (else it is the
# generator's fault, reported as such): σ_r/σ_1 above REGULAR, σ_{r+1}/σ_1 and
# every zero verdict's ratio below ZERO, every non-zero one above NONZERO.
REGULAR = 1e-6
ZERO = 1e-11
NONZERO = 1e-5
# The test's own step to a generic configuration nearby (twist norm; the
# library's is 1e-4 of max |q| along a fixed direction) and its Newton projection.
NEARBY_STEP = 3e-3
NEWTON_TOL = 1e-14
# Gradients against central differences (h ~ eps^(1/3): error ~ 1e-10 relative).
TOL_GRADIENT = 1e-6
# Driven runs.
T_RUN = 0.35


# --------------------------------------------------------------- the test's model
def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _expm_so3(w):
    """exp([w]×) by Rodrigues' formula."""
    theta = float(np.linalg.norm(w))
    K = _skew(w)
    if theta < 1e-12:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + math.sin(theta) / theta * K + (1 - math.cos(theta)) / theta**2 * K @ K


def _rot2(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])


OMEGA = np.array([[0.0, -1.0], [1.0, 0.0]])


def joint_frame(axis, normal=None):
    """Rows e₀, e₁, e₂ of a spatial joint's frame at the initial configuration, by
    the documented rule: e₀ along the axis; e₁ along the normal's part across it,
    or (no normal) along the global axis least aligned with e₀ made perpendicular;
    e₂ = e₀ × e₁. No axis: the global axes."""
    if axis is None:
        return np.eye(3)
    e0 = np.asarray(axis, dtype=float)
    e0 = e0 / np.linalg.norm(e0)
    if normal is None:
        h = np.eye(3)[int(np.argmin(np.abs(e0)))]
    else:
        h = np.asarray(normal, dtype=float)
    e1 = h - (h @ e0) * e0
    e1 = e1 / np.linalg.norm(e1)
    return np.stack([e0, e1, np.cross(e0, e1)])


class Kinematics:
    """The mechanism as the test models it, from the user's specification (bodies'
    poses, joints' points and axes): poses, residuals of the non-driving pairs, and
    the constraint Jacobian in twist coordinates with one row per reaction
    component, in the frames the library documents."""

    def __init__(self, mech: rx.Mechanism):
        self.spatial = mech.dim == 3
        self.names = [b.name for b in mech.bodies]
        self.index = {n: k for k, n in enumerate(self.names)}
        self.index["ground"] = -1
        self.nb = len(self.names)
        self.width = 6 if self.spatial else 3
        self.poses0 = [self._pose0(b) for b in mech.bodies]
        self.joints = [self._joint(p) for p in mech.pairs]

    # poses: planar (r (2,), φ), spatial (r (3,), R (3, 3))
    def _pose0(self, b):
        if self.spatial:
            return np.asarray(b.position, dtype=float), np.asarray(b.rotation, dtype=float)
        return np.asarray(b.position, dtype=float), float(b.angle)

    def _ground(self):
        return (np.zeros(3), np.eye(3)) if self.spatial else (np.zeros(2), 0.0)

    def pose(self, poses, name):
        k = self.index[name]
        return self._ground() if k < 0 else poses[k]

    def _joint(self, p):
        kind = type(p).__name__
        j = {"name": p.name, "kind": kind, "i": p.body_i, "j": p.body_j, "driver": "Driver" in kind}
        if not self.spatial:
            if kind in ("Revolute", "Translational"):
                j["s_i"] = np.asarray(p.point_i, dtype=float)
                j["s_j"] = np.asarray(p.point_j, dtype=float)
            if kind == "Translational":
                n = np.asarray(p.normal, dtype=float)
                j["n"], j["psi"] = n / np.linalg.norm(n), float(p.angle)
            if kind == "RevoluteDriver":
                j["d"] = float(p.motion(0.0))
            j["size"] = {"Revolute": 2, "Translational": 2, "RevoluteDriver": 1}[kind]
            return j
        (ri, Ri), (rj, Rj) = self.pose(self.poses0, p.body_i), self.pose(self.poses0, p.body_j)
        if p.point is not None:
            P = np.asarray(p.point, dtype=float)
            j["s_i"], j["s_j"] = Ri.T @ (P - ri), Rj.T @ (P - rj)
        else:
            j["s_i"] = np.asarray(p.point_i, dtype=float)
            j["s_j"] = np.asarray(p.point_j, dtype=float)
        G = joint_frame(p.axis, p.normal)
        j["F_i"], j["F_j"] = Ri.T @ G.T, Rj.T @ G.T  # frame columns in body components
        if kind == "RevoluteDriver3D":
            j["d"] = float(p.motion(0.0))
        j["size"] = {"Revolute3D": 5, "Spherical": 3, "Prismatic3D": 5, "RevoluteDriver3D": 1}[kind]
        return j

    @property
    def groups(self):
        """Rows of each pair in the test's Jacobian, in specification order."""
        out, k = [], 0
        for j in self.joints:
            out.append(list(range(k, k + j["size"])))
            k += j["size"]
        return out

    def driver_rows(self):
        return np.concatenate(
            [np.full(j["size"], j["driver"]) for j in self.joints]
        ).astype(bool)

    # ------------------------------------------------------------- planar rows
    def _planar(self, poses, j):
        (ri, ai), (rj, aj) = self.pose(poses, j["i"]), self.pose(poses, j["j"])
        Ji, Jj = np.zeros((j["size"], 3)), np.zeros((j["size"], 3))
        if j["kind"] == "Revolute":
            ai_s, aj_s = _rot2(ai) @ j["s_i"], _rot2(aj) @ j["s_j"]
            phi = ri + ai_s - rj - aj_s
            Ji[:, :2], Ji[:, 2] = np.eye(2), OMEGA @ ai_s
            Jj[:, :2], Jj[:, 2] = -np.eye(2), -(OMEGA @ aj_s)
        elif j["kind"] == "Translational":
            ai_s, aj_s = _rot2(ai) @ j["s_i"], _rot2(aj) @ j["s_j"]
            n = _rot2(aj) @ j["n"]
            d = rj + aj_s - ri - ai_s
            phi = np.array([d @ n, ai - aj - j["psi"]])
            Ji[0] = [-n[0], -n[1], -(OMEGA @ ai_s) @ n]
            Jj[0] = [n[0], n[1], (OMEGA @ aj_s) @ n + d @ (OMEGA @ n)]
            Ji[1, 2], Jj[1, 2] = 1.0, -1.0
        else:  # RevoluteDriver
            phi = np.array([ai - aj - j["d"]])
            Ji[0, 2], Jj[0, 2] = 1.0, -1.0
        return phi, Ji, Jj

    # ------------------------------------------------------------ spatial rows
    def _spatial(self, poses, j):
        (ri, Ri), (rj, Rj) = self.pose(poses, j["i"]), self.pose(poses, j["j"])
        rho_i, rho_j = Ri @ j["s_i"], Rj @ j["s_j"]
        d = ri + rho_i - rj - rho_j
        A, E = Ri @ j["F_i"], Rj @ j["F_j"]  # joint axes on body i, on body j (columns)
        rows = []  # (residual, ∂/∂v_i, ∂/∂ω_i, ∂/∂v_j, ∂/∂ω_j)

        def point_row(e):
            # d/dt eᵀd, e fixed on body j
            rows.append((e @ d, e, np.cross(rho_i, e), -e, -np.cross(rho_j, e) + np.cross(e, d)))

        def dot_row(a, b, sign=1.0):
            # d/dt (a·b), a on body i, b on body j
            z = np.zeros(3)
            rows.append((sign * a @ b, z, sign * np.cross(a, b), z, sign * np.cross(b, a)))

        kind = j["kind"]
        if kind in ("Revolute3D", "Spherical"):
            for k in range(3):
                point_row(E[:, k])
        if kind == "Revolute3D":
            dot_row(A[:, 0], E[:, 2], -1.0)  # moment about e₁
            dot_row(A[:, 0], E[:, 1])  # moment about e₂
        if kind == "Prismatic3D":
            point_row(E[:, 1])
            point_row(E[:, 2])
            dot_row(A[:, 1], E[:, 2])
            dot_row(A[:, 2], E[:, 0])
            dot_row(A[:, 0], E[:, 1])
        if kind == "RevoluteDriver3D":
            w = E[:, 2] * math.cos(j["d"]) - E[:, 1] * math.sin(j["d"])
            dot_row(A[:, 1], w)
        phi = np.array([r[0] for r in rows])
        Ji = np.array([np.concatenate([r[1], r[2]]) for r in rows])
        Jj = np.array([np.concatenate([r[3], r[4]]) for r in rows])
        return phi, Ji, Jj

    def evaluate(self, poses):
        """(Φ, C): residuals and the Jacobian in twist coordinates of every pair."""
        phis, blocks = [], []
        for j in self.joints:
            phi, Ji, Jj = (self._spatial if self.spatial else self._planar)(poses, j)
            block = np.zeros((j["size"], self.nb * self.width))
            for name, J in ((j["i"], Ji), (j["j"], Jj)):
                k = self.index[name]
                if k >= 0:
                    block[:, k * self.width : (k + 1) * self.width] += J
            phis.append(phi)
            blocks.append(block)
        return np.concatenate(phis), np.concatenate(blocks)

    def move(self, poses, dx):
        """The poses moved by the twist increments dx (per body)."""
        out = []
        for k, (r, X) in enumerate(poses):
            step = dx[k * self.width : (k + 1) * self.width]
            if self.spatial:
                out.append((r + step[:3], _expm_so3(step[3:]) @ X))
            else:
                out.append((r + step[:2], X + step[2]))
        return out

    def coordinates(self, poses) -> np.ndarray:
        """redundax's q of the poses: (x, y, φ) per planar body, the natural
        coordinates (r, then the body axes u, v, w) per spatial one."""
        if self.spatial:
            return np.concatenate([np.concatenate([r, X.T.ravel()]) for r, X in poses])
        return np.concatenate([[r[0], r[1], a] for r, a in poses])

    def poses_of(self, q) -> list:
        q = np.asarray(q, dtype=float)
        if self.spatial:
            return [(q[12 * k : 12 * k + 3], q[12 * k + 3 : 12 * k + 12].reshape(3, 3).T)
                    for k in range(self.nb)]
        return [(q[3 * k : 3 * k + 2], float(q[3 * k + 2])) for k in range(self.nb)]

    def nearby(self, rng):
        """A generic configuration next to the initial one: a step of NEARBY_STEP
        along a random direction of the motion the non-driving pairs allow, then
        Newton's method on their residuals (least-norm steps). Returns (poses,
        final max |Φ|)."""
        keep = ~self.driver_rows()
        _, C = self.evaluate(self.poses0)
        C = C[keep]
        _, s, Vt = np.linalg.svd(C)
        r = int(np.sum(s > RANK_RTOL * s[0]))
        null = Vt[r:].T
        poses = self.poses0
        if null.shape[1]:
            v = null @ rng.normal(size=null.shape[1])
            poses = self.move(poses, NEARBY_STEP * v / np.linalg.norm(v))
        for _ in range(30):
            phi, C = self.evaluate(poses)
            phi, C = phi[keep], C[keep]
            if np.max(np.abs(phi), initial=0.0) < NEWTON_TOL:
                break
            poses = self.move(poses, -np.linalg.pinv(C, rcond=1e-10) @ phi)
        phi, _ = self.evaluate(poses)
        return poses, float(np.max(np.abs(phi[keep]), initial=0.0))


class SVDVerdicts:
    """Rank and verdicts from a NumPy SVD of C (twist coordinates): N, an
    orthonormal basis of the left null space; pair X unique iff C_Xᵀ N_X = 0
    (Wojtyra & Frączek), row k iff N_k = 0."""

    def __init__(self, C, groups):
        U, s, _ = np.linalg.svd(C)
        self.s = s / s[0]
        self.rank = int(np.sum(self.s > RANK_RTOL))
        N = U[:, self.rank :]
        self.pair_ratio = np.array(
            [np.linalg.norm(C[X].T @ N[X]) / np.linalg.norm(C[X]) for X in groups]
        )
        self.row_ratio = np.linalg.norm(N, axis=1)
        self.unique = self.pair_ratio <= UNIQUE_RTOL
        self.row_unique = self.row_ratio <= UNIQUE_RTOL
        self.n_rows, self.n_cols = C.shape

    @property
    def redundancy(self):
        return self.n_rows - self.rank

    @property
    def dof(self):
        return self.n_cols - self.rank

    def indecisive(self) -> str | None:
        """What makes the instance too close to a threshold to judge, or None."""
        if self.s[self.rank - 1] < REGULAR:
            return f"σ_r/σ_1 = {self.s[self.rank - 1]:.2g} (nearly singular)"
        if self.rank < len(self.s) and self.s[self.rank] > ZERO:
            return f"σ_(r+1)/σ_1 = {self.s[self.rank]:.2g} (a nearly dependent row)"
        for ratio in np.concatenate([self.pair_ratio, self.row_ratio]):
            if ZERO < ratio < NONZERO:
                return f"a verdict ratio of {ratio:.2g}"
        return None


# ------------------------------------------------------------------------ cases
_CASES: dict = {}


def case(family: str, seed: int):
    """(generated, model, state0, kinematics), built once per process."""
    key = (family, seed)
    if key not in _CASES:
        g = generate(family, seed)
        _CASES[key] = (g, g.mechanism.build(), g.mechanism.initial_state(), Kinematics(g.mechanism))
    return _CASES[key]


def _pairs_differ(what, names, ours, theirs, ratios):
    out = []
    for name, a, b, ratio in zip(names, ours, theirs, ratios, strict=True):
        if bool(a) != bool(b):
            out.append(
                f"{what} of {name}: redundax says "
                f"{'unique' if b else 'not unique'}, the SVD says "
                f"{'unique' if a else 'not unique'} (‖C_Xᵀ N_X‖/‖C_X‖ = {ratio:.2g})"
            )
    return out


def _rows_differ(what, kin, model, ours, theirs, ratios):
    out = []
    for pair, X in zip(model.pairs, kin.groups, strict=True):
        for k, (row, mine) in enumerate(zip(pair.rows, X, strict=True)):
            if bool(ours[mine]) != bool(theirs[row]):
                out.append(
                    f"{what} of {pair.name} component {pair.components[k]!r}: "
                    f"redundax says {'unique' if theirs[row] else 'not unique'}, the SVD "
                    f"says {'unique' if ours[mine] else 'not unique'} (‖N_k‖ = "
                    f"{ratios[mine]:.2g})"
                )
    return out


def _initial_svd(family: str, seed: int):
    """`(case, SVD verdicts at the initial configuration, None)`, or `(case, None,
    why the SVD cannot judge the instance)`."""
    g, model, state, kin = case(family, seed)
    _, C = kin.evaluate(kin.poses0)
    svd = SVDVerdicts(C, kin.groups)
    bad = svd.indecisive()
    if bad:
        return (g, model, state, kin), None, [
            f"the generator drew an instance too close to a threshold: {bad}"
        ]
    return (g, model, state, kin), svd, None


def check_verdicts(family: str, seed: int) -> list[str]:
    """Property a: rank, p, mobility and every verdict at the initial
    configuration, `analyze_solvability` and `decide` against the SVD."""
    (g, model, state, kin), svd, undecidable = _initial_svd(family, seed)
    if undecidable:
        return undecidable
    out = []
    if (svd.redundancy, svd.dof) != (g.p, g.dof):
        out.append(
            f"the SVD finds p = {svd.redundancy}, {svd.dof} dof; the family's "
            f"theory says p = {g.p}, {g.dof} dof"
        )
    report = rx.analyze_solvability(model, state.q, state.t)
    structure = rx.decide(model, state.q, state.t)
    names = [p.name for p in model.pairs]
    for what, result in (("analyze_solvability", report), ("decide", structure)):
        got = (int(result.redundancy), int(result.dof))
        if got != (svd.redundancy, svd.dof):
            out.append(
                f"{what} says p = {got[0]}, {got[1]} dof; the SVD p = "
                f"{svd.redundancy}, {svd.dof} dof"
            )
        unique = np.asarray(result.unique)[: len(names)]
        out += _pairs_differ(f"{what} verdict", names, svd.unique, unique, svd.pair_ratio)
        row_unique = np.asarray(result.row_unique)
        out += _rows_differ(f"{what} verdict", kin, model, svd.row_unique, row_unique,
                            svd.row_ratio)
    return out


def check_stable(family: str, seed: int) -> list[str]:
    """Property b: the structure's stable verdicts and rank nearby equal the SVD's
    at a generic configuration next to the decision configuration (found here);
    `analyze_solvability` there agrees with the SVD there too."""
    g, model, state, kin = case(family, seed)
    rng = np.random.default_rng([77, seed])
    poses, residual = kin.nearby(rng)
    if residual > 1e-12:
        return [f"the test's Newton projection did not converge ({residual:.2g})"]
    _, C = kin.evaluate(poses)
    svd = SVDVerdicts(C, kin.groups)
    bad = svd.indecisive()
    if bad:
        return [f"nearby configuration too close to a threshold: {bad}"]
    structure = rx.decide(model, state.q, state.t)
    out = []
    spatial_rows = 6 * kin.nb if kin.spatial else 0
    if int(structure.rank_nearby) != svd.rank + spatial_rows:
        out.append(
            f"Structure.rank_nearby = {int(structure.rank_nearby)}, the SVD's rank "
            f"at a configuration nearby is {svd.rank} (+ {spatial_rows} rigid-body rows)"
        )
    names = [p.name for p in model.pairs]
    stable = np.asarray(structure.stable_unique)[: len(names)]
    out += _pairs_differ("stable verdict", names, svd.unique, stable, svd.pair_ratio)
    out += _rows_differ("stable verdict", kin, model, svd.row_unique,
                        np.asarray(structure.stable_row_unique), svd.row_ratio)
    q1 = jnp.asarray(kin.coordinates(poses))
    with warnings.catch_warnings():
        # The drivers' rows are off at q1 (the step moved the driven joints too).
        warnings.filterwarnings("ignore", "analyze_solvability: q is not an assembled",
                                RuntimeWarning)
        report = rx.analyze_solvability(model, q1, state.t)
    if int(report.redundancy) != svd.redundancy:
        out.append(
            f"analyze_solvability at the configuration nearby says p = "
            f"{int(report.redundancy)}, the SVD {svd.redundancy}"
        )
    out += _pairs_differ("verdict nearby", names, svd.unique,
                         np.asarray(report.unique)[: len(names)], svd.pair_ratio)
    return out


def check_joint_verdicts(family: str, seed: int) -> list[str]:
    """Property e: in joint coordinates, the DCA's redundancy and seed 002's verdicts
    per pair and per component (`joint_uniqueness`) against the SVD, at the initial
    configuration (the rows' dependence is kinematic: a body's inertia, laminae and
    rods of ε = 1e-13 included, must not change it)."""
    (_, model, state, kin), svd, undecidable = _initial_svd(family, seed)
    if undecidable:
        return undecidable
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, js)
    report = rx.joint_coordinates.joint_uniqueness(jm, structure, js)
    out = []
    if report.redundancy != svd.redundancy:
        out.append(f"joint_uniqueness says p = {report.redundancy}, the SVD {svd.redundancy}")
    names = [p.name for p in model.pairs]
    assert list(report.names) == names
    out += _pairs_differ("joint verdict", names, svd.unique, report.unique, svd.pair_ratio)
    rows = np.zeros(model.n_constraints, dtype=bool)
    for pair, row_unique in zip(model.pairs, report.row_unique, strict=True):
        rows[np.asarray(pair.rows)] = row_unique
    out += _rows_differ("joint verdict", kin, model, svd.row_unique, rows, svd.row_ratio)
    return out


# -------------------------------------------------------------------- gradients
def after_projection(model, structure, state, row):
    """A unique reaction quantity at the state that `rx.drift.Projection` makes of
    `state` for this model: the multiplier of `row` (a reaction component the SVD
    calls unique), or with `row` None the total generalised reaction F − M q̈ on
    the last body's first coordinate (unique whatever p)."""
    q, qd = rx.drift.Projection()(model, state.q, state.qd, state.t)
    r = rx.reactions(model, q, qd, state.t, structure=structure)
    if row is None:
        return r.total[-model.bodies.dof]
    return r.multipliers[row]


def scaled(model, x):
    """The model with every joint point scaled by `x` (a similar mechanism: every
    length times x, the same angles). A geometric parameter that keeps a redundant
    mechanism assemblable: moving one joint point of a parallelogram would break
    its redundancy, and the projection would then return a least-squares
    compromise whose reactions vary by 10⁸ per metre³ (central differences at
    h = 6e-6 were off by 5 % there while those at 1e-7 met jax.grad)."""
    groups = tuple(
        eqx.tree_at(lambda g: (g.s_i, g.s_j), g, (g.s_i * x, g.s_j * x))
        if hasattr(g, "s_i") else g
        for g in model.holonomic
    )
    return eqx.tree_at(lambda m: m.holonomic, model, groups)


def moved(model, x):
    """The model with the first joint's point on its first body at body-frame
    x = `x` [m]: a mechanism whose loops are not redundant in the plane (p = 0, or
    the spatial twin of one) closes for any x nearby, and its static reactions
    change with x (a similar mechanism's, `scaled`, do not)."""
    s_i = model.holonomic[0].s_i
    return eqx.tree_at(lambda m: m.holonomic[0].s_i, model, s_i.at[0, 0].set(x))


# Families whose loops close whatever one joint point (in the plane of motion):
# differentiated with respect to it; the others with respect to the scale.
MOVABLE_POINT = ("four_bar", "rrr3", "branched", "twin_four_bar", "twin_rrr3", "twin_branched")


def _objective(x, model, structure, state, row, point):
    """`after_projection` of the model with its geometry changed by x[0] (the
    first joint point's x if `point`, else the scale of every joint point) and
    the first body's mass set to x[1] [kg]."""
    new = moved(model, x[0]) if point else scaled(model, x[0])
    new = eqx.tree_at(lambda m: m.bodies.mass, new, new.bodies.mass.at[0].set(x[1]))
    return after_projection(new, structure, state, row)


# Jitted with the model as an argument: one program per family, whatever the numbers;
# the value and the gradient from one program (the gradient at x0 and the central
# differences' values all call it, with float64 arrays of 2).
_value_and_gradient = eqx.filter_jit(jax.value_and_grad(_objective))


def check_gradient(family: str, seed: int) -> list[str]:
    """Property c: d(unique reaction quantity after projection)/d(a joint point or
    the scale of every joint point, the first body's mass) by `jax.grad`, finite
    and equal to central differences of the same function."""
    g, model, state, kin = case(family, seed)
    _, C = kin.evaluate(kin.poses0)
    svd = SVDVerdicts(C, kin.groups)
    # The first pair's first component that the SVD calls unique, if any.
    unique_rows = [
        (p.name, r)
        for p, X in zip(model.pairs, kin.groups, strict=True)
        for r, mine in zip(p.rows, X, strict=True)
        if svd.row_unique[mine]
    ]
    what = f"λ of {unique_rows[0][0]} row {unique_rows[0][1]}" if unique_rows else "total reaction"
    row = unique_rows[0][1] if unique_rows else None
    structure = rx.decide(model, state.q, state.t)

    point = family in MOVABLE_POINT
    geometry = float(model.holonomic[0].s_i[0, 0]) if point else 1.0
    x0 = np.array([geometry, float(model.bodies.mass[0])])
    value, grad = _value_and_gradient(jnp.asarray(x0), model, structure, state, row, point)
    value, grad = float(value), np.asarray(grad)

    def fj(x):
        return _value_and_gradient(jnp.asarray(x), model, structure, state, row, point)[0]

    out = []
    geometric = "the first joint's point_i x" if point else "the scale of every joint point"
    for k, parameter in enumerate((geometric, "the first body's mass")):
        h = np.cbrt(np.finfo(float).eps) * max(1.0, abs(x0[k]))
        e = np.zeros(2)
        e[k] = h
        fd = (float(fj(x0 + e)) - float(fj(x0 - e))) / (2 * h)
        scale = max(abs(fd), abs(value), 1.0)
        if not np.isfinite(grad[k]) or abs(grad[k] - fd) > TOL_GRADIENT * scale:
            out.append(
                f"d({what})/d({parameter}) = {grad[k]:.10g} by jax.grad, "
                f"{fd:.10g} by central differences"
            )
    return out


# --------------------------------------------------------------------- validity
def check_drive(family: str, seed: int) -> list[str]:
    """Property d: a feasible drive runs on its constraints everywhere; one past
    the end of travel is flagged (throw=False: `valid` False somewhere and the
    event result; throw=True: `ConstraintsLeftError` with its attributes)."""
    g, model, state, _ = case(family, seed)
    traj = rx.simulate(model, state, T_RUN, saveat=rx.SaveAt(n=8), throw=False)
    valid = np.asarray(traj.valid)
    out = []
    if g.drive == "feasible":
        if not valid.all() or traj.result != diffrax.RESULTS.successful:
            out.append(
                f"a feasible drive was flagged: valid {valid.tolist()}, result "
                f"{traj.result}, max |Φ| {float(np.max(traj.position_violation)):.2g}"
            )
        return out
    stopped = (diffrax.RESULTS.event_occurred, diffrax.RESULTS.dt_min_reached)
    if valid.all() or not any(traj.result == r for r in stopped):
        out.append(
            f"a drive past the end of travel was not flagged: valid "
            f"{valid.tolist()}, result {traj.result}, max |Φ| "
            f"{float(np.max(traj.position_violation)):.2g}"
        )
        return out
    # It stops where the crank reaches the end of its travel (closed form): not
    # after it, and at most a few steps before (the joint rates the drive asks
    # for grow as (t* − t)^(−1/2) there).
    t_star = end_of_travel(g)
    if not -T_STOP_BEFORE <= float(traj.left_at) - t_star <= T_STOP_AFTER:
        out.append(
            f"stopped at {float(traj.left_at):.6g} s ({traj.result}), the crank reaches "
            f"the end of its travel at {t_star:.6g} s"
        )
    return out


def end_of_travel(g) -> float:
    """t* at which the driven crank of an infeasible `four_bar_drive` reaches the
    end of its travel: the generator drives it 0.4 rad past it with a quintic
    smooth step, so the blend s³(10 − 15s + 6s²) reaches 1 − 0.4/|Δ| (bisection)."""
    motion = next(p for p in g.mechanism.pairs if p.name == "drive").motion
    values, times = np.asarray(motion.values, float), np.asarray(motion.times, float)
    target = 1.0 - 0.4 / abs(values[-1] - values[0])
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mid**3 * (10 - 15 * mid + 6 * mid**2) < target else (lo, mid)
    return float(times[0] + lo * (times[-1] - times[0]))


def check_drive_raises(family: str, seed: int) -> list[str]:
    """Property d with throw=True: raises for an infeasible drive, not otherwise."""
    g, model, state, _ = case(family, seed)
    try:
        rx.simulate(model, state, T_RUN, saveat=rx.SaveAt(n=8))
    except rx.ConstraintsLeftError as error:
        if g.drive == "feasible":
            return [f"a feasible drive raised {error}"]
        problems = []
        # A run that stalled at the end of travel may still be on its constraints.
        beyond = error.stalled or error.violation > error.tolerance
        if not (0.0 < error.t <= T_RUN and beyond and error.tolerance > 0.0):
            problems.append(
                f"t {error.t}, violation {error.violation}, tolerance {error.tolerance}"
            )
        if error.valid_until is not None and not error.valid_until < error.t:
            problems.append(f"valid_until {error.valid_until} not before t {error.t}")
        if problems:
            return [f"ConstraintsLeftError attributes: {'; '.join(problems)}"]
        return []
    if g.drive == "infeasible":
        return ["a drive past the end of travel raised nothing"]
    return []


# ------------------------------------------------------------------------ tests
def describe(family: str, seed: int, problems: list[str], shown: int = 6) -> str | None:
    """One failure message for an instance: its family, seed and how it was drawn,
    then what differed (the first `shown` items); None when nothing did."""
    if not problems:
        return None
    g = case(family, seed)[0]
    more = f"\n    ... and {len(problems) - shown} more" if len(problems) > shown else ""
    lines = "".join(f"\n    - {p}" for p in problems[:shown])
    return f"{g.label} ({g.why}):{lines}{more}"


def _assert_none(family, seeds, check):
    """Run `check(family, seed)` on every seed; fail naming every instance that
    failed (the first ten in full)."""
    failures = [describe(family, s, check(family, s)) for s in seeds]
    failures = [f for f in failures if f]
    assert not failures, (
        f"{len(failures)} of {len(seeds)} {family} mechanisms failed:\n"
        + "\n".join(failures[:10])
    )


@pytest.mark.parametrize("family", list(COUNTS))
def test_verdicts_against_svd(family):
    """Property a on COUNTS[family] seeds of the family."""
    _assert_none(family, range(COUNTS[family]), check_verdicts)


@pytest.mark.parametrize("family", list(COUNTS))
def test_stable_verdicts_at_generic_configuration(family):
    """Property b on the same mechanisms (laminae and rods among the twins and
    the 4R loops; special parallelogram configurations among the parallelograms)."""
    _assert_none(family, range(COUNTS[family]), check_stable)


@pytest.mark.parametrize("family", list(COUNTS))
def test_joint_verdicts_against_svd(family):
    """Property e on the first JOINT_COUNT seeds of the family (laminae, rods of
    ε = 1e-6 and 1e-13 and tiny masses among them)."""
    _assert_none(family, range(min(JOINT_COUNT, COUNTS[family])), check_joint_verdicts)


def test_generated_families_cover_degenerate_cases():
    """The generator draws what the issue asked for in this file's counts: laminae,
    rods (both sizes of ε), identical links, exact 3-fold symmetry, special
    configurations, Grashof and non-Grashof four-bars, feasible and infeasible
    drives; and at least 200 mechanisms."""
    gens = [case(f, s)[0] for f in COUNTS for s in range(COUNTS[f])]
    drives = [case("four_bar_drive", s)[0] for s in DRIVE_SEEDS]
    assert len(gens) + len(drives) >= 200
    kinds = {k for g in gens for k in g.inertia}
    expected = {"lamina", "rod 1e-6", "rod 1e-13", "generic", "isotropic", "planar", "tiny"}
    assert expected <= kinds, kinds
    assert any(g.symmetric and g.family == "rrr3" for g in gens)
    assert any(g.symmetric and g.family == "twin_rrr3" for g in gens)
    assert any(g.special for g in gens)
    assert {"Grashof" in g.why and "non-Grashof" not in g.why for g in gens
            if g.family == "four_bar"} == {True, False}
    assert {g.drive for g in drives} == {"feasible", "infeasible"}
    # The rods' axial moments as built: ε = 1e-6 and 1e-13 of the transverse ones.
    for g in gens:
        for b, kind in zip(g.mechanism.bodies, g.inertia, strict=True):
            if kind.startswith("rod"):
                tensor = np.asarray(b.inertia, dtype=float)
                m = np.linalg.eigvalsh(np.diag(tensor) if tensor.ndim == 1 else tensor)
                assert m[0] / m[-1] == pytest.approx(float(kind[4:]), rel=1e-2), (g.label, m)


# Exactly symmetric designs: the 3-fold symmetric 3-RRR (identical legs, no
# gravity), a 3-crank parallelogram with identical cranks at equal spacing (its
# links identical to the last bit: NaN before the fixed-rank derivative), and the
# symmetric 3-RRR's spatial twin with identical generic inertias (NaN before).
GRADIENT_CASES = (("rrr3", 0), ("parallelogram3", 0), ("twin_rrr3", 6))


@pytest.mark.parametrize("family,seed", GRADIENT_CASES)
def test_gradients_at_symmetric_designs(family, seed):
    """Property c."""
    g = case(family, seed)[0]
    assert g.symmetric and set(g.inertia) <= {"planar", "generic"}, g.why
    _assert_none(family, [seed], check_gradient)


def test_driven_runs_flagged_when_they_leave_their_constraints():
    """Property d, throw=False, on feasible and infeasible drives."""
    _assert_none("four_bar_drive", DRIVE_SEEDS, check_drive)


def test_driven_runs_raise_when_they_leave_their_constraints():
    """Property d, throw=True: one feasible and two infeasible drives (one stalls)."""
    _assert_none("four_bar_drive", DRIVE_SEEDS[:2] + (11,), check_drive_raises)
