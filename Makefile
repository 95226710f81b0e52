# The two set-up commands of the README: `make demo` and `make test` (which also installs the system
# packages its tests start: `system-packages`).
VENV ?= .venv
PY := $(VENV)/bin/python

# Prefect runs offline in local mode, with its state kept inside the checkout.
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120

.PHONY: demo test system-packages mutation bench matrix server deploy worker clean

# The nightly deployment on a local Prefect server (docs/guide.md, "Deployment").
PREFECT_PORT ?= 4200
LOCAL_API := http://127.0.0.1:$(PREFECT_PORT)/api

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/vase demo

test: $(VENV)/.installed system-packages
	$(PY) -m pytest -q -n 2 --durations=15

# The real parts the tests start, from Debian: Chromium (the browser test, driven by Playwright, which
# needs no chromedriver) and the PostgreSQL 15 server (infra/postgres.py finds pg_ctl on PATH or in
# /usr/lib/postgresql/*/bin). apt-get runs only for what is missing (as root, else through sudo), so
# this is instant once they are there; a test never installs. `make system-packages APT_GET="echo apt-get"`
# shows what it would run.
APT_GET ?= env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600
system-packages:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing="$$missing postgresql-15"; \
	if [ -n "$$missing" ]; then \
	  as_root=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing the system packages the tests start:$$missing"; \
	  $$as_root $(APT_GET) update -qq && $$as_root $(APT_GET) install -y -qq $$missing; \
	fi

# Mutation testing (docs/testing.md): mutmut over the modules whose claims matter most, each with the
# tests that guard it, in scratch copies under .mutation/. Long (tens of minutes a module on 2 cores);
# not part of `make test` or CI. MUTATION="paths scoring" picks targets (tests/mutation.py lists them).
MUTATION ?=
mutation: $(VENV)/.installed
	$(PY) -m tests.mutation $(MUTATION)

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
	rm -rf $(VENV) .prefect vase-demo .mutation

# Every method on every data set of ../shared/datasets through `vase rate` (issue 33): docs/matrix.md and
# docs/matrix.parquet. LIMIT=N rates the first N units of each data set (a full run: 39 min on 2 cores at load 3-12).
LIMIT ?=
matrix: $(VENV)/.installed
	$(PY) -m benchmarks.bench_matrix $(if $(LIMIT),--limit $(LIMIT))
