"""`vase methods` and `vase kinds` list a stored catalogue of the registry (pipeline/catalogue.py):
it must be the live registry's, and listing it must not import the numerical stack."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline import catalogue


def test_the_catalogue_is_the_live_registrys():
    # In a process of its own: a test that registers an example method must not make it differ.
    live = subprocess.run([sys.executable, "-m", "pipeline.catalogue", "--print"], capture_output=True, text=True,
                          check=True, timeout=300).stdout
    assert live == catalogue.CATALOGUE.read_text(encoding="utf-8"), \
        "pipeline/catalogue.json differs from the registry: run `python -m pipeline.catalogue` to write it again"


@pytest.mark.parametrize("command", ["methods", "kinds", "--help"])
def test_listing_imports_none_of_the_numerical_stack(command):
    # `vase kinds` took 6-12 s and `vase methods` 5-11 s: listing imported every method module.
    # `vase --help` is paid by every user who looks: it must stay as light.
    probe = (f"import sys\nsys.argv = ['vase', {command!r}]\nfrom flows.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120)
    heavy = {"numpy", "scipy", "polars", "pyarrow", "dask", "distributed", "prefect", "numba", "matplotlib",
             "pipeline.methods", "pipeline.board", "pipeline.logs"}
    assert set(done.stderr.split()) & heavy == set()
    assert {"methods": "affinity-cce", "kinds": "battles", "--help": "Usage"}[command] in done.stdout


def test_rating_imports_heavy_modules_only_when_it_needs_them():
    # Fixed costs of every `vase rate`: importing the board imported scipy.stats (~0.5 s, more
    # under load) for the Poisson table of bootstraps and the Kendall tau of method agreement, and
    # numba (~0.5 s) through the package loops that imported its compiled modules eagerly, and
    # matplotlib (~1 s) for the report's figures, which `vase ingest` never draws (scipy.optimize: one
    # reference path of maximal lotteries).
    on_first_use = ["scipy.stats", "scipy.optimize", "numba", "distributed", "prefect", "matplotlib"]
    probe = f"import sys, pipeline.board\nprint(' '.join(m for m in {on_first_use!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == []


def test_a_small_rate_imports_neither_numba_nor_distributed(tmp_path):
    # A 10-row `vase rate` paid ~1 s for numba (sorting its ids) and ~1 s for distributed (dask
    # resolving the scheduler named "threads"), though it runs neither a compiled pass nor a cluster.
    log = tmp_path / "ten.csv"
    log.write_text("model_a,model_b,winner\n" + "".join(f"m{i % 4},m{(i + 1) % 4},model_a\n" for i in range(10)))
    argv = ["vase", "rate", str(log), "--kind", "battles", "-m", "borda", "--out", str(tmp_path / "out")]
    probe = (f"import sys\nsys.argv = {argv!r}\nfrom flows.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass\n"
             "print('imported:', *(m for m in ('numba', 'distributed', 'prefect') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=300)
    assert (tmp_path / "out" / "ratings.parquet").exists()
    assert done.stderr.splitlines()[-1] == "imported:"
