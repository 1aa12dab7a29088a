"""The README's Python examples run as written (documentation that cannot rot)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    checked = False
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
        if "def peak_drive_force" in block:  # before later blocks rebind `model`
            _check_tutorial_gradient(namespace, block)
            checked = True
    assert checked
    report = namespace["report"]
    # The README's four-bar: one degree of freedom, no redundancy, all unique.
    assert int(report.redundancy) == 0 and int(report.dof) == 1
    assert bool(namespace["unique_D"]) and not bool(namespace["unique_B"])


def _check_tutorial_gradient(namespace, block):
    """Tutorial step 3: the gradient it prints is the one its comment shows, and
    central differences (step 1e-3 kg, as the text says) agree with it."""
    printed = re.search(r"print\(jax\.grad\(peak_drive_force\)\(1\.0\)\)\s+# ([0-9.]+) N/kg", block)
    assert printed is not None, block
    f = namespace["peak_drive_force"]
    grad = float(namespace["jax"].grad(f)(1.0))
    assert f"{grad:.5f}" == printed.group(1)
    central = (float(f(1.0 + 1e-3)) - float(f(1.0 - 1e-3))) / 2e-3
    assert abs(grad - central) < 1e-8 * abs(grad), (grad, central)
