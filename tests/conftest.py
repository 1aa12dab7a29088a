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

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
