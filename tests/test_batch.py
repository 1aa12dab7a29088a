"""Batched analysis: rx.analysis.analyze_many equals jax.vmap equals a Python loop,
including configurations whose rank differs (a singular one in the batch)."""

import jax
import jax.numpy as jnp
import numpy as np

import redundax as rx
from helpers import TOL_ZERO_B
from redundax import models


def test_analyze_many_equals_vmap_and_loop_with_mixed_ranks():
    # Parallelogram: regular at crank angles 0.3 and 1.2, singular (flat) at 0.
    states = [models.parallelogram(2, crank_angle=a).initial_state() for a in (0.3, 0.0, 1.2)]
    model = models.parallelogram(2, crank_angle=0.3).build()
    qs = jnp.stack([s.q for s in states])
    many = rx.analysis.analyze_many(model, qs, chunk_size=2)
    batched = jax.vmap(lambda q: rx.analyze_solvability(model, q))(qs)
    assert np.asarray(many.rank).tolist() == [8, 7, 8]
    for k, q in enumerate(qs):
        one = rx.analyze_solvability(model, q)
        assert int(one.rank) == int(many.rank[k]) == int(batched.rank[k])
        np.testing.assert_array_equal(one.unique, many.unique[k])
        np.testing.assert_allclose(one.b_norm, many.b_norm[k], atol=TOL_ZERO_B)
        np.testing.assert_allclose(one.b_norm, batched.b_norm[k], atol=TOL_ZERO_B)
    # At the singular configuration the cranks' reactions stop being unique.
    assert bool(np.all(many.unique[0])) and not bool(np.all(many.unique[1]))
