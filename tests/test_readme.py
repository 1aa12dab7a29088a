"""The README's Python example runs as written and prints what the README shows
(documentation that cannot rot); the README stays a front page (at most 250 lines,
issue 36 item 5) whose links into the documentation lead somewhere. The pages of the
site are run by tests/test_docs.py."""

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def test_readme_python_blocks_run_and_print_what_it_shows(tmp_path, monkeypatch):
    """Each ```python block runs, in order, in one namespace; one followed by a
    ```text block (after at most a short line such as "prints") prints exactly that."""
    (tmp_path / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    text = README.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    namespace: dict = {"__name__": "__readme__"}
    shown_outputs = 0
    for k, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(fence.group(2), str(README), "exec"), namespace)
        print(printed.getvalue(), end="")
        if k + 1 < len(fences) and fences[k + 1].group(1) == "text":
            between = text[fence.end() : fences[k + 1].start()].strip()
            if "\n" not in between and len(between) <= 40:
                assert printed.getvalue().rstrip() == fences[k + 1].group(2).rstrip()
                shown_outputs += 1
    assert shown_outputs >= 1  # the ten-line example shows its output
    # The example's robot: rank 20, p = 2, one degree of freedom; D's reaction unique,
    # B's not (the story paragraph).
    report, r = namespace["report"], namespace["r"]
    assert (int(report.rank), int(report.redundancy), int(report.dof)) == (20, 2, 1)
    assert bool(r.pair("D")[1]) and not bool(r.pair("B")[1])


def test_readme_is_a_front_page():
    """At most 250 lines: what it is and why, the two commands, the example, the
    version policy, links into the site (issue 36 item 5)."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "make demo" in text and "make test" in text and "make docs" in text
    assert "**Versions:**" in text


def test_readme_links_lead_somewhere():
    """Every relative link of the README names a file or folder of the repository, and
    the README links to every page of the site outside the API reference."""
    text = README.read_text(encoding="utf-8")
    links = [
        url.split("#")[0]
        for url in re.findall(r"\]\(([^)\s]+)\)", text)
        if not re.match(r"[a-z]+:", url) and not url.startswith("#")
    ]
    missing = [url for url in links if not (ROOT / url).exists()]
    assert not missing, missing
    pages = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "docs").rglob("*.md")
        if not {"api", "results", "notebooks"} & set(p.relative_to(ROOT / "docs").parts)
    } - {"docs/changelog.md"}  # the README links to CHANGELOG.md itself
    assert pages <= set(links), sorted(pages - set(links))
