# The two set-up commands of the README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

# Prefect runs offline in local mode, with its state kept inside the checkout.
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120

.PHONY: demo test bench matrix server deploy worker clean

# The nightly deployment on a local Prefect server (README, "Deployment").
PREFECT_PORT ?= 4200
LOCAL_API := http://127.0.0.1:$(PREFECT_PORT)/api

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/vase demo

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --durations=15

server: $(VENV)/.installed
	$(VENV)/bin/prefect server start --host 127.0.0.1 --port $(PREFECT_PORT)

deploy: $(VENV)/.installed
	PREFECT_API_URL=$(LOCAL_API) $(VENV)/bin/prefect work-pool create vase-process --type process --overwrite
	PREFECT_API_URL=$(LOCAL_API) VASE_HOME=$(CURDIR) $(VENV)/bin/prefect --no-prompt deploy --all --prefect-file infra/prefect.yaml

worker: $(VENV)/.installed
	PREFECT_API_URL=$(LOCAL_API) VASE_HOME=$(CURDIR) $(VENV)/bin/prefect worker start --pool vase-process --type process

bench: $(VENV)/.installed
	$(PY) -m pip install -q -c constraints.txt -e ".[dev,bench]"
	for b in benchmarks/bench_*.py; do [ $$b = benchmarks/bench_matrix.py ] || $(PY) -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) .prefect vase-demo

# Every method on every data set of ../shared/datasets through `vase rate` (issue 33): docs/matrix.md and
# docs/matrix.parquet. LIMIT=N rates the first N units of each data set (a full run took hours at load 17).
LIMIT ?=
matrix: $(VENV)/.installed
	$(PY) -m benchmarks.bench_matrix $(if $(LIMIT),--limit $(LIMIT))
