"""The matrix on bounded slices (issue 33): every method on a real data set through `vase rate`, none failed, none past
the budget or past 4x its own cost model's estimate."""

import pytest

from benchmarks.bench_matrix import matrix
from benchmarks.datasets import ROOT


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "arena_hard_auto").exists(), reason="the shared data sets are absent")
def test_every_method_rates_or_is_refused_on_a_slice_of_arena_hard():
    cells = matrix(limit=20, rounds=0, timeout=600, only="arena_hard")
    assert {c.kind for c in cells} == {"battles", "scores"}
    bad = [f"{c.kind} {c.spec}: {c.outcome} ({c.wall_s} s, estimate {c.estimate_s} s) {c.line}"
           for c in cells if c.outcome in ("failed", "over budget")]
    assert not bad, "\n".join(bad)
