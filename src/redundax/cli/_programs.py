"""Compiled programs kept between command-line runs, tracing included.

JAX's persistent compilation cache skips XLA's compilation, but not Python's
tracing and lowering of the program, which for a simulation (Diffrax's loop around
the equations of motion, themselves derived by autodiff) costs several seconds at
every call. `cached_call` serialises the traced program itself with
`jax.export` into the cache folder, keyed by everything that went into it (the
static parts of the arguments, the shapes and dtypes of the arrays, the versions of
redundax's source and of its numerical dependencies): a second run with the same
mechanism file deserialises it and calls it, and XLA's compilation of it is then a
hit of the compilation cache. Any failure (a program that cannot be exported, a
key that cannot be formed, an unreadable file) falls back to calling the function:
this cache only ever saves time.
"""

import functools
import hashlib
import importlib.metadata
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..io._atomic import atomic_write

_PACKAGES = ("jax", "jaxlib", "equinox", "diffrax", "lineax", "numpy")


def _source_digest() -> str:
    """Digest of redundax's own source files (the programs depend on every line)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    for name in _PACKAGES:
        # The imported module's own version (importlib.metadata scans sys.path: 0.3 s
        # of a warm command for these six); the distribution's where it has none.
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if version is None:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
        digest.update(f"{name}={version}".encode())
    return digest.hexdigest()


_DIGEST: list[str] = []


@functools.cache
def _prepare_native_kernels() -> None:
    """Initialise jaxlib's LAPACK kernels before running a deserialised program.

    jaxlib loads its LAPACK function table when it first *lowers* a linear-algebra
    operation; a deserialised program is never lowered in this process, and calling
    its LAPACK custom calls with the table unloaded crashes the process (jaxlib
    0.9.2, any of QR, SVD, eigh, Cholesky, LU). `jaxlib.lapack.prepare_lapack_call`
    loads it (what the lowering calls); where a jaxlib lacks it, lowering one small
    QR does (0.4 s of a warm command).
    """
    try:
        from jaxlib import lapack  # noqa: PLC0415 - jaxlib's CPU kernels, once

        lapack.prepare_lapack_call("geqrf", np.float64)
    except (ImportError, AttributeError, TypeError):
        jax.jit(jnp.linalg.qr).lower(jnp.zeros((2, 2)))


def _key(name: str, static: Any, leaves: list[Any], in_tree: Any) -> str | None:
    text = repr((name, static, in_tree, [(x.shape, str(x.dtype)) for x in leaves]))
    if " at 0x" in text:  # a function or object known only by its address
        return None
    if not _DIGEST:
        _DIGEST.append(_source_digest())
    return hashlib.sha256((_DIGEST[0] + text).encode()).hexdigest()[:32]


def cached_call(directory: Path | None, fn: Callable, *args: Any) -> Any:
    """`fn(*args)`, through a serialised export of its traced program kept in
    `directory/programs` (None: just call it). `fn` must be a pure function of its
    arguments' arrays; its non-array parts are static and form part of the key."""
    if directory is None:
        return fn(*args)
    try:
        dynamic, static = eqx.partition(args, eqx.is_array)
        leaves, in_tree = jax.tree.flatten(dynamic)
        key = _key(getattr(fn, "__qualname__", repr(fn)), static, leaves, in_tree)
    except Exception:  # noqa: BLE001 - the cache must never be the reason a run fails
        return fn(*args)
    if key is None:
        return fn(*args)
    path = directory / "programs" / f"{key}.pkl"
    try:
        _prepare_native_kernels()
        with path.open("rb") as file:
            blob, template = pickle.load(file)
        exported = jax.export.deserialize(blob)
        return _rebuild(template, exported.call(*leaves))
    except Exception:  # noqa: BLE001 - absent or unusable: trace it again
        pass
    holder: list[Any] = []

    def flat(*xs):
        result = fn(*eqx.combine(jax.tree.unflatten(in_tree, list(xs)), static))
        out_dynamic, out_static = eqx.partition(result, eqx.is_array)
        holder.append((out_dynamic, out_static))
        return jax.tree.leaves(out_dynamic)

    try:
        specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves]
        exported = jax.export.export(jax.jit(flat))(*specs)
        out_dynamic, out_static = holder[-1]
        # The output's structure travels as a small instance of it (zeros in place
        # of the arrays): pickled tree definitions of Equinox modules do not survive
        # a round trip, the modules themselves do.
        zeros = jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), out_dynamic)
        blob = pickle.dumps((exported.serialize(), eqx.combine(zeros, out_static)))
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, force=True) as file:
            file.write(blob)
        return _rebuild(eqx.combine(zeros, out_static), exported.call(*leaves))
    except Exception:  # noqa: BLE001 - not exportable (or not writable): plain call
        return fn(*args)


def _rebuild(template: Any, leaves: list[Any]) -> Any:
    """`template` with its arrays replaced by `leaves` (in flattening order)."""
    dynamic, static = eqx.partition(template, eqx.is_array)
    return eqx.combine(jax.tree.unflatten(jax.tree.structure(dynamic), leaves), static)
