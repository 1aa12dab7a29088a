import gc
import os
from pathlib import Path

import jax

# The command line (`redundax.cli.main`, called here in-process and as `python -m
# redundax.cli`) turns on JAX's persistent compilation cache in ~/.cache/redundax/jax
# unless told otherwise: keep the tests' programs inside the repository, in the
# folder `tests/run_files.py` gives every process (`make clean` deletes it).
os.environ.setdefault(
    "REDUNDAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_jax_cache")
)

# The suite checks float64 numbers; float32 (`JAX_ENABLE_X64=0`, redundax._precision)
# is tested by tests/test_precision.py in a process of its own. A variable set in the
# shell would otherwise give this process float64 arrays with float32 tolerances.
os.environ.pop("JAX_ENABLE_X64", None)
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

# Python's cyclic garbage collector, at its default thresholds (700, 10, 10),
# collects often while JAX traces, and its older generations walk every live
# object: the jaxprs, lowered modules and traced pytrees that JAX keeps
# for every program compiled earlier in the process. Tracing a large program
# late in a test file then spends most of its time in the collector. Measured on
# the 2-core machine, tests/test_dynamics.py at -O0 with no compilation cache:
# 255 s -> 142 s, Kvaerno5's test 80 s -> 13 s (13 s when run alone either way).
# Collections are rarer, not off: memory held by cycles is still reclaimed.
gc.set_threshold(100_000, 50, 1000)
