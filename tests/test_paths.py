"""Solver paths are chosen from static facts only (issue 35 item 2, issue 36 item 3).

Which linear algebra a run uses (the dense Schur complement, the pivoted QR, the
block solver and its pivots' metric, the projection's path) is decided from the
model's static `MassFacts` (taken when it was built), the sizes and the static
verdict a `Structure` carries (`schur_path`, judged by `decide` on the host), never
from whether the run's values are concrete. So an eager run given a structure, one
under `jax.jit`, one under `jax.vmap` and one under `jax.grad` compile and run the
same path, and a batch never pays for two paths behind a select. (A structure
decided inside a transformation has a traced verdict: its runs choose at run time,
the same numbers with both paths compiled.)

The mechanism: the four-bar modelled with 3-D joints (36 natural coordinates,
ŝ = 3.5e-3: the Schur path by the structure's verdict), short motions.
"""

import dataclasses
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import assert_similar_steps
from redundax import models
from redundax.methods import MASS_PIVOTS_MAX_CONDITION, specialise

T1 = 0.2


@pytest.fixture(scope="module")
def twin():
    mech = models.spatial_twin(models.four_bar())
    model, state = mech.build(), mech.initial_state()
    return model, state, rx.decide(model, state.q, state.t)


def _run(model, state, structure, method, q):
    given = {} if method is None else {"method": method}  # None: the default NullSpace()
    return rx.simulate(
        model, rx.State(state.t, q, state.qd), T1, structure=structure, throw=False, **given
    )


def _names_and_run(fn, *args):
    """The names of the jitted functions in the program of `jax.jit(fn)(*args)`, and
    its result: one trace serves both (tracing the program twice, once for its names
    and once to run it, cost as much again)."""
    traced = jax.jit(fn).trace(*args)
    return set(re.findall(r"name=(\w+)", str(traced.jaxpr))), traced.lower().compile()(*args)


@pytest.mark.parametrize(
    ("method", "path"),
    [(None, "schur"), (rx.methods.NullSpace(schur=False), "qr"), (rx.methods.BlockSparse(), "block")],
)
def test_one_path_per_batched_program_and_eager_jit_vmap_the_same_numerics(twin, method, path):
    """Under `vmap` the program holds the one path the static facts name (before,
    a traced structure put the Cholesky and the pivoted QR behind a select, and
    every variant paid for both at every right-hand side and projection). Eager ≡
    `jit` to the last bit (one program), and that `vmap` batch of two copies of the
    state equals them to round-off (a batched program may round differently) with
    the same steps. (One test: the batched program whose paths are read is the one
    that runs.)"""
    model, state, structure = twin
    assert structure.schur_path is True  # the verdict of ŝ = 3.5e-3, a static fact
    qs = jnp.stack([state.q, state.q])
    names, batched = _names_and_run(jax.vmap(lambda q: _run(model, state, structure, method, q)), qs)
    assert ("_cholesky" in names) == (path == "schur")
    assert ("pivoted_qr" in names) == (path == "qr")
    assert ("_block_solve" in names or "block_solve" in names) == (path == "block")
    eager = _run(model, state, structure, method, state.q)
    jitted = eqx.filter_jit(lambda q: _run(model, state, structure, method, q))(state.q)
    assert bool(eager.valid.all())
    np.testing.assert_array_equal(np.asarray(jitted.q), np.asarray(eager.q))
    assert_similar_steps(jitted.num_steps, eager.num_steps, "jit")
    for k in range(2):
        np.testing.assert_allclose(np.asarray(batched.q[k]), np.asarray(eager.q), atol=1e-10)
        assert_similar_steps(batched.num_steps[k], eager.num_steps, "vmap")


def test_a_structure_decided_inside_a_transformation_chooses_at_run_time(twin):
    """A structure decided under `vmap` has no verdict on the host (`schur_path`
    None) and the numbers of the eager one; its runs choose the path at run time
    (both compiled, one taken per variant), which is why the library decides once
    outside its transformations (sweeps, the optimiser, the command line)."""
    model, state, structure = twin
    qs = jnp.stack([state.q, state.q])
    decided = jax.vmap(lambda q: rx.decide(model, q, state.t))(qs)
    assert decided.schur_path is None and structure.schur_path is True
    np.testing.assert_array_equal(np.asarray(decided.schur), [True, True])
    np.testing.assert_array_equal(np.asarray(decided.rank), [int(structure.rank)] * 2)
    np.testing.assert_allclose(np.asarray(decided.schur_gap), float(structure.schur_gap), rtol=1e-10)
    inside = lambda q: _run(model, state, rx.decide(model, q, state.t), None, q).q  # noqa: E731
    names, runs = _names_and_run(jax.vmap(inside), qs)
    assert "pivoted_qr" in names and "_cholesky" in names
    # The verdict is the structure's either way: the run takes the path the eager
    # structure names, and gives its numbers (the eager run is the default path's
    # of the test above: one program in this process).
    eager = _run(model, state, structure, None, state.q).q
    for q in runs:
        np.testing.assert_allclose(np.asarray(q), np.asarray(eager), atol=1e-10)


def test_specialise_reads_static_facts_only(twin):
    """`specialise` fixes the same paths eagerly and under a trace of the model and
    the state (mass facts from the build, the structure's static verdict): the
    block solver's pivot metric from M's condition number, the Schur path from the
    structure."""
    model, state, structure = twin
    assert model.mass_facts.regular
    assert model.mass_facts.conditioned == bool(
        np.linalg.cond(np.asarray(rx.equations.mass_matrix(model))) <= MASS_PIVOTS_MAX_CONDITION
    )
    eager = specialise(rx.methods.NullSpace(), structure, model), specialise(
        rx.methods.BlockSparse(), structure, model
    )
    seen = []

    @eqx.filter_jit
    def traced(model):
        seen.append(
            (specialise(rx.methods.NullSpace(), structure, model), specialise(rx.methods.BlockSparse(), structure, model))
        )
        return model.gravity

    traced(model)
    assert seen == [eager]
    assert eager[0].schur is True and eager[1].pivots == "mass"


def test_lamina_mass_facts_and_refusal_under_jit():
    """A lamina (I_z = I_x + I_y) has a singular block of M in natural coordinates:
    the build's mass facts say so, and a method that needs M⁻¹ is refused by name
    also where the model and structure are traced (from the static facts; before,
    only where the structure was concrete)."""
    mech = models.bricard()
    plates = [dataclasses.replace(b, inertia=(0.25, 0.25, 0.5)) for b in mech.bodies]
    plates[2] = mech.bodies[2]  # rod3 keeps its solid-box inertia
    mech = dataclasses.replace(mech, bodies=plates)
    model, state = mech.build(), mech.initial_state()
    assert model.mass_facts.definite == (False, False, True, False, False)
    assert not model.mass_facts.regular and not model.mass_facts.conditioned
    structure = rx.decide(model, state.q, state.t)

    @eqx.filter_jit
    def accelerations(model, structure):
        return rx.equations.solve_dynamics(
            model, state.q, state.qd, structure=structure, method=rx.methods.BlockSparse()
        )[0]

    with pytest.raises(rx.ModelError) as caught:
        accelerations(model, structure)
    assert caught.value.problems == tuple(
        f"body 'rod{k}': its block of the mass matrix is singular" for k in (1, 2, 4, 5)
    )
