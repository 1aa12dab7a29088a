"""The documentation site's pages run as written (issue 36 item 5: documentation that
cannot rot). Every ```python block of each page of `docs/` — with the files a page
pulls in by `--8<-- "PATH"` (pymdownx.snippets, as `mkdocs.yml` configures it:
`configs/README.md`, ...) — runs in order, in one namespace per page, in a folder of
its own where `configs/` is the repository's (so a block that writes `runs/...` leaves
the repository alone). The API reference (`docs/api/`) is rendered from docstrings and
holds no blocks.

What a page says its blocks print is checked: a ```python block followed by a ```text
block (nothing between them but at most a short line such as "prints") must print
exactly that text, and the numbers a page states in its comments and prose are
compared with what the blocks compute (`CHECKS`, each of which must find its block)."""

import contextlib
import io
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SNIPPET = re.compile(r'^--8<-- "([^"]+)"[ \t]*$', re.M)
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def expand(text: str) -> str:
    """The page as pymdownx.snippets makes it: each `--8<-- "PATH[:START[:END]]"` line
    replaced by that file (lines START to END, 1-based), PATH from the repository root."""

    def include(match: re.Match) -> str:
        path, *lines = match.group(1).split(":")
        body = (ROOT / path).read_text(encoding="utf-8")
        if lines:
            start = int(lines[0] or 1)
            end = int(lines[1]) if len(lines) > 1 and lines[1] else None
            body = "".join(body.splitlines(keepends=True)[start - 1 : end])
        return expand(body)

    return SNIPPET.sub(include, text)


def python_blocks(text: str) -> list[tuple[str, str | None]]:
    """Each ```python block of `text` with the ```text block that shows its output
    (None where there is none)."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for k, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        shown = None
        if k + 1 < len(fences) and fences[k + 1].group(1) == "text":
            between = text[fence.end() : fences[k + 1].start()].strip()
            if "\n" not in between and len(between) <= 40:
                shown = fences[k + 1].group(2)
        blocks.append((fence.group(2), shown))
    return blocks


def _pages() -> list[str]:
    """Every Markdown page of docs/ outside the API reference (links, such as
    docs/notebooks and docs/results, are not followed)."""
    pages = []
    for folder, subfolders, files in os.walk(DOCS):
        subfolders[:] = sorted(d for d in subfolders if not (Path(folder) / d).is_symlink())
        pages += [(Path(folder) / f).relative_to(DOCS).as_posix() for f in files if f.endswith(".md")]
    return sorted(p for p in pages if not p.startswith("api/"))


PAGES = _pages()
PAGES_WITH_CODE = [p for p in PAGES if python_blocks(expand((DOCS / p).read_text(encoding="utf-8")))]


def run_blocks(
    source: str, text: str, checks: list[tuple[str, Callable]] = ()
) -> dict:
    """Run `text`'s python blocks in order in one namespace (the current folder);
    compare what each prints with the ```text block shown after it; after a block that
    contains a check's marker, run the check (namespace, block, printed, text). Every
    check must find its block."""
    namespace: dict = {"__name__": "__docs__"}
    done = set()
    for block, shown in python_blocks(text):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, source, "exec"), namespace)
        print(printed.getvalue(), end="")  # what pytest -s shows
        if shown is not None:
            assert printed.getvalue().rstrip() == shown.rstrip(), (source, block)
        for marker, check in checks:
            if marker in block:
                check(namespace, block, printed.getvalue(), text)
                done.add(marker)
    missing = [marker for marker, _ in checks if marker not in done]
    assert not missing, f"{source}: no block holds {missing}"
    return namespace


@pytest.fixture
def in_scratch_folder(tmp_path, monkeypatch):
    """A folder of its own with the repository's configs/ (the blocks' relative paths)."""
    (tmp_path / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- what the pages state, checked ------------------------------------------------


def _stated(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return found.group(1)


def _check_tutorial_analysis(namespace, block, printed, text):
    """Tutorial step 1 prints the rank, p and mobility and the non-unique pairs its
    comments show."""
    assert printed.splitlines() == [
        _stated(r"\)\)\s+# (\d+ \d+ \d+)\n", block),
        _stated(r"\n# (\[.*?\]): a rigid model", block),
    ]


def _check_tutorial_reactions(namespace, block, printed, text):
    """Tutorial step 2: D's reaction is unique, B's is not (as the comments say)."""
    assert bool(namespace["unique_D"]) and not bool(namespace["unique_B"])


def _check_tutorial_gradient(namespace, block, printed, text):
    """Tutorial step 3: the smooth peak the text states (0.4621 N), the gradient it
    prints is the one its comment shows, and central differences (step 1e-3 kg, as the
    text says) agree with it. The values come from the gradient's own programs
    (`jax.value_and_grad`, which the block's `jax.grad` has compiled), not from a
    forward-only simulation of their own: one program fewer to trace and compile."""
    f = namespace["peak_drive_force"]
    value_and_grad = namespace["jax"].value_and_grad(f)
    peak, grad = (float(x) for x in value_and_grad(1.0))
    value = _stated(r"power mean over the saved states: ([0-9.]+) N\)", text)
    assert f"{peak:.{len(value.split('.')[1])}f}" == value
    shown = _stated(r"print\(jax\.grad\(peak_drive_force\)\(1\.0\)\)\s+# ([0-9.]+) N/kg", block)
    assert f"{grad:.{len(shown.split('.')[1])}f}" == shown
    assert printed.strip().startswith(shown[:-1]), printed  # what the block printed
    central = (float(value_and_grad(1.0 + 1e-3)[0]) - float(value_and_grad(1.0 - 1e-3)[0])) / 2e-3
    assert abs(grad - central) < 1e-8 * abs(grad), (grad, central)


def _check_tutorial_structure(namespace, block, printed, text):
    """Tutorial step 4: rank, degree of redundancy and loops as the comment shows."""
    s = namespace["structure"]
    stated = _stated(r"n_loops\s+# (\d+, \d+, \d+)", block)
    assert f"{int(s.rank)}, {int(s.redundancy)}, {int(s.topology.n_loops)}" == stated


def _check_four_bar(namespace, block, printed, text):
    """The first mechanism in Python: a four-bar with one degree of freedom and no
    redundancy, every reaction unique (its table is printed)."""
    report = namespace["report"]
    assert int(report.redundancy) == 0 and int(report.dof) == 1
    assert all(bool(u) for u in report.unique)
    assert "A" in printed and "D" in printed


def _check_simulation_reactions(namespace, block, printed, text):
    """Simulation and reactions: D unique, B not; the run stays on its constraints."""
    assert bool(namespace["unique_D"]) and not bool(namespace["unique_B"])
    traj = namespace["traj"]
    assert float(traj.position_violation.max()) < 1e-8


def _check_valid_run(namespace, block, printed, text):
    """The shipped manoeuvre never leaves its constraints (`# False True`)."""
    traj = namespace["traj"]
    stated = _stated(r"valid\.all\(\)\)\s+# (\w+ \w+)", block)
    assert f"{bool(traj.left_constraints)} {bool(traj.valid.all())}" == stated


def _check_bricard(namespace, block, printed, text):
    """Bricard: p = 1 and mobility 1 although Grübler–Kutzbach counts 0, and J1's
    reaction components, none of them unique."""
    stated = _stated(r"# (\d+ \d+) \(Grübler", block)
    assert printed.splitlines() == [stated]
    components = namespace["r"].components("J1")
    assert "axial force" in components and "bending moment e2" in components
    assert not any(bool(unique) for _, unique in components.values())


def _check_gonzalez(namespace, block, printed, text):
    """González's stepper with projection keeps the constraints to round-off ("about
    1e-16")."""
    assert float(namespace["traj"].position_violation.max()) < 1e-14


def _check_mjcf(namespace, block, printed, text):
    """The MJCF four-bar closed by a connect: the line the comment shows."""
    assert printed.splitlines() == [_stated(r"\n# (1 1 .*)\n", block)]


def _check_friction(namespace, block, printed, text):
    """Pin friction: its work (the trapezoid rule over 401 states) is the mechanical
    energy the pendulum lost, an independent balance (to 1e-5), and the line shown."""
    work = float(namespace["report"].work[0])
    assert work < 0.0 and abs(work + namespace["lost"]) < 1e-5 * abs(work)
    assert printed.splitlines() == [_stated(r"\n# (-?[0-9.]+ J of work, [0-9.]+ J lost)", block)]


CHECKS: dict[str, list[tuple[str, Callable]]] = {
    "index.md": [
        ("print(int(report.rank), int(report.redundancy)", _check_tutorial_analysis),
        ("# unique_B is False", _check_tutorial_reactions),
        ("def peak_drive_force", _check_tutorial_gradient),
        ("structure = rx.decide(", _check_tutorial_structure),
        ("report.verdict(\"A\")", _check_four_bar),
        ("traj_6_21 = rx.simulate(", _check_simulation_reactions),
        ("throw=False)", _check_valid_run),
    ],
    "how-to/mechanisms.md": [("bricard_report = rx.analyze_solvability", _check_bricard)],
    "concepts.md": [("rx.GonzalezStepper(", _check_gonzalez)],
    "how-to/mjcf.md": [("rx.monitors.closure_report(mj_model", _check_mjcf)],
    "how-to/friction.md": [("report = rx.analysis.friction_report", _check_friction)],
}


def test_every_page_with_code_is_found():
    """The pages whose blocks this file runs, and those CHECKS reads, exist (a page
    renamed or emptied shows here, not as fewer tests)."""
    assert {"index.md", "concepts.md", "how-to/joint-coordinates.md"} <= set(PAGES_WITH_CODE)
    assert set(CHECKS) <= set(PAGES_WITH_CODE)


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_page_python_blocks_run(page, in_scratch_folder):
    text = expand((DOCS / page).read_text(encoding="utf-8"))
    run_blocks(f"docs/{page}", text, CHECKS.get(page, []))
