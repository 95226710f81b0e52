# The two set-up commands of the README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

# Prefect runs offline in local mode, with its state kept inside the checkout.
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120

.PHONY: demo test bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/vase demo

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --durations=15

bench: $(VENV)/.installed
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .prefect vase-demo
