"""The vendored reference data (tests/data/) names its sources, and the suite reads
nothing outside the repository, so that a fresh clone runs it alone."""

import re
from pathlib import Path

import pytest

from helpers import DATA, read_reference

ROOT = Path(__file__).resolve().parents[1]
CSVS = sorted(DATA.glob("*.csv"))
# Paths that leave the repository: the workspace's shared folder, two levels up from
# a file in the repository, or an absolute path into the machine's file system.
OUTSIDE = re.compile(r"benchmark-data|parents\[[2-9]\]|\.\./\.\.|[\"'](/work|/home|/tmp)/")


def test_the_vendored_reference_tables_are_there():
    assert {p.name for p in CSVS} >= {
        "A01_simple_pendulum_P1.csv",
        "A02_N_four_bar_N40_B0.csv",
        "A03_andrews_testset_y0_and_yref_t0.03.csv",
    }


@pytest.mark.parametrize("path", CSVS, ids=[p.stem for p in CSVS])
def test_each_table_names_its_source_and_licence_and_is_listed(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    notes = [line for line in lines if line.startswith("#")]
    assert lines[: len(notes)] == notes  # the notes come first, as a header
    assert any(line.startswith("# Source:") for line in notes), path.name
    assert any(line.startswith("# Licence:") for line in notes), path.name
    assert f"`{path.name}`" in (DATA / "README.md").read_text(encoding="utf-8")
    columns, rows = read_reference(path.name, dtype=str)
    assert len(columns) >= 3 and rows.shape[1] == len(columns)


def test_nothing_reads_outside_the_repository():
    files = [
        *(ROOT / "tests").glob("*.py"),
        *(ROOT / "experiments").glob("*.py"),
        *(ROOT / "notebooks").glob("*.ipynb"),
        *(ROOT / "configs").glob("*.toml"),
        *(ROOT / "configs" / "mjcf").glob("*.xml"),
        ROOT / "Makefile",
    ]
    hits = [
        f"{f.relative_to(ROOT)}:{k}: {line.strip()[:100]}"
        for f in files
        if f.name != Path(__file__).name
        for k, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if '"image/png"' not in line and OUTSIDE.search(line)
    ]
    assert not hits, "\n".join(hits)
