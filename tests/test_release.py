"""The shape of what ships (issue 36 items 2, 5, 6): a public API a newcomer can hold in
their head, every public name in the documentation, a site that builds under `strict`,
and a pure-Python wheel that works outside this repository."""

import importlib
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import redundax as rx

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
FAMILIES = (
    "analysis drift equations forces internal io joint_coordinates joints methods models "
    "monitors motions optimize plot statics sweep"
).split()


def _documented() -> set[str]:
    """Every object a `::: path` directive of the API reference renders."""
    return set(re.findall(r"^::: ([\w.]+)", "\n".join(p.read_text() for p in API.glob("*.md")), re.M))


def test_the_top_level_is_small_and_every_name_is_documented():
    # What `import redundax` alone gives (in this process other tests may have imported
    # `redundax.cli`, and the suite's jaxtyping hook adds `jaxtyping` to a module).
    listing = subprocess.run(
        [sys.executable, "-c", "import redundax; print(' '.join(dir(redundax)))"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    names = [n for n in listing if not n.startswith("_")]
    assert len(names) <= 70, names
    documented = _documented()
    missing = [n for n in names if f"redundax.{n}" not in documented]
    assert not missing, f"public names without a page in docs/api: {missing}"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_lists_what_it_exports(family):
    """A family's `__all__` is what its reference page renders: each name exists, and
    no other underscore-less name of the module is an object of redundax's own."""
    module = importlib.import_module(f"redundax.{family}")
    exported = set(module.__all__)
    assert all(hasattr(module, n) for n in exported)
    assert f"redundax.{family}" in _documented()
    own = {
        n
        for n in dir(module)
        if not n.startswith("_")
        and getattr(getattr(module, n), "__module__", "").startswith("redundax")
        and not isinstance(getattr(module, n), type(module))
    }
    # Names a module uses from its siblings are not its exports (e.g. `Model` in
    # `redundax.models`): only those defined in the family itself must be listed.
    # Kernels a family defines are documented in `redundax.internal`.
    defined_here = {
        n for n in own if getattr(module, n).__module__.startswith(f"redundax.{family}")
    }
    unlisted = defined_here - exported - set(importlib.import_module("redundax.internal").__all__)
    assert not unlisted, sorted(unlisted)


def test_the_documentation_site_builds_under_strict(tmp_path):
    """`mkdocs build` with `strict: true` (mkdocs.yml): a broken cross-reference in a
    docstring or a page, or a page missing from the site, fails the suite."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.fail("mkdocs is not installed: `make setup` installs the `docs` extra")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "simulate" / "index.html").exists()


def test_the_wheel_is_pure_python_and_runs_outside_the_repository(tmp_path):
    """`pip wheel .` makes a py3-none-any wheel holding the whole package (and nothing
    of the tests); installed into a fresh virtual environment — its dependencies
    taken from this one's site-packages, redundax only from the wheel — it imports
    from there, knows its version, runs a simulation and its command line."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheels), str(ROOT)],
        check=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("redundax-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        files = archive.namelist()
    packages = {f.rsplit("/", 1)[0] for f in files if f.endswith("__init__.py")}
    source = {
        str(p.parent.relative_to(ROOT / "src"))
        for p in (ROOT / "src" / "redundax").rglob("__init__.py")
    }
    assert source <= packages, sorted(source - packages)
    assert not any(f.startswith("tests/") for f in files)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    # The dependencies: this environment's site-packages as a plain path (its .pth
    # files, among them the editable redundax, are not read from there).
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    smoke = (
        "import redundax as rx, pathlib; "
        f"assert pathlib.Path(rx.__file__).is_relative_to({str(site)!r}), rx.__file__; "
        f"assert rx.__version__ == {rx.__version__!r}; "
        "mech = rx.models.pendulum(); model, s0 = mech.build(), mech.initial_state(); "
        "t = rx.simulate(model, s0, 0.2, saveat=rx.SaveAt(n=3)); "
        "assert bool(t.valid.all()) and float(t.position_violation.max()) < 1e-8; print('ok')"
    )
    done = subprocess.run(
        [str(python), "-c", smoke], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
    cli = subprocess.run(
        [str(venv / "bin" / "redundax"), "analyze", str(ROOT / "configs" / "four_bar.toml"),
         "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert '"redundancy": 0' in cli.stdout


def test_the_private_names_used_from_other_libraries_are_where_they_were():
    """The only private names redundax takes from other libraries (pinned in
    pyproject.toml): Diffrax's `WrapTerm`, which `diffeqsolve` wraps a term in (a run
    in segments hands its solver the same term), and Equinox's checkpointed
    `while_loop` (the saving loop). A new release that moves them fails here."""
    import inspect

    import diffrax
    import equinox.internal as eqxi
    import jax.numpy as jnp
    from diffrax._term import WrapTerm

    wrapped = WrapTerm(diffrax.ODETerm(lambda t, y, args: -y), jnp.asarray(1))
    assert isinstance(wrapped, diffrax.AbstractTerm)
    assert float(wrapped.vf(0.0, jnp.asarray(2.0), None)) == -2.0
    assert "kind" in inspect.signature(eqxi.while_loop).parameters
    out = eqxi.while_loop(lambda c: c < 3, lambda c: c + 1, 0, max_steps=8, kind="checkpointed")
    assert int(out) == 3


def test_no_import_cycles_in_the_package():
    """The modules of redundax import each other without a cycle (module-level and
    deferred imports alike)."""
    import ast

    root = ROOT / "src" / "redundax"
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)
    edges = {m: set() for m in modules}
    for name, (path, package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = name.split(".") if package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("redundax"):
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                edges[name].add(sub if sub in modules else target)
    # Depth-first search for a back edge.
    state, cycles = {}, []

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges[node] & set(modules)):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(modules):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles
