"""The README's Python examples run as written (documentation that cannot rot)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    report = namespace["report"]
    # The README's four-bar: one degree of freedom, no redundancy, all unique.
    assert int(report.redundancy) == 0 and int(report.dof) == 1
    assert bool(namespace["unique_D"]) and not bool(namespace["unique_B"])
