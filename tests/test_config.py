"""TOML configurations: the shipped files equal the Python models, and every user
mistake is reported with the file, the entry and the key."""

import dataclasses
import re
from pathlib import Path

import diffrax
import jaxtyping
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_EXACT
from redundax import models
from redundax.io import (
    TYPES,
    Config,
    ConfigError,
    EliminatedRows,
    SimulationOptions,
    load_config,
    load_mechanism,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
MOBILE_ROBOT = CONFIGS / "mobile_robot.toml"
FOUR_BAR = CONFIGS / "four_bar.toml"


def _same_mechanism(config: Config, mechanism: rx.Mechanism) -> None:
    """Assert that a loaded configuration and a Python mechanism are the same model."""
    model, state = mechanism.build(), mechanism.initial_state()
    cmodel, cstate = config.model, config.state
    assert cmodel.pairs == model.pairs  # names, kinds, rows (file order) and bodies
    assert cmodel.bodies.names == model.bodies.names
    assert cmodel.markers.names == model.markers.names
    for got, want in [
        (cmodel.bodies.mass, model.bodies.mass),
        (cmodel.bodies.inertia, model.bodies.inertia),
        (cmodel.gravity, model.gravity),
        (cmodel.markers.points, model.markers.points),
        (cstate.q, state.q),
        (cstate.qd, state.qd),
    ]:
        np.testing.assert_allclose(got, want, rtol=0.0, atol=TOL_EXACT)
    for t in (0.0, 1.0, 3.0, 6.0, 9.0):
        np.testing.assert_allclose(
            rx.equations.constraint_matrix(cmodel, cstate.q, t),
            rx.equations.constraint_matrix(model, state.q, t),
            rtol=0.0,
            atol=TOL_EXACT,
        )
        np.testing.assert_allclose(
            rx.equations.position_residual(cmodel, state.q, t),
            rx.equations.position_residual(model, state.q, t),
            rtol=0.0,
            atol=TOL_EXACT,
        )
    got = rx.analyze_solvability(cmodel, cstate.q, cstate.t).to_dict()
    want = rx.analyze_solvability(model, state.q, state.t).to_dict()
    got_b = [p.pop("b_norm") for p in got["pairs"].values()]
    want_b = [p.pop("b_norm") for p in want["pairs"].values()]
    assert got == want
    np.testing.assert_allclose(got_b, want_b, rtol=0.0, atol=TOL_EXACT)


def _reference_mobile_robot() -> rx.Mechanism:
    """`models.mobile_robot()`, built with run-time type checks off.

    Workaround: `models.mobile_robot_steering()` passes Python lists to `SmoothSteps`,
    whose `Float[ArrayLike, " knots"]` annotation rejects lists under the tests'
    jaxtyping + beartype hook. Remove once models.py passes arrays.
    """
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        return models.mobile_robot()
    finally:
        jaxtyping.config.update("jaxtyping_disable", False)


def test_mobile_robot_config_is_models_mobile_robot():
    config = load_config(MOBILE_ROBOT)
    _same_mechanism(config, _reference_mobile_robot())
    report = rx.analyze_solvability(config.model, config.state.q)
    assert int(report.rank) == 20 and int(report.redundancy) == 2 and int(report.dof) == 1
    assert config.tracked == ("platform_centre", "W1", "W2", "W3", "W4", "W5")
    assert config.simulation.raw == {"t_final": 10.0, "rtol": 1e-8, "atol": 1e-10}
    assert (config.simulation.t_final, config.simulation.rtol) == (10.0, 1e-8)
    assert config.simulation.atol == 1e-10
    assert config.rheonomic == ("drive",)
    assert config.name.startswith("mobile robot")
    assert config.consistency_tolerance == 1e-8


def test_four_bar_config_is_models_four_bar():
    config = load_config(FOUR_BAR)
    _same_mechanism(config, models.four_bar())
    assert config.tracked == ("B",)
    assert config.path == FOUR_BAR
    assert config.simulation.t_final == 2.0
    assert config.rheonomic == ()


def test_load_mechanism_returns_the_mechanism():
    mechanism = load_mechanism(FOUR_BAR)
    assert [b.name for b in mechanism.bodies] == ["crank", "coupler", "rocker"]
    assert [p.name for p in mechanism.pairs] == ["O", "A", "B", "D"]


def test_every_key_of_the_type_table_is_a_field_of_its_object():
    # Guards the one string → object table against changes of the specs.
    assert set(TYPES["pair"]) == {
        "revolute",
        "translational",
        "weld",
        "translational-driver",
        "revolute-driver",
        "knife-edge",
    }
    assert set(TYPES["spatial-pair"]) == {
        "revolute-3d",
        "spherical",
        "universal",
        "weld-3d",
        "prismatic-3d",
        "cylindrical",
        "revolute-driver-3d",
        "translational-driver-3d",
    }
    for table in ("pair", "spatial-pair"):
        for type_name, kind in TYPES[table].items():
            assert kind.build.kind == type_name  # the type string is the Pair.kind
    assert set(TYPES["motion"]) == {"constant", "polynomial", "smooth-steps"}
    assert set(TYPES["solver"]) == {"tsit5", "dopri5", "dopri8", "kvaerno5"}
    assert set(TYPES["method"]) == {
        "null-space",
        "weighted-minimum-norm",
        "block",
        "elimination",
        "augmented-lagrangian",
        "penalty",
        "compliant",
    }
    assert set(TYPES["stabilisation"]) == {"baumgarte", "none"}
    assert set(TYPES["initial"]) == {"refuse", "project"}
    for name, table in TYPES.items():
        for kind in table.values():
            assert set(kind.required) <= set(kind.keys)
            if not dataclasses.is_dataclass(kind.build):
                assert not kind.keys  # the "none" choices
                continue
            fields = {f.name for f in dataclasses.fields(kind.build)}
            arguments = {kind.names.get(key, key) for key in kind.keys}
            if name in ("pair", "spatial-pair", "motion"):
                assert arguments == fields, kind.build  # every field settable from a file
            else:
                assert arguments <= fields, kind.build


# ------------------------------------------------------------------------ mistakes
def _mutate(text: str, old: str, new: str) -> str:
    """Replace the one occurrence of `old`, so that a test cannot pass vacuously."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def _write(tmp_path: Path, text: str, name: str = "mechanism.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> ConfigError:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: "), "the message must name the file"
    return info.value


FOUR_BAR_TEXT = FOUR_BAR.read_text(encoding="utf-8")
MOBILE_TEXT = MOBILE_ROBOT.read_text(encoding="utf-8")
PAIR_D = 'name = "D"\ntype = "revolute"'
ROCKER_POSITION = "position = [1.1694048299802482, 0.3623561833049952]"

MISTAKES = {
    "unknown body": (
        [('body_j = "rocker"', 'body_j = "rockr"')],
        r"pairs\[2\] \(\"B\"\) key 'body_j': unknown body 'rockr' \(did you mean 'rocker'\? "
        r"known bodies: coupler, crank, rocker, ground\)",
    ),
    "duplicate body name": (
        [('name = "rocker"', 'name = "coupler"')],
        r"bodies\[2\] \(\"coupler\"\): duplicate body name 'coupler'",
    ),
    "duplicate pair name": (
        [(PAIR_D, 'name = "A"\ntype = "revolute"')],
        r"pairs\[3\] \(\"A\"\): duplicate pair name 'A'",
    ),
    "wrong vector length": (
        [("point_i = [0.6, 0.0]", "point_i = [0.6, 0.0, 0.0]")],
        r"pairs\[2\] \(\"B\"\) key 'point_i': expected a vector \[x, y\] of 2 numbers, "
        r"got an array of length 3",
    ),
    "non-positive mass": (
        [("mass = 1.2", "mass = 0.0")],
        r"bodies\[1\] \(\"coupler\"\) key 'mass': must be positive, got 0.0",
    ),
    "non-positive inertia": (
        [("inertia = 0.144", "inertia = -0.144")],
        r"bodies\[1\] \(\"coupler\"\) key 'inertia': must be positive, got -0.144",
    ),
    "unknown pair type": (
        [(PAIR_D, 'name = "D"\ntype = "revolut"')],
        r"pairs\[3\] \(\"D\"\) key 'type': unknown pair type 'revolut' \(did you mean "
        r"'revolute'\? known: revolute, translational, weld, translational-driver, "
        r"revolute-driver, knife-edge\)",
    ),
    "typo in a key": (
        [("mass = 0.4\n", "masss = 0.4\n")],
        r"bodies\[0\] \(\"crank\"\): unknown key 'masss' \(did you mean 'mass'\?",
    ),
    "missing required key": (
        [('body_i = "crank"\nbody_j = "ground"\n', 'body_i = "crank"\n')],
        r"pairs\[0\] \(\"O\"\): missing required key 'body_j'",
    ),
    "string where a number is expected": (
        [("mass = 1.2", 'mass = "1.2"')],
        r"bodies\[1\] \(\"coupler\"\) key 'mass': expected a number, got '1.2' \(a string\); "
        r"write the number without quotes",
    ),
    "array where a number is expected": (
        [("angle = 0.3207220116342567", "angle = [0.3207220116342567]")],
        r"bodies\[1\] \(\"coupler\"\) key 'angle': expected a number, got an array of length 1",
    ),
    "typo in the mechanism table": (
        [("gravity = [0.0, -9.81]", "gravty = [0.0, -9.81]")],
        r"mechanism: unknown key 'gravty' \(did you mean 'gravity'\?",
    ),
    "pair type that is not a string": (
        [(PAIR_D, 'name = "D"\ntype = 1')],
        r"pairs\[3\] \(\"D\"\) key 'type': expected a string, got 1 \(an integer\) "
        r"\(known: revolute,",
    ),
    "unknown table": (
        [("[simulation]", "[simulaton]")],
        r"top level: unknown table 'simulaton' \(did you mean 'simulation'\?",
    ),
    "reserved body name": (
        [('name = "crank"', 'name = "ground"')],
        r"bodies\[0\] \(\"ground\"\) key 'name': 'ground' is reserved for the fixed frame",
    ),
    "pair between a body and itself": (
        [('body_i = "rocker"\nbody_j = "ground"', 'body_i = "rocker"\nbody_j = "rocker"')],
        r"pairs\[3\] \(\"D\"\): body_i and body_j are the same body 'rocker'",
    ),
    "marker on an unknown body": (
        [('body = "coupler"', 'body = "copler"')],
        r"markers\[0\] \(\"B\"\) key 'body': unknown body 'copler' \(did you mean 'coupler'\?",
    ),
    "zero normal": (
        [
            (
                "[[markers]]",
                '[[pairs]]\nname = "K"\ntype = "knife-edge"\nbody = "crank"\n'
                "normal = [0.0, 0.0]\n\n[[markers]]",
            )
        ],
        r"pairs\[4\] \(\"K\"\) key 'normal': must be a non-zero vector",
    ),
    "spatial pair type in a planar config": (
        [(PAIR_D, 'name = "D"\ntype = "revolute-3d"')],
        r"pairs\[3\] \(\"D\"\) key 'type': 'revolute-3d' is a spatial pair type, but the "
        r"mechanism is planar \(\[mechanism\] dim = 2\) \(did you mean 'revolute'\?",
    ),
    "dimension that is not an integer": (
        [("[mechanism]\n", '[mechanism]\ndim = "2"\n')],
        r"mechanism key 'dim': expected an integer, got '2' \(a string\)",
    ),
    "load with an unknown key": (
        [
            (
                "[[markers]]",
                '[[loads]]\nbody = "crank"\nforce = [1.0, 0.0]\ntorqe = 1.0\n\n[[markers]]',
            )
        ],
        r"loads\[0\]: unknown key 'torqe' \(did you mean 'torque'\?",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_is_reported_with_entry_and_key(tmp_path, mistake):
    edits, message = MISTAKES[mistake]
    text = FOUR_BAR_TEXT
    for old, new in edits:
        text = _mutate(text, old, new)
    err = _error(tmp_path, text)
    assert isinstance(err, ValueError)
    assert any(re.search(message, p) for p in err.problems), err.problems
    assert re.search(message, str(err))


MOTION = (
    'motion = { type = "smooth-steps", times = [0.0, 0.5, 1.5, 2.5, 3.5, 5.5, 6.5, 7.5, 8.5], '
    "values = [-1.0, -1.0, -1.02, -1.02, -1.0, -1.0, -0.98, -0.98, -1.0] }"
)


@pytest.mark.parametrize(
    ("motion", "message"),
    [
        (
            MOTION.replace('"smooth-steps"', '"smoothsteps"'),
            r"pairs\[8\] \(\"drive\"\) key 'motion' key 'type': unknown motion type "
            r"'smoothsteps' \(did you mean 'smooth-steps'\? known: constant, polynomial, "
            r"smooth-steps\)",
        ),
        (
            MOTION.replace("5.5, 6.5", "6.5, 5.5"),
            r"pairs\[8\] \(\"drive\"\) key 'motion' key 'times': expected at least 2 strictly "
            r"increasing times",
        ),
        (
            MOTION.replace("-0.98, -0.98, -1.0]", "-0.98, -0.98]"),
            r"'times' and 'values' must have the same length, got 9 and 8",
        ),
        ('motion = { type = "constant" }', r"key 'motion': missing required key 'value'"),
        ("motion = -1.0", r"key 'motion': expected a table such as"),
    ],
)
def test_a_motion_mistake_is_reported(tmp_path, motion, message):
    err = _error(tmp_path, _mutate(MOBILE_TEXT, MOTION, motion))
    assert re.search(message, str(err)), str(err)


def test_all_problems_are_reported_at_once(tmp_path):
    text = _mutate(FOUR_BAR_TEXT, "mass = 1.2", "mass = -1.2")
    text = _mutate(text, 'body_j = "rocker"', 'body_j = "rockr"')
    text = _mutate(text, "inertia = 0.144", "inertia_ = 0.144")
    err = _error(tmp_path, text)
    assert len(err.problems) == 4, err.problems  # 'inertia_' is unknown and 'inertia' missing
    first, *rest = str(err).splitlines()
    assert first.endswith("(and 3 more problem(s), all listed below)")
    assert len(rest) == 4 and all(line.startswith("  - ") for line in rest)


def test_toml_syntax_error_gives_the_line(tmp_path):
    text = _mutate(FOUR_BAR_TEXT, "inertia = 0.144\n", "inertia = 0.144 kg m²\n")
    line = text.splitlines().index("inertia = 0.144 kg m²") + 1
    err = _error(tmp_path, text)
    assert re.search(rf"TOML syntax error: .*\(at line {line}, column \d+\)", str(err))


def test_missing_file(tmp_path):
    path = tmp_path / "absent.toml"
    with pytest.raises(ConfigError, match=r"absent\.toml: no such file"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"absent\.toml: no such file"):
        load_mechanism(path)


def test_missing_bodies(tmp_path):
    err = _error(tmp_path, '[mechanism]\nname = "nothing"\n')
    assert re.search(r"top level: no bodies; add at least one \[\[bodies\]\] entry", str(err))


def test_inconsistent_initial_configuration(tmp_path):
    # Move the rocker by 1 cm: pairs B and D (its two pins) are violated, O and A are not.
    text = _mutate(
        FOUR_BAR_TEXT, ROCKER_POSITION, "position = [1.1794048299802482, 0.3623561833049952]"
    )
    err = _error(tmp_path, text)
    assert [p.split(":")[1].strip() for p in err.problems] == ["pair 'B'", "pair 'D'"]
    assert all(p.startswith("inconsistent initial configuration: pair") for p in err.problems)
    assert "consistency_tolerance" in str(err)


def test_consistency_tolerance_is_read_from_the_file(tmp_path):
    moved = _mutate(
        FOUR_BAR_TEXT, ROCKER_POSITION, "position = [1.1794048299802482, 0.3623561833049952]"
    )
    loose = _mutate(
        moved, "gravity = [0.0, -9.81]", "gravity = [0.0, -9.81]\nconsistency_tolerance = 0.1"
    )
    config = load_config(_write(tmp_path, loose))
    assert config.consistency_tolerance == 0.1
    _error(tmp_path, moved)  # the same mechanism fails at the default tolerance


def test_errors_of_mechanism_build_name_the_file(tmp_path, monkeypatch):
    # Whatever Mechanism.build still rejects is reported with the file name prefixed,
    # one problem each, read from the error's parts (not parsed from its text).
    def build(self):
        raise rx.ModelError("invalid mechanism: anything", ["pair 'O': something wrong"])

    monkeypatch.setattr(rx.Mechanism, "build", build)
    err = _error(tmp_path, FOUR_BAR_TEXT)
    assert err.problems == ("pair 'O': something wrong",)


def test_dim_2_is_the_planar_default(tmp_path):
    text = _mutate(FOUR_BAR_TEXT, "[mechanism]\n", "[mechanism]\ndim = 2\n")
    config = load_config(_write(tmp_path, text))
    assert config.dim == 2 and config.model.dim == 2
    assert config.model.pairs == load_config(FOUR_BAR).model.pairs


def test_a_valid_edit_loads(tmp_path):
    # The error tests edit FOUR_BAR_TEXT; unedited (in tmp_path) it loads.
    config = load_config(_write(tmp_path, FOUR_BAR_TEXT))
    assert config.model.n_constraints == 8


# ---------------------------------------------------------------------- [simulation]
def _with_simulation(text: str, table: str) -> str:
    """`text` (a shipped file) with its [simulation] table replaced by `table`."""
    head, sep, _ = text.partition("[simulation]")
    assert sep, "the file has a [simulation] table"
    return f"{head}[simulation]\n{table}\n"


def test_simulation_defaults(tmp_path):
    text = FOUR_BAR_TEXT.partition("[simulation]")[0]
    options = load_config(_write(tmp_path, text)).simulation
    assert isinstance(options, SimulationOptions)
    assert (options.t_final, options.rtol, options.atol, options.n_save) == (
        10.0,
        1e-8,
        1e-10,
        201,
    )
    assert options.max_steps == 100_000
    # The solver rx.simulate takes at these tolerances (issue 14: one set of defaults).
    assert isinstance(options.solver, diffrax.Dopri8)
    assert type(options.solver) is type(rx.internal.default_solver(options.rtol))
    assert isinstance(options.method, rx.methods.NullSpace)
    # A projection after every step, with mild Baumgarte terms between (the drift
    # control of rx.simulate's default, rx.drift.default_drift_control).
    assert options.drift_control == rx.drift.StepProjection()
    assert options.drift_control.baumgarte == rx.drift.Baumgarte(alpha=1.0, beta=1.0)
    assert options.initial == rx.CheckInitial(tol=1e-8)
    assert options.saveat == rx.SaveAt(n=201)
    assert options.drift_control == rx.drift.default_drift_control(options.method)
    assert dict(options.choices) == {
        "solver": "dopri8",
        "method": "null-space",
        "stabilisation": "baumgarte",
        "initial": "refuse",
    }
    assert options.raw == {}
    # Without a solver key the solver follows rtol, as rx.simulate's does.
    loose = load_config(_write(tmp_path, text + "[simulation]\nrtol = 1e-5\n", "loose.toml"))
    assert isinstance(loose.simulation.solver, diffrax.Tsit5)
    assert type(loose.simulation.solver) is type(rx.internal.default_solver(1e-5))
    assert loose.simulation.choices["solver"] == "tsit5"


def _documented_simulation_defaults() -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """From configs/README.md: the default of each `[simulation]` key (its key
    table) and, per `method`, the default of each of its keys (the method table)."""
    text = (CONFIGS / "README.md").read_text(encoding="utf-8")
    start = text.index("| `t_final` |")
    keys_table = text[start : text.index("\n\n", start)]
    keys = {
        m[1]: m[2]
        for m in re.finditer(r"^\| `(\w+)` \|[^|]*\|[^|]*\| `([^`]*)` \|", keys_table, re.M)
    }
    start = text.index("| `method` | keys (default) |")
    methods_table = text[start : text.index("\n\n", start)]
    methods = {
        m[1]: dict(re.findall(r"`(\w+)`: [^(]*\(`([^`]*)`\)", m[2]))
        for m in re.finditer(r'^\| `"([\w-]+)"` \|([^|]*)\|', methods_table, re.M)
    }
    return keys, methods


def test_documented_defaults_are_the_code_defaults(tmp_path):
    """configs/README.md states the defaults of `[simulation]` and of each method's
    keys; a file that leaves them out gets exactly those (issue 14: the README said
    `penalty = 1e6` while the code used 1e5)."""
    keys, methods = _documented_simulation_defaults()
    head = FOUR_BAR_TEXT.partition("[simulation]")[0]
    options = load_config(_write(tmp_path, head)).simulation
    assert len(keys) == 12, sorted(keys)
    for key in ("t_final", "rtol", "atol", "n_save", "max_steps"):
        assert float(keys[key]) == getattr(options, key), key
    for key in ("solver", "method", "stabilisation", "initial"):
        assert keys[key].strip('"') == options.choices[key], key
    assert float(keys["baumgarte_alpha"]) == options.drift_control.baumgarte.alpha
    assert float(keys["baumgarte_beta"]) == options.drift_control.baumgarte.beta
    assert keys["projection"] == '"steps"' and options.drift_control == rx.drift.StepProjection()
    assert set(methods) == set(TYPES["method"])
    # Scalar keys are attributes of the method object; `compliant`'s keys build its
    # weights (their defaults are tested with `joint_stiffness` in test_compliance).
    scalar = {m: d for m, d in methods.items() if d and m != "compliant"}
    assert scalar == {
        "block": {"pivot_rtol": "1e-6"},
        "augmented-lagrangian": {"penalty": "1e5"},
        "penalty": {"stiffness": "1e8", "omega": "10.0", "xi": "1.0"},
    }
    for name, defaults in scalar.items():
        text = _with_simulation(FOUR_BAR_TEXT, f'method = "{name}"')
        path = _write(tmp_path, text, f"{name}.toml")
        method = load_config(path).simulation.method
        for key, value in defaults.items():
            assert float(np.asarray(getattr(method, key))) == float(value), (name, key)


def test_simulation_options_are_mapped_to_objects(tmp_path):
    table = """t_final = 3
rtol = 1e-6
atol = 1e-9
n_save = 11
max_steps = 500
solver = "kvaerno5"
method = "penalty"
stiffness = 1e7
omega = 5.0
xi = 0.5
stabilisation = "none"
projection = true
initial = "project"
"""
    options = load_config(_write(tmp_path, _with_simulation(FOUR_BAR_TEXT, table))).simulation
    assert (options.t_final, options.rtol, options.atol, options.n_save) == (3.0, 1e-6, 1e-9, 11)
    assert isinstance(options.t_final, float) and options.max_steps == 500
    assert isinstance(options.solver, diffrax.Kvaerno5)
    assert options.method == rx.methods.Penalty(stiffness=1e7, omega=5.0, xi=0.5)
    # Projection at the saved states, no Baumgarte terms between them.
    assert options.drift_control == rx.drift.Projection(baumgarte=None)
    assert options.initial == rx.ProjectInitial(rx.drift.Projection(), tol=1e-6)
    assert isinstance(options.stepsize_controller, diffrax.PIDController)
    assert options.choices["method"] == "penalty" and options.choices["initial"] == "project"
    assert options.raw["stiffness"] == 1e7


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('projection = "steps"', rx.drift.StepProjection()),
        ('projection = "steps"\nstabilisation = "none"', rx.drift.StepProjection(baumgarte=None)),
        (
            'projection = "steps"\nbaumgarte_alpha = 2\nbaumgarte_beta = 3',
            rx.drift.StepProjection(baumgarte=rx.drift.Baumgarte(2.0, 3.0)),
        ),
        ("projection = false", rx.drift.Baumgarte()),
        ("", rx.drift.StepProjection()),
        ('method = "penalty"', rx.drift.Baumgarte()),
    ],
)
def test_projection_after_every_step_from_the_file(tmp_path, table, expected):
    options = load_config(_write(tmp_path, _with_simulation(FOUR_BAR_TEXT, table))).simulation
    assert options.drift_control == expected


def test_a_pivot_metric_that_is_not_understood_is_named(tmp_path):
    text = _with_simulation(FOUR_BAR_TEXT, 'method = "block"\npivots = "euclid"')
    with pytest.raises(ConfigError, match=r"pivots.*\"mass\" or \"coordinates\""):
        load_config(_write(tmp_path, text))


def test_a_projection_that_is_not_understood_is_named(tmp_path):
    path = _write(tmp_path, _with_simulation(FOUR_BAR_TEXT, 'projection = "always"'))
    with pytest.raises(ConfigError, match=r"projection.*true, false or \"steps\""):
        load_config(path)


@pytest.mark.parametrize(
    ("table", "method"),
    [
        ('method = "weighted-minimum-norm"', rx.methods.WeightedMinimumNorm()),
        ('method = "block"\npivot_rtol = 1e-8', rx.methods.BlockSparse(pivot_rtol=1e-8)),
        ('method = "block"\npivots = "coordinates"', rx.methods.BlockSparse(pivots="coordinates")),
        (
            'method = "augmented-lagrangian"\npenalty = 1e5',
            rx.methods.AugmentedLagrangian(penalty=1e5),
        ),
        ('stabilisation = "baumgarte"\nbaumgarte_alpha = 2\nbaumgarte_beta = 3', None),
    ],
)
def test_simulation_method_and_stabilisation_keys(tmp_path, table, method):
    options = load_config(_write(tmp_path, _with_simulation(FOUR_BAR_TEXT, table))).simulation
    if method is None:
        assert options.drift_control.baumgarte == rx.drift.Baumgarte(alpha=2.0, beta=3.0)
    else:
        assert options.method == method


def test_elimination_rows_from_the_file_are_decided_at_the_initial_state(tmp_path):
    text = _with_simulation(MOBILE_TEXT, 'method = "elimination"\neliminate = [6, 21]')
    method = load_config(_write(tmp_path, text)).simulation.method
    assert isinstance(method, rx.methods.Elimination)
    assert method.eliminated == (5, 20)  # 0-based
    text = _with_simulation(MOBILE_TEXT, 'method = "elimination"')
    method = load_config(_write(tmp_path, text)).simulation.method
    assert isinstance(method, rx.methods.Elimination) and len(method.eliminated) == 2
    assert EliminatedRows().rows is None


SIMULATION_MISTAKES = {
    "unknown method": (
        'method = "nullspace"',
        r"simulation key 'method': unknown method 'nullspace' \(did you mean 'null-space'\? "
        r"known: null-space, weighted-minimum-norm, block, elimination, augmented-lagrangian, "
        r"penalty, compliant\)",
    ),
    "unknown solver": (
        'solver = "rk4"',
        r"simulation key 'solver': unknown solver 'rk4' \(known: tsit5, dopri5, dopri8, kvaerno5\)",
    ),
    "unknown key": (
        "tfinal = 2.0",
        r"simulation: unknown key 'tfinal' \(did you mean 't_final'\? allowed: ",
    ),
    "negative t_final": ("t_final = -1.0", r"simulation key 't_final': must be positive, got -1.0"),
    "zero rtol": ("rtol = 0", r"simulation key 'rtol': must be positive, got 0.0"),
    "string t_final": (
        't_final = "2"',
        r"simulation key 't_final': expected a number, got '2' \(a string\); write the number "
        r"without quotes",
    ),
    "n_save too small": ("n_save = 1", r"simulation key 'n_save': must be at least 2"),
    "n_save not an integer": (
        "n_save = 20.5",
        r"simulation key 'n_save': expected an integer, got 20.5 \(a float\)",
    ),
    "max_steps zero": ("max_steps = 0", r"simulation key 'max_steps': must be a positive integer"),
    "projection not a boolean": (
        'projection = "yes"',
        r"simulation key 'projection': expected true, false or \"steps\", got 'yes' \(a string\)",
    ),
    "unknown initial": (
        'initial = "assemble"',
        r"simulation key 'initial': unknown initial 'assemble' \(known: refuse, project\)",
    ),
    "method not a string": (
        "method = 1",
        r"simulation key 'method': expected a string, got 1 \(an integer\)",
    ),
    "key of another method": (
        "stiffness = 1e6",
        r"simulation key 'stiffness': applies only with method = 'penalty', but "
        r"method = 'null-space'",
    ),
    "eliminate without elimination": (
        "eliminate = [6, 21]",
        r"simulation key 'eliminate': applies only with method = 'elimination'",
    ),
    "baumgarte key without baumgarte": (
        'stabilisation = "none"\nbaumgarte_alpha = 1.0',
        r"simulation key 'baumgarte_alpha': applies only with stabilisation = 'baumgarte', "
        r"but stabilisation = 'none'",
    ),
    "negative baumgarte": (
        "baumgarte_beta = -1",
        r"simulation key 'baumgarte_beta': must be zero or positive, got -1.0",
    ),
    "rows not integers": (
        'method = "elimination"\neliminate = [6.0, 21]',
        r"simulation key 'eliminate'\[0\]: expected an integer, got 6.0 \(a float\)",
    ),
    "row zero": (
        'method = "elimination"\neliminate = [0, 21]',
        r"simulation key 'eliminate': rows are numbered from 1, got \[0, 21\]",
    ),
    "not a table": (None, r"simulation: expected a table, written \[simulation\]"),
}


@pytest.mark.parametrize("mistake", sorted(SIMULATION_MISTAKES))
def test_a_simulation_mistake_is_reported_with_its_key(tmp_path, mistake):
    table, message = SIMULATION_MISTAKES[mistake]
    if table is None:
        text = "simulation = 1\n" + FOUR_BAR_TEXT.partition("[simulation]")[0]
    else:
        text = _with_simulation(FOUR_BAR_TEXT, table)
    err = _error(tmp_path, text)
    assert re.search(message, err.problems[0]), err.problems
    assert len(err.problems) == 1, err.problems


def test_simulation_mistakes_are_reported_with_the_others(tmp_path):
    text = _with_simulation(FOUR_BAR_TEXT, 't_final = 0\nmethod = "penalti"')
    err = _error(tmp_path, _mutate(text, "mass = 1.2", "mass = -1.2"))
    assert len(err.problems) == 3
    assert any("key 't_final'" in p for p in err.problems)
    assert any("unknown method 'penalti' (did you mean 'penalty'?" in p for p in err.problems)
    assert any("key 'mass'" in p for p in err.problems)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            "[1, 21]",
            r"simulation key 'eliminate': dropping rows 1 \(pair 'A'\), 21 \(pair 'W4'\) "
            r"changes the motion",
        ),
        ("[6, 30]", r"simulation key 'eliminate': rows \[30\] out of range 1..22"),
    ],
)
def test_eliminating_rows_that_are_not_redundant(tmp_path, rows, message):
    text = _with_simulation(MOBILE_TEXT, f'method = "elimination"\neliminate = {rows}')
    err = _error(tmp_path, text)
    assert len(err.problems) == 1
    assert re.search(message, err.problems[0]), err.problems
    assert "\n" not in str(err)


def test_initial_project_accepts_an_inconsistent_state(tmp_path):
    moved = _mutate(
        FOUR_BAR_TEXT, ROCKER_POSITION, "position = [1.1794048299802482, 0.3623561833049952]"
    )
    err = _error(tmp_path, moved)
    assert 'initial = "project"' in str(err)  # the hint names the way out
    config = load_config(_write(tmp_path, _with_simulation(moved, 'initial = "project"')))
    assert isinstance(config.simulation.initial, rx.ProjectInitial)
    assert isinstance(config.simulation.initial.projection, rx.drift.Projection)


def test_compliant_method_from_a_file(tmp_path):
    """`method = "compliant"` builds `Compliant(joint_stiffness(model, ...))`: the
    per-row stiffnesses equal those of the library function called directly (force
    rows 1e8, moment rows 1e6, pair B 1e9; tests/test_compliance.py checks what
    `Compliant` does with them); mistakes name the key."""
    text = MOBILE_ROBOT.read_text().replace(
        "t_final = 10.0                  # s: the whole manoeuvre",
        't_final = 1.0\nmethod = "compliant"\njoint_stiffness = [1e8, 1e6]\n'
        "pair_stiffness = { B = 1e9 }",
    )
    path = tmp_path / "robot.toml"
    path.write_text(text)
    config = load_config(path)
    method = config.simulation.method
    assert isinstance(method, rx.methods.Compliant)
    expected = rx.methods.joint_stiffness(config.model, (1e8, 1e6), {"B": 1e9})
    np.testing.assert_array_equal(np.asarray(method.stiffness), np.asarray(expected))
    path.write_text(text.replace("{ B = 1e9 }", "{ Q = 1e9 }"))
    with pytest.raises(ConfigError, match="simulation key 'pair_stiffness': no pair named 'Q'"):
        load_config(path)
    path.write_text(text.replace("[1e8, 1e6]", "[1e8, 1e6, 1]"))
    with pytest.raises(ConfigError, match="expected a stiffness or \\[force rows, moment rows\\]"):
        load_config(path)


@pytest.mark.parametrize(
    ("line", "key", "message"),
    [
        (
            "t_final = 1.0",
            "t_final",
            "top level key 't_final': unknown key; it belongs in the [simulation] table: "
            "write it below the [simulation] header",
        ),
        (
            "gravity = [0.0, -9.81]",
            "gravity",
            "top level key 'gravity': unknown key; it belongs in the [mechanism] table",
        ),
        (
            "mass = 1.0",
            "mass",
            "top level key 'mass': unknown key; it belongs in the [[bodies]] table",
        ),
        (
            "frobnicate = 3",
            "frobnicate",
            "top level key 'frobnicate': unknown key; the top level has only the tables ",
        ),
    ],
)
def test_a_key_above_the_first_header_is_an_unknown_key(tmp_path, line, key, message):
    """A key written before `[mechanism]` is at TOML's top level: an unknown *key*
    (not a table), named with the table it belongs in when it is one's."""
    path = tmp_path / "top.toml"
    path.write_text(line + "\n" + FOUR_BAR.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    error = info.value
    assert len(error.problems) == 1
    assert (error.table, error.key) == ("top level", key)
    assert str(error).startswith(f"{path}: {message}")
    assert "unknown table" not in str(error)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_solvers_named_in_shipped_comments_are_those_that_run(path):
    """A comment of a shipped file that names a solver names the one its simulation
    takes (four_bar.toml said Tsit5 and sweep_mobile_robot.toml "Tsit5, rtol 1e-8"
    while both ran Dopri8, the default at rtol < 1e-6)."""
    text = path.read_text(encoding="utf-8")
    comments = " ".join(line.partition("#")[2] for line in text.splitlines() if "#" in line)
    mechanism = re.search(r'^mechanism = "([^"]+)"', text, flags=re.M)
    config = load_config(path.parent / mechanism.group(1) if mechanism else path)
    chosen = config.simulation.choices["solver"]
    named = {s for s in TYPES["solver"] if re.search(rf"\b{s}\b", comments, flags=re.I)}
    assert named <= {chosen}, f"{path.name}: comments name {named}, the run takes {chosen!r}"
