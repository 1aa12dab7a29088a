"""`rx.citation`: the BibTeX of redundax and of the papers behind what a run used
(issue 36, item 6)."""

import re
import tomllib
from pathlib import Path

import redundax as rx
from redundax import models


def _keys(text: str) -> list[str]:
    return re.findall(r"^@\w+\{(\w+),", text, flags=re.M)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text.replace("\\{", "").replace("\\}", ""):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_the_papers_follow_what_a_run_used(capsys):
    plain = rx.citation()
    assert capsys.readouterr().out == plain  # printed and returned
    assert _keys(plain) == ["redundax", "wojtyra2013solvability"]
    assert rx.__version__ in plain
    # The block solver and partitioning: Kraus et al.; the default drift control
    # (projection after every step, Baumgarte's terms between): Hairer et al. and
    # Baumgarte; Baumgarte's terms alone: Baumgarte only.
    assert _keys(rx.citation(rx.methods.BlockSparse()))[2:] == ["kraus2001natural"]
    assert _keys(rx.citation(rx.drift.StepProjection()))[2:] == [
        "hairer2006geometric",
        "baumgarte1972stabilization",
    ]
    assert _keys(rx.citation(rx.drift.StepProjection(baumgarte=None)))[2:] == [
        "hairer2006geometric"
    ]
    assert _keys(rx.citation(rx.drift.Baumgarte()))[2:] == ["baumgarte1972stabilization"]
    # Joint coordinates: Pękal et al. and Featherstone's DCA; a spatial model in
    # natural coordinates: Kraus et al.; each paper once.
    mech = models.four_bar()
    model, state = mech.build(), mech.initial_state()
    joint = rx.joint_coordinates.joint_model(model, state.q)
    assert _keys(rx.citation(joint, joint))[2:] == ["pekal_dca_uniqueness", "featherstone1999dca"]
    twin = models.spatial_twin(mech).build()
    assert _keys(rx.citation(twin, model))[2:] == ["kraus2001natural"]
    # A trajectory says what drift control it ran with (the default: the projection
    # after every step with Baumgarte's terms between).
    pendulum = models.pendulum()
    run = rx.simulate(pendulum.build(), pendulum.initial_state(), 0.05, saveat=rx.SaveAt(n=2))
    assert _keys(rx.citation(run))[2:] == ["hairer2006geometric", "baumgarte1972stabilization"]
    text = rx.citation(joint, twin, rx.drift.StepProjection())
    assert _balanced(text) and len(_keys(text)) == 7


def test_one_version_number():
    """`redundax.__version__` is pyproject.toml's (the installed metadata's)."""
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert rx.__version__ == pyproject["project"]["version"]
