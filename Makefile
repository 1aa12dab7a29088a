# `make demo` and `make test` work on a fresh machine with Python 3.11 and make.
# Another interpreter: `make test PYTHON=python3.13 VENV=.venv-3.13` (a virtual
# environment of its own; the default one is made by the first PYTHON used).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-smoke setup docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --quiet -e ".[test,docs]"
	touch $(STAMP)

setup: $(STAMP)

DEMO_RUN := runs/demo/mobile_robot.npz

demo: $(STAMP)
	$(BIN)/redundax analyze configs/mobile_robot.toml
	@mkdir -p runs/demo
	@if [ -e $(DEMO_RUN) ]; then echo "$(DEMO_RUN) exists (kept)"; \
	else $(BIN)/redundax simulate configs/mobile_robot.toml --out $(DEMO_RUN); fi
	@echo "next: $(BIN)/redundax plot $(DEMO_RUN)"

test: $(STAMP)
	$(BIN)/python tests/run_files.py

# What CI runs on the newest Python beside the whole suite (tests/run_files.py SMOKE).
test-smoke: $(STAMP)
	$(BIN)/python tests/run_files.py --smoke

# The documentation site, into site/ (`strict`: a broken reference fails). `make test`
# builds it too (tests/test_release.py).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict -d site

bench: $(STAMP)
	$(BIN)/python experiments/bench_solvability.py

clean:
	rm -rf $(VENV) .venv-3.* .pytest_cache .pytest_jax_cache site
