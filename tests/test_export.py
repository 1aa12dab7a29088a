"""Every public numerical program is ready for a GPU: exported with `jax.export` for
`platforms=["cuda"]` from this CPU-only machine (lowering only: no GPU needed), it
holds no CPU-only custom call (LAPACK's `lapack_*`) and no host callback (which
would also keep it out of JAX's persistent compilation cache). Checked on real
mechanisms: `simulate` of Bricard's linkage (IFToMM A04) with each path of the
null-space method, the block solver and a projection at saved times, under `vmap`
over variants and under `grad`; joint coordinates (the DCA); `analyze_many`.

A check of the outcome under `jax.jit` with `throw=True` is a host callback by
design (what `throw` asks for, after the integration loop); these programs are
exported with `throw=False`, as a program meant for another platform is.
"""

import re

import jax
import jax.numpy as jnp
import pytest
from jax import export

import redundax as rx
from redundax import models

# LAPACK on the CPU; Python callbacks (`jax.pure_callback`, `jax.debug.callback`,
# `eqx.error_if`) on any platform.
CPU_ONLY = re.compile(r"lapack|cpu_callback|python_callback|callback")


def _targets(fn, *args) -> set[str]:
    """The custom-call targets of `fn` exported for CUDA."""
    exported = export.export(jax.jit(fn), platforms=["cuda"])(*args)
    text = exported.mlir_module()
    return set(re.findall(r"custom_call @([\w.]+)", text)) | set(
        re.findall(r'call_target_name = "([^"]+)"', text)
    )


def _ready(fn, *args) -> set[str]:
    targets = _targets(fn, *args)
    assert not {t for t in targets if CPU_ONLY.search(t)}, targets
    return targets


@pytest.fixture(scope="module")
def bricard():
    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    return model, state, rx.decide(model, state.q, state.t)


@pytest.mark.parametrize(
    "method",
    [rx.methods.NullSpace(schur=True), rx.methods.NullSpace(schur=False), rx.methods.BlockSparse()],
    ids=["schur", "qr", "block"],
)
def test_simulate_exports_for_cuda(bricard, method):
    """One solver path per program: the Schur path holds a Cholesky and no LU,
    the QR path an LU and no Cholesky of C M⁻¹ Cᵀ's kind, the block solver neither
    (its blocks are solved in jax.numpy)."""
    model, state, structure = bricard

    def run(q0):
        s = rx.State(state.t, q0, state.qd)
        return rx.simulate(
            model, s, 0.5, structure=structure, method=method, saveat=rx.SaveAt(n=11), throw=False
        ).q

    targets = _ready(run, state.q)
    if isinstance(method, rx.methods.BlockSparse):
        assert not {t for t in targets if "potrf" in t or "getrf" in t}, targets


def test_simulate_under_vmap_and_grad_exports_for_cuda(bricard):
    model, state, structure = bricard

    from redundax._parameters import apply_parameters, resolve_parameters

    (target,) = resolve_parameters(model, state, ["bodies.rod1.mass"])

    def final(mass):  # rod 1's mass, as a sweep varies it
        m, s = apply_parameters(model, state, (target,), jnp.stack([mass]))
        traj = rx.simulate(m, s, 0.3, structure=structure, saveat=rx.SaveAt(n=4), throw=False)
        return traj.q[-1, 0]

    # One program for both (each alone costs as much to trace).
    _ready(jax.vmap(jax.grad(final)), jnp.linspace(0.9, 1.1, 4))


def test_a_projection_at_saved_times_exports_for_cuda(bricard):
    model, state, structure = bricard

    def run(q0):
        s = rx.State(state.t, q0, state.qd)
        return rx.simulate(
            model, s, 0.2, structure=structure, drift_control=rx.drift.Projection(), saveat=rx.SaveAt(n=3),
            throw=False,
        ).q  # fmt: skip

    _ready(run, state.q)


def test_joint_coordinates_export_for_cuda():
    mech = models.four_bar()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    js = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, js)

    def run(q0):
        s = rx.State(js.t, q0, js.qd)
        return rx.simulate(jm, s, 0.2, structure=structure, saveat=rx.SaveAt(n=3), throw=False).q

    _ready(run, js.q)


def test_analyze_many_exports_for_cuda(bricard):
    model, state, _ = bricard
    qs = jnp.stack([state.q, state.q])
    _ready(lambda qs: rx.analysis.analyze_many(model, qs, chunk_size=2).rank, qs)
