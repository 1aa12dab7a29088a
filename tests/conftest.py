import os

# Before JAX starts its CPU backend (see redundax/__init__.py, _single_threaded_eigen):
# multi-threaded Eigen kernels occasionally hang XLA:CPU's thread pool.
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    ).strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
