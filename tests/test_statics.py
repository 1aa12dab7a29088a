"""Static equilibrium and linearised modes (issue 37) against references computed
here: closed forms for a pendulum with a torsion spring and a mass on a spring, and
for a four-bar with a diagonal spring the reduced model in the crank angle θ
(closed-form position analysis; the equilibrium is V'(θ) = 0 and ω² = V''(θ)/I(θ),
I(θ) the kinetic-energy coefficient, both by autodiff of that closed form). The
same four-bar built with spatial revolutes (p = 3) has the planar model's
equilibrium and frequency. Refusals name what is wrong."""

import dataclasses
import functools
import json
import math
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax import cli, models, statics
from redundax.forces import Bushing, RotationalSpringDamper, SpringDamper
from redundax.joints import Translational

G = 9.81
# The equilibrium angle against the closed form [rad] (the bound).
TOL_ANGLE = 1e-8
# Frequencies and damping ratios against the closed form, relative.
TOL_FREQUENCY = 1e-6
# Gradients by implicit differentiation against the closed form's, relative.
TOL_GRADIENT = 1e-7

# The pendulum: bob of mass M at L from the pin, inertia J about its centre, and a
# torsion spring k (damping c) free at the horizontal pose; the angle θ from the −x
# axis grows towards −y, so equilibrium is k θ = M g L cos θ.
L, M, J, K, C = 1.0, 2.0, 0.1, 30.0, 0.5


def _pendulum(k=K):
    mech = models.pendulum(length=L, mass=M, inertia=J)
    spring = RotationalSpringDamper("bob", "ground", stiffness=k, damping=C)
    return dataclasses.replace(mech, forces=[spring])


def _pendulum_angle(k):
    theta = 0.5
    for _ in range(50):  # Newton on k θ − M g L cos θ = 0
        theta -= (k * theta - M * G * L * math.cos(theta)) / (k + M * G * L * math.sin(theta))
    return theta


def test_pendulum_with_a_torsion_spring_against_the_closed_form():
    mech = _pendulum()
    model = mech.build()
    eq = rx.equilibrium(model, mech.initial_state().q)
    theta = _pendulum_angle(K)
    assert abs(float(eq.q[2]) - theta) < TOL_ANGLE
    assert float(eq.residual) < 1e-9 and bool(eq.stable)
    # Small oscillations about the pin: (J + M L²) θ̈ + c θ̇ + (k + M g L sin θ) θ = 0.
    inertia, stiffness = J + M * L * L, K + M * G * L * math.sin(theta)
    omega = math.sqrt(stiffness / inertia)
    modes = eq.linearization.modes()
    assert modes.frequencies_hz.shape == (1,)
    assert float(modes.frequencies_hz[0]) == pytest.approx(omega / (2 * math.pi), rel=TOL_FREQUENCY)
    assert float(modes.damping_ratios[0]) == pytest.approx(
        C / (2 * omega * inertia), rel=TOL_FREQUENCY
    )
    # The pin carries the weight (the spring's torque needs no force); a rigid
    # pendulum's pin reaction is unique.
    wrench, unique = eq.reactions.pair("O")
    np.testing.assert_allclose(np.asarray(wrench[0, :2]), [0.0, M * G], atol=1e-9)
    assert bool(unique)


def test_mass_on_a_spring_against_the_closed_form():
    """A block on a vertical slideway hung from a spring (k, c, free length l₀)
    whose upper end is fixed above it: it rests l₀ + M g / k below the anchor, and
    oscillates at √(k/M) with ζ = c / (2 √(k M))."""
    k, c, l0, top = 200.0, 3.0, 0.5, 2.0
    mech = rx.Mechanism(
        bodies=[rx.Body("block", M, 0.01, position=(0.0, 1.0))],
        pairs=[Translational("slide", "block", "ground", normal=(1.0, 0.0))],
        forces=[SpringDamper("block", "ground", k, c, l0, point_j=(0.0, top))],
        gravity=(0.0, -G),
    )
    model = mech.build()
    eq = rx.equilibrium(model, mech.initial_state().q)
    assert float(eq.q[1]) == pytest.approx(top - l0 - M * G / k, abs=1e-10)
    modes = eq.linearization.modes()
    omega = math.sqrt(k / M)
    assert float(modes.frequencies_hz[0]) == pytest.approx(omega / (2 * math.pi), rel=TOL_FREQUENCY)
    assert float(modes.damping_ratios[0]) == pytest.approx(
        c / (2 * math.sqrt(k * M)), rel=TOL_FREQUENCY
    )
    np.testing.assert_allclose(np.asarray(modes.shapes[0]), [0.0, 1.0, 0.0], atol=1e-12)


# The four-bar of `models.four_bar` (crank 0.4, coupler 1.2, rocker 0.8, ground 1 m;
# slender links of 1 kg/m) with a spring from its coupler pin B to the ground point
# (1, −1): stable near θ = 0.248 rad, reached from the crank at 0.6 rad.
SPRING_ANCHOR = (1.0, -1.0)
SPRING = dict(stiffness=40.0, damping=2.0, free_length=1.0)
A_, C_, R_ = 0.4, 1.2, 0.8


def _four_bar_with_spring(spatial: bool):
    base = models.four_bar(crank_angle=0.6)
    B = base.pairs[2]
    mech = models.spatial_twin(base) if spatial else base
    pad = (0.0,) if spatial else ()
    spring = SpringDamper(
        "coupler", "ground", point_i=(*B.point_i, *pad), point_j=(*SPRING_ANCHOR, *pad), **SPRING
    )
    return dataclasses.replace(mech, forces=[spring])


def _four_bar_pins(th):
    """The crank pin A and the coupler pin B at crank angle θ (closed form: B on the
    upper intersection of |B − A| = coupler and |B − D| = rocker)."""
    A = jnp.stack([A_ * jnp.cos(th), A_ * jnp.sin(th)])
    d = jnp.array([1.0, 0.0]) - A
    dist = jnp.linalg.norm(d)
    along = (C_**2 - R_**2 + dist**2) / (2 * dist)
    h = jnp.sqrt(C_**2 - along**2)
    B = A + along * d / dist + h * jnp.stack([-d[1], d[0]]) / dist
    return A, B


def _four_bar_reduced():
    """(V, T): potential energy V(θ) and kinetic-energy coefficient I(θ) (T = ½ I θ̇²)
    of the four-bar in its crank angle, from the closed-form position analysis."""

    def centres_and_angles(th):
        A, B = _four_bar_pins(th)
        D = jnp.array([1.0, 0.0])
        centres = jnp.stack([A / 2, (A + B) / 2, (B + D) / 2])
        angles = jnp.stack(
            [th, jnp.arctan2(B[1] - A[1], B[0] - A[0]), jnp.arctan2(B[1] - D[1], B[0] - D[0])]
        )
        return centres, angles

    masses = jnp.array([A_, C_, R_])  # 1 kg/m
    inertias = masses * jnp.array([A_, C_, R_]) ** 2 / 12

    def V(th):
        centres, _ = centres_and_angles(th)
        _, B = _four_bar_pins(th)
        stretch = jnp.linalg.norm(B - jnp.array(SPRING_ANCHOR)) - SPRING["free_length"]
        return G * masses @ centres[:, 1] + 0.5 * SPRING["stiffness"] * stretch**2

    def I(th):  # noqa: E743 - the kinetic-energy coefficient's name
        dc, da = jax.jacfwd(centres_and_angles)(th)
        return masses @ jnp.sum(dc**2, axis=1) + inertias @ da**2

    return V, I


@functools.cache
def _four_bar_rest():
    """(θ, ω) of the reduced model: Newton on V'(θ) = 0 from θ = 0.3, and
    ω² = V''(θ)/I(θ). Computed once (jitted derivatives) for the tests that use it."""
    V, I = _four_bar_reduced()
    dV, d2V = jax.jit(jax.grad(V)), jax.jit(jax.grad(jax.grad(V)))
    theta = jnp.asarray(0.3)
    for _ in range(30):
        theta = theta - dV(theta) / d2V(theta)
    return float(theta), math.sqrt(float(d2V(theta) / jax.jit(I)(theta)))


def _check_mode_plot(model, eq, theta):
    """`plot_modes`: one axes for the one mode; its displaced coupler pin B moves
    along dB/dθ of the crank-angle model (the mode is the crank's swing)."""
    from redundax.plot import plot_modes

    # A small amplitude: the drawing displaces q linearly, off the manifold at O(a²).
    fig = plot_modes(model, eq.linearization, amplitude=1e-4)
    (ax,) = fig.axes
    lines = {
        gid: [line for line in ax.get_lines() if line.get_gid() == gid]
        for gid in ("rest", "mode+", "mode-")
    }
    assert all(len(v) == 3 for v in lines.values())  # three bodies each
    # The coupler (second body) runs A → B: its last point is B.
    B_rest = lines["rest"][1].get_xydata()[-1]
    B_moved = lines["mode+"][1].get_xydata()[-1]
    A, _ = _four_bar_pins(theta)
    np.testing.assert_allclose(lines["rest"][0].get_xydata()[-1], np.asarray(A), atol=1e-9)

    tangent = np.asarray(jax.jacfwd(lambda th: _four_bar_pins(th)[1])(theta))
    moved = B_moved - B_rest
    cosine = abs(moved @ tangent) / (np.linalg.norm(moved) * np.linalg.norm(tangent))
    assert cosine > 0.99999, cosine  # parallel up to the drawing's finite amplitude


def test_four_bar_with_a_diagonal_spring_planar_and_spatial():
    theta, omega = _four_bar_rest()
    for spatial in (False, True):
        mech = _four_bar_with_spring(spatial)
        model = mech.build()
        eq = rx.equilibrium(model, mech.initial_state().q)
        assert int(eq.structure.rank) == model.n_coordinates - 1  # one degree of freedom
        crank = eq.q[:12] if spatial else eq.q[:3]
        # The crank's angle: planar, its coordinate; spatial, its body x axis u.
        angle = math.atan2(float(crank[4]), float(crank[3])) if spatial else float(crank[2])
        assert abs(angle - theta) < TOL_ANGLE, (spatial, angle, theta)
        assert bool(eq.stable)
        frequency = float(eq.linearization.modes().frequencies_hz[0])
        assert frequency == pytest.approx(omega / (2 * math.pi), rel=TOL_FREQUENCY), spatial
        unique = np.asarray(eq.reactions.component_unique)
        if spatial:
            # p = 3: every revolute's in-plane force is unique, the out-of-plane
            # rows are not (the redundancy lives there).
            assert model.n_holonomic - int(eq.structure.rank_holonomic) == 3
            for name in "OABD":
                labels = eq.reactions.labels[eq.reactions.names.index(name)]
                rows = eq.reactions.rows[eq.reactions.names.index(name)]
                verdict = dict(zip(labels, unique[list(rows)], strict=True))
                assert verdict["transverse force e1"] and verdict["transverse force e2"], name
                assert not any(
                    verdict[c] for c in ("axial force", "bending moment e1", "bending moment e2")
                ), name
        else:
            assert unique.all()
            _check_mode_plot(model, eq, theta)


def test_refusals_name_the_cause():
    # A free body under gravity: nothing holds it.
    free = rx.Mechanism(bodies=[rx.Body("puck", 1.0, 0.1)], pairs=[], gravity=(0.0, -G))
    with pytest.raises(rx.ModelError, match=r"no static equilibrium.*puck\.y.*unbounded fall"):
        rx.equilibrium(free.build(), free.initial_state().q)
    # A driven mechanism is not at rest.
    crank = models.slider_crank()
    with pytest.raises(rx.ModelError, match=r"'drive'.*driver"):
        rx.equilibrium(crank.build(), crank.initial_state().q)
    # Pfaffian rows: named.
    robot = models.mobile_robot()
    with pytest.raises(rx.ModelError, match=r"nonholonomic.*'W1'"):
        rx.equilibrium(robot.build(), robot.initial_state().q)
    with pytest.raises(rx.ModelError, match="max_steps"):
        rx.equilibrium(_pendulum().build(), _pendulum().initial_state().q, max_steps=0)


def test_equilibrium_under_jit_vmap_and_grad():
    """The pendulum's equilibrium angle and frequency as functions of the spring's
    stiffness, under `jax.jit`, `jax.vmap` over stiffnesses and `jax.grad` (implicit
    differentiation of the solve), all three in one program: at each stiffness the
    angle and frequency against the closed form, and dθ/dk against the closed
    form's −θ / (k + M g L sin θ)."""
    mech = _pendulum()
    model = mech.build()
    q0 = mech.initial_state().q
    structure = rx.decide(model, q0)

    def angle_and_frequency(k):
        m = eqx.tree_at(lambda m: m.forces[0].stiffness, model, jnp.reshape(k, (1,)))
        eq = rx.equilibrium(m, q0, structure=structure)
        return eq.q[2], eq.linearization.modes().frequencies_hz[0]

    ks = jnp.array([20.0, K, 45.0])
    (angles, frequencies), dthetas = jax.jit(
        jax.vmap(jax.value_and_grad(angle_and_frequency, has_aux=True))
    )(ks)
    for k, a, f, da in zip(*map(np.asarray, (ks, angles, frequencies, dthetas)), strict=True):
        th = _pendulum_angle(float(k))
        assert abs(a - th) < TOL_ANGLE
        omega = math.sqrt((k + M * G * L * math.sin(th)) / (J + M * L * L))
        assert f == pytest.approx(omega / (2 * math.pi), rel=TOL_FREQUENCY)
        assert da == pytest.approx(-th / (k + M * G * L * math.sin(th)), rel=TOL_GRADIENT)


CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _cli(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_line_prints_the_contract(capsys, tmp_path):
    """`redundax equilibrium FILE --json` on the four-bar-with-spring example: the
    keys of the JSON contract, the file's coordinates, and the numbers of the
    crank-angle model (as the Python call above gives them)."""
    path = CONFIGS / "four_bar_spring.toml"
    figure = tmp_path / "modes.png"
    status, out, err = _cli(capsys, "equilibrium", path, "--json", "--figure", figure)
    assert status == 0, err
    assert figure.stat().st_size > 1000
    s = json.loads(out)
    assert {"q", "residual", "stable", "frequencies_hz", "damping_ratios", "modes", "pairs"} <= set(
        s
    )
    assert s["coordinates"][:3] == ["crank.x", "crank.y", "crank.angle"]
    theta, omega = _four_bar_rest()
    assert abs(s["q"][2] - theta) < TOL_ANGLE
    assert s["stable"] is True and s["residual"] < 1e-9
    assert s["frequencies_hz"][0] == pytest.approx(omega / (2 * math.pi), rel=TOL_FREQUENCY)
    assert len(s["modes"]) == 1 and len(s["modes"][0]) == len(s["q"]) == 9
    # Pin O holds the crank: its force is the crank's share of the loads, unique.
    assert s["pairs"]["O"]["unique"] is True and s["pairs"]["O"]["rows"] == [1, 2]
    assert set(s["pairs"]["O"]["components"]) == {"force x", "force y"}
    # Bad input: a driven mechanism is refused naming the file and the driver.
    driven = tmp_path / "driven.toml"
    text = (CONFIGS / "four_bar.toml").read_text()
    driven.write_text(
        text.replace(
            "[[markers]]",
            '[[pairs]]\nname = "motor"\ntype = "revolute-driver"\nbody_i = "crank"\n'
            'body_j = "ground"\nmotion = { type = "polynomial", '
            "coefficients = [1.0471975511965976, 0.0, 1.0] }\n\n"
            "[[markers]]",
            1,
        )
    )
    status, out, err = _cli(capsys, "equilibrium", driven)
    assert status == 2 and out == ""
    assert err.startswith(f"redundax: error: {driven}: equilibrium: 'motor' prescribes a motion"), (
        err
    )


# Assembly stresses (issue 37, scope 4). Joint stiffnesses of a stiff bearing:
# 1e8 N/m on force rows, 1e6 N m/rad on moment rows.
STIFF = (1e8, 1e6)


def _tilt(model, pair: int, delta):
    """`model` with the axis of revolute `pair` (of the first holonomic group) turned by
    `delta` [rad] about global y: the axis leaves the plane, a manufacturing error."""
    frames = model.holonomic[0].frame_i
    c, s = jnp.cos(delta), jnp.sin(delta)
    R = jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return eqx.tree_at(
        lambda m: m.holonomic[0].frame_i, model, frames.at[pair].set(R @ frames[pair])
    )


def test_assembly_stress_of_a_tilted_axis_against_the_compliant_equilibrium():
    """The spatial four-bar with its spring (p = 3) at rest, joint D's axis tilted by
    δ: the first-order self-stress equals the change of the exact compliant
    equilibrium's multipliers (ratio → 1 over three decades of δ, the residue being
    the O(load/k) of finite stiffness), the unique (in-plane) components change only
    at second order, the non-unique ones scale with k δ; dλ/dδ by autodiff equals
    central differences; a Monte Carlo of 1,000 tilts (vmap). The tilt given by the
    addresses of the axis (pairs.D.axis_i) is the same deviation."""
    mech = _four_bar_with_spring(spatial=True)
    model = mech.build()
    eq = rx.equilibrium(model, mech.initial_state().q)
    k = rx.methods.joint_stiffness(model, STIFF)
    nominal = statics.compliant_equilibrium(model, eq.q, k)
    unique = np.asarray(eq.structure.stable_row_unique)
    ratios, errors = [], []
    for delta in (1e-3, 1e-4, 1e-5):
        deviated = _tilt(model, 3, delta)
        first = np.asarray(
            statics.assembly_stress(model, deviated, eq.q, k, structure=eq.structure).multipliers
        )
        exact = np.asarray(
            statics.compliant_equilibrium(deviated, eq.q, k).multipliers - nominal.multipliers
        )
        i = np.argmax(np.abs(first))
        ratios.append(exact[i] / first[i])
        # First order: linear in δ (k δ ~ 1e6 N m/rad · δ on the bending rows).
        assert np.abs(first).max() == pytest.approx(2.731e5 * delta, rel=1e-3)
        assert np.abs(first[unique]).max() < 1e-9 * np.abs(first).max()
        # Exact: the unique components move at O(δ²) only.
        assert np.abs(exact[unique]).max() < 2e5 * delta**2
        errors.append(np.abs(exact - first).max() / np.abs(first).max())
    # What is left as δ → 0 is the O(load/k) of finite stiffness (4e-5 here).
    np.testing.assert_allclose(ratios, 1.0, atol=1e-4)
    assert errors[0] < 1e-3 and max(errors[1:]) < 1e-4, errors  # O(δ), then the floor
    assert abs(ratios[1] - ratios[2]) < 1e-6, ratios

    # The same tilt by the sweep's addresses of joint D's axis in its first body
    # (pairs.D.axis_i: the axis as made in that part, renormalised with its frame):
    # the same stress, and a right-handed orthonormal frame.
    tilted = _tilt(model, 3, 1e-4)
    e0 = np.asarray(tilted.holonomic[0].frame_i[3, 0])
    state = mech.initial_state()
    addressed = statics.deviate(
        model, {"pairs.D.axis_i.x": e0[0] / e0[2], "pairs.D.axis_i.y": e0[1] / e0[2]}, state
    )
    frame = np.asarray(addressed.holonomic[0].frame_i[3])
    np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(frame) == pytest.approx(1.0, abs=1e-15)
    want, got = (
        np.asarray(
            statics.assembly_stress(model, m, eq.q, k, structure=eq.structure).multipliers
        )
        for m in (tilted, addressed)
    )
    np.testing.assert_allclose(got, want, atol=1e-12 * np.abs(want).max())

    # dλ_s/dδ (autodiff) against central differences, on the largest component.
    def largest(delta):
        return statics.assembly_stress(
            model, _tilt(model, 3, delta), eq.q, k, structure=eq.structure
        ).multipliers[i]

    h = 1e-6
    fd = (largest(h) - largest(-h)) / (2 * h)
    assert float(jax.grad(largest)(0.0)) == pytest.approx(float(fd), rel=1e-7)

    # Monte Carlo: 1,000 tilts of joint D's axis, σ = 1 mrad (vmap of the formula);
    # the largest assembly moment grows as k |δ| (the half-normal's 99th percentile).
    draws = jax.random.normal(jax.random.PRNGKey(0), (1000,)) * 1e-3
    peaks = jax.vmap(
        lambda d: jnp.max(
            jnp.abs(
                statics.assembly_stress(
                    model, _tilt(model, 3, d), eq.q, k, structure=eq.structure
                ).multipliers
            )
        )
    )(draws)
    np.testing.assert_allclose(np.asarray(peaks), 2.731e5 * np.abs(np.asarray(draws)), rtol=2e-3)


def test_assembly_stress_of_bricard():
    """Bricard (p = 1, no component unique), at rest under gravity: joint J2's point
    moved by δ along its axis (J2's body-frame y), which no motion of the loop can
    absorb, loads every joint; first order against the exact compliant equilibrium
    over three decades, and a deviation address that does not exist is named."""
    mech = models.bricard()
    model = mech.build()
    # Where it rests under gravity (a mechanism of mobility 1 with no load would have
    # no isolated equilibrium for the compliant model to settle in).
    eq = rx.equilibrium(model, mech.initial_state().q)
    k = rx.methods.joint_stiffness(model, STIFF)
    nominal = statics.compliant_equilibrium(model, eq.q, k)
    for delta in (1e-4, 1e-5, 1e-6):
        deviated = statics.deviate(model, {"pairs.J2.point_i.y": delta})
        first = np.asarray(
            statics.assembly_stress(model, deviated, eq.q, k, structure=eq.structure).multipliers
        )
        exact = np.asarray(
            statics.compliant_equilibrium(deviated, eq.q, k).multipliers - nominal.multipliers
        )
        scale = np.abs(first).max()
        assert scale == pytest.approx(1.9763e5 * delta, rel=1e-4)  # linear in δ
        np.testing.assert_allclose(exact, first, atol=1e-3 * scale)
    with pytest.raises(ValueError, match=r"unknown sweep parameter 'pairs\.J9\.point_i\.x'"):
        statics.deviate(model, {"pairs.J9.point_i.x": 1e-4})


def _folded_normal_quantile(p, mean, std):
    """The p-quantile of |X|, X ~ N(mean, std²), by bisection on its CDF."""
    cdf = lambda x: (
        0.5
        * (
            math.erf((x - mean) / (std * math.sqrt(2)))
            + math.erf((x + mean) / (std * math.sqrt(2)))
        )
    )  # noqa: E731
    lo, hi = 0.0, abs(mean) + 10 * std
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def test_tolerance_study_of_bricard(capsys, tmp_path):
    """`redundax tolerances` on configs/tolerances_bricard.toml. Bricard has one
    self-stress, so every assembly force is |N_r μ| with μ linear in the deviations:
    the sensitivities equal central differences of `assembly_stress` computed here,
    the nominal change is their sum weighted by the nominal deviations, and the
    Monte Carlo's percentiles of the largest force are those of a folded normal
    (closed form) within sampling error. The Monte Carlo is a sweep: its 1,000 draws
    are in the sweep file, normal about the nominal deviations, each one's stress
    the central differences' J δ, and a second run finds nothing left to compute.
    Bad input is named."""
    path = CONFIGS / "tolerances_bricard.toml"
    mc = tmp_path / "mc"
    status, out, err = _cli(capsys, "tolerances", path, "--json", "--out", mc)
    assert status == 0, err
    s = json.loads(out)
    assert s["redundancy"] == 1 and s["monte_carlo"]["samples"] == 1000
    assert s["monte_carlo"]["sweep"] == str(mc / "sweep.npz")
    tol = statics.load_tolerances(path)
    model, q = tol.model, jnp.asarray(s["q"])
    structure = rx.decide(model, q)
    addresses = [d.address for d in tol.deviations]

    def change(delta):  # −λ_s of every row, at the study's configuration
        deviated = statics.deviate(model, dict(zip(addresses, delta, strict=True)))
        return -np.asarray(
            statics.assembly_stress(
                model, deviated, q, tol.stiffness, structure=structure
            ).multipliers
        )

    h = 1e-6
    rows = model.pair("J2").rows
    labels = model.pair("J2").components
    for j, address in enumerate(addresses):
        e = np.zeros(3)
        e[j] = h
        fd = (change(e) - change(-e)) / (2 * h)
        got = [s["sensitivity"][address]["J2"][label] for label in labels]
        np.testing.assert_allclose(got, fd[list(rows)], rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    nominal = np.array([d.value for d in tol.deviations])
    want = change(nominal)
    got = [s["nominal"]["J2"][label]["change"] for label in labels]
    np.testing.assert_allclose(got, want[list(rows)], rtol=1e-9, atol=1e-9 * np.abs(want).max())
    # The largest force of J2 over the draws: |g_r · δ| with δ ~ N(nominal, σ² I).
    sens = np.array([[s["sensitivity"][a]["J2"][label] for a in addresses] for label in labels])
    forces = [k for k, label in enumerate(labels) if "force" in label]
    r = forces[int(np.argmax(np.abs(sens[forces] @ np.ones(3))))]
    mean, std = float(sens[r] @ nominal), float(np.linalg.norm(sens[r]) * 2e-5)
    got = s["monte_carlo"]["pairs"]["J2"]["force"]
    for p in (50, 90):
        assert got[f"p{p}"] == pytest.approx(_folded_normal_quantile(p / 100, mean, std), rel=0.1)
    # Every draw, from the sweep file.
    data = rx.sweep.read_sweep(mc / "sweep.npz")
    delta = data["values"] - data["nominal_values"][None, :]
    assert delta.shape == (1000, 3)
    error = 2e-5 / math.sqrt(1000)  # the standard error of a sample mean
    np.testing.assert_allclose(delta.mean(axis=0), nominal, atol=4 * error)
    np.testing.assert_allclose(delta.std(axis=0), 2e-5, rtol=0.1)
    J = np.stack([(change(h * e) - change(-h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    want = delta @ J.T
    np.testing.assert_allclose(
        -data["assembly_multipliers"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max()
    )
    force = [r for r, label in zip(rows, labels, strict=True) if "force" in label]
    j2 = model.pair_names.index("J2")
    np.testing.assert_allclose(
        data["assembly_force"][:, j2], np.abs(want[:, force]).max(axis=1), rtol=1e-6
    )
    sweep = statics.tolerance_sweep(tol, q)
    assert rx.sweep.plan_sweep(sweep, mc).pending == 0  # resumed: nothing to compute
    # Bad input, each named.
    bad = tmp_path / "bad.toml"
    text = path.read_text().replace(
        'mechanism = "bricard.toml"', f'mechanism = "{CONFIGS / "bricard.toml"}"'
    )
    for edit, message in (
        (
            ("std = 2e-5                      # m", "std = -1e-5"),
            "deviations[0] key 'std': expected a number ≥ 0",
        ),
        (
            ('address = "pairs.J0.point_i.z"', 'address = "pairs.J9.point_i.z"'),
            "deviations[0] key 'address': unknown",
        ),
        (
            ("samples = 1000", 'samples = 1000\ndistribution = "normal"'),
            "unknown key 'distribution'",
        ),
    ):
        bad.write_text(text.replace(*edit, 1))
        status, out, err = _cli(capsys, "tolerances", bad)
        assert status == 2 and out == "", err
        assert err.startswith(f"redundax: error: {bad}: tolerances") or message in err, err
        assert message in err, err


def test_tolerance_allocation_for_bricard():
    """How accurately must Bricard's joints be made for assembly forces below 50 N
    (99th percentile)? One self-stress makes J = dλ/dδ of rank one, J_ri = N_r a_i, so
    the largest Σ log σ_i under the bound shares it equally: |J_r*i| σ_i =
    F / (z₉₉ √d) on the most loaded force row r* (Lagrange). The Optax allocation
    against that closed form, with J by central differences here; then a Monte Carlo
    with the allocated σ puts the 99th percentile at the bound."""
    tol = statics.load_tolerances(CONFIGS / "tolerances_bricard.toml")
    model = tol.model
    eq = rx.equilibrium(model, tol.state.q)
    addresses = [d.address for d in tol.deviations]

    def change(delta):
        deviated = statics.deviate(model, dict(zip(addresses, delta, strict=True)))
        return np.asarray(
            statics.assembly_stress(
                model, deviated, eq.q, tol.stiffness, structure=eq.structure
            ).multipliers
        )

    h = 1e-6
    J = np.stack([(change(h * e) - change(-h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    force = [
        r
        for p in model.pairs
        for label, r in zip(p.components, p.rows, strict=True)
        if "force" in label
    ]
    star = force[int(np.argmax(np.linalg.norm(J[force], axis=1)))]
    bound = 50.0
    want = bound / (2.5758293035489004 * math.sqrt(3) * np.abs(J[star]))
    # From a start far from the equal share (1, 10, 100 µm).
    start = dict(zip(addresses, (1e-6, 1e-5, 1e-4), strict=True))
    allocation = statics.allocate_tolerances(tol, bound, initial=start, structure=eq.structure)
    got = np.array([allocation.std[a] for a in addresses])
    np.testing.assert_allclose(got, want, rtol=1e-3)
    assert max(allocation.p99.values()) == pytest.approx(bound, rel=1e-6)
    # A Monte Carlo of 20,000 draws at the allocated tolerances (the study made of
    # them, `with_std`: normal about zero): the largest force on the binding row's
    # pair stays at the bound at the 99th percentile. Each draw's stress is J δ, J the
    # central differences above (the stress is linear in δ; that the study's own
    # Monte Carlo evaluates J δ draw by draw is test_tolerance_study_of_bricard's
    # claim): here in NumPy, where 20,000 draws through the study's sweep took
    # minutes at -O0.
    drawn = tol.with_std(allocation.std, samples=20_000)
    assert drawn.samples == 20_000
    sigma = np.array([d.spread for d in drawn.deviations])
    assert [d.value for d in drawn.deviations] == [0.0] * 3
    assert all(d.distribution == "normal" for d in drawn.deviations)
    np.testing.assert_allclose(sigma, got, rtol=1e-15)
    delta = np.random.default_rng(drawn.seed).standard_normal((drawn.samples, 3)) * sigma
    pair = next(p for p in model.pairs if star in p.rows)
    rows = [r for label, r in zip(pair.components, pair.rows, strict=True) if "force" in label]
    largest = np.abs(delta @ J[rows].T).max(axis=1)
    assert np.percentile(largest, 99) == pytest.approx(bound, rel=0.05)


def test_compliant_joint_is_the_bushing_model():
    """The exact compliant assembly against an independent model of the same physics:
    the spatial four-bar whose joint D is a 6-D bushing force element (`Bushing`:
    1e6 N/m in translation, 1e4 N m/rad in bending, free about the axis) instead of a
    revolute, solved by `rx.equilibrium` — with D's ground point moved out of the
    plane by δ = 0.1 mm, a misfit the rigid chain O–A–B cannot follow. The compliant
    model (D's rows springs, the others rigid) has the bushing model's configuration
    and reactions; D carries k δ along its axis; the first-order formula agrees."""
    kf, km, delta = 1e6, 1e4, 1e-4
    mech = _four_bar_with_spring(spatial=True)
    model = mech.build()
    eq = rx.equilibrium(model, mech.initial_state().q)
    D = model.pair("D")
    k = np.full(model.n_constraints, np.inf)
    for r, label in zip(D.rows, D.components, strict=True):
        k[r] = km if "moment" in label else kf
    k = jnp.asarray(k)
    deviated = statics.deviate(model, {"pairs.D.point_j.z": delta})
    compliant = statics.compliant_equilibrium(deviated, eq.q, k)

    bushing = Bushing(
        "rocker",
        "ground",
        point=(1.0, 0.0, 0.0),
        stiffness=(kf, kf, kf),
        rotational_stiffness=(km, km, 0.0),
    )
    bushed = dataclasses.replace(
        mech, pairs=[p for p in mech.pairs if p.name != "D"], forces=[*mech.forces, bushing]
    ).build()
    group = len(bushed.forces) - 1  # the bushing's group (after the spring-dampers)
    s_j = bushed.forces[group].s_j
    bushed = eqx.tree_at(lambda m: m.forces[group].s_j, bushed, s_j.at[0, 2].add(delta))
    reference = rx.equilibrium(bushed, eq.q)
    np.testing.assert_allclose(np.asarray(compliant.q), np.asarray(reference.q), atol=1e-12)
    for name in "OAB":
        mine = -np.asarray(compliant.multipliers)[list(model.pair(name).rows)]
        theirs = -np.asarray(reference.reactions.multipliers)[list(bushed.pair(name).rows)]
        np.testing.assert_allclose(mine, theirs, atol=1e-8 * np.abs(theirs).max())
    axial = -float(compliant.multipliers[D.rows[0]])
    assert abs(axial) == pytest.approx(kf * delta, rel=1e-3)  # the bushing's k δ
    first = statics.assembly_stress(model, deviated, eq.q, k, structure=eq.structure)
    change = np.asarray(compliant.multipliers) - np.asarray(
        statics.compliant_equilibrium(model, eq.q, k).multipliers
    )
    np.testing.assert_allclose(
        np.asarray(first.multipliers), change, atol=1e-3 * np.abs(change).max()
    )


def test_linearisation_about_a_moving_state():
    """A swinging pendulum (no spring) at angle φ from the bottom with angular speed
    ω. In its angle the reduced equation (J + M L²) φ̈ = −M g L sin φ has no velocity
    term; the linearisation's chart is ξ = Zᵀ (q − q₀) instead, and at a moving state
    the linearisation depends on the chart (only at an equilibrium does it not). By
    hand: with the bob at angle α from the −x axis, q(α) = (−L cos α, −L sin α, α),
    ξ = g(α) = [L² sin(α − α₀) + (α − α₀)] / s, s = √(1 + L²): g′ = s, g″ = 0 and
    g‴ = −L²/s at α₀, so ξ̈ = g′ α̈ + g″ α̇² gives
    −∂ξ̈/∂ξ = M g L cos φ / (J + M L²) + L² ω² / (1 + L²) and ∂ξ̈/∂ξ̇ = 0."""
    mech = models.pendulum(length=L, mass=M, inertia=J)
    model = mech.build()
    for phi, omega in ((0.3, 2.0), (1.0, -3.0), (0.5, 0.0)):
        a = phi + math.pi / 2  # the model's angle, from the −x axis
        q = jnp.array([-L * math.cos(a), -L * math.sin(a), a])
        qd = omega * jnp.array([L * math.sin(a), -L * math.cos(a), 1.0])
        lin = statics.linearize(model, q, qd)
        ratio = float(lin.stiffness[0, 0] / lin.mass[0, 0])
        want = M * G * L * math.cos(phi) / (J + M * L * L) + L * L * omega**2 / (1 + L * L)
        assert ratio == pytest.approx(want, rel=1e-9), (phi, omega)
        assert float(lin.mass[0, 0]) == pytest.approx((J + M * L * L) / (1 + L * L), rel=1e-12)
        assert abs(float(lin.damping[0, 0])) < 1e-9 * float(lin.mass[0, 0]) * (1 + abs(omega))


def test_a_generated_four_bar_and_its_twin_of_flat_plates_rest_alike():
    """Beyond the shipped mechanisms: a generated four-bar (random lengths, masses and
    gravity, `tests/mechanism_generator.py`) and its spatial twin whose every body is
    a flat plate in the plane of motion (I_z = I_x + I_y = the planar moment: a
    singular block of M in natural coordinates). The twin (p = 3) rests where the
    planar model rests, with its frequency; its mode shape is finite."""
    from mechanism_generator import four_bar

    planar = four_bar(1).mechanism
    twin = models.spatial_twin(planar)
    rng = np.random.default_rng(0)
    plates = []
    for b in twin.bodies:
        J = float(b.inertia[2])
        a = float(rng.uniform(0.2, 0.8)) * J
        plates.append(dataclasses.replace(b, inertia=(a, J - a, J)))
    twin = dataclasses.replace(twin, bodies=plates)
    results = []
    for mech in (planar, twin):
        model = mech.build()
        eq = rx.equilibrium(model, mech.initial_state().q)
        modes = eq.linearization.modes()
        assert np.all(np.isfinite(np.asarray(modes.shapes)))
        results.append((model, eq, float(modes.frequencies_hz[0])))
    (pm, pe, pf), (tm, te, tf) = results
    assert int(te.structure.m - te.structure.rank) == 3
    assert bool(pe.stable) == bool(te.stable)
    assert tf == pytest.approx(pf, rel=1e-6)
    crank_angle = float(pe.q[2])
    u = te.q[3:6]  # the twin's first body's x axis
    assert abs(math.atan2(float(u[1]), float(u[0])) - crank_angle) < TOL_ANGLE
