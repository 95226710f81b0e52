"""The matrix on bounded slices (issue 33): every method on a real data set through `vase rate`, none failed, none past
the budget or past 4x its own cost model's estimate (its CPU time against the estimate: `bench_matrix.judge`)."""

import pytest

from benchmarks.bench_matrix import Cell, matrix, merged
from benchmarks.datasets import ROOT
from pipeline.methods.registry import Size, estimate

pytestmark = pytest.mark.skipif(not (ROOT / "arena_hard_auto").exists(), reason="the shared data sets are absent")


def bad_cells(cells) -> list[str]:
    return [f"{c.dataset} {c.kind} {c.spec}: {c.outcome} ({c.wall_s} s, CPU {c.cpu_s} s, estimate {c.estimate_s} s) {c.line}"
            for c in cells if c.outcome in ("failed", "over budget")]


@pytest.mark.slow
def test_every_method_rates_or_is_refused_on_a_slice_of_arena_hard():
    cells = matrix(limit=20, rounds=0, timeout=600, only="arena_hard")
    assert {c.kind for c in cells} == {"battles", "scores"}
    assert not bad_cells(cells), "\n".join(bad_cells(cells))


@pytest.mark.slow
def test_deviation_runs_within_4x_of_its_estimate_where_it_takes_time():
    # 107 WTA players, an LP over a 214 x 11,449 constraint matrix: about half a CPU second, well above the
    # matrix's floor, so a cost model that under-estimates it 4x is caught here.
    [cell] = matrix(limit=100, rounds=0, timeout=600, only="wta_matches", methods=frozenset({"deviation"}))
    assert cell.agents == 107 and cell.cpu_s > 0.2
    assert not bad_cells([cell]), bad_cells([cell])


def test_an_update_puts_each_cell_run_again_in_place_of_its_own_and_judges_the_others_again():
    def cell(dataset, spec, outcome, cpu=1.0):
        return Cell(dataset, "battles", spec, outcome, cpu, cpu, 0.0, 3, 3, 0, 0, 0, 1.0, 100.0, "")

    # d's Schulze cell was judged against an older model (estimate 0: over budget at 1 CPU s); Schulze's model now
    # prices numba's first use, so the same measurement is within 4x of it
    earlier = [cell("a", "borda", "rated"), cell("b", "schulze", "over budget"), cell("b", "borda", "rated"),
               cell("d", "schulze", "over budget"), cell("e", "schulze", "rated", cpu=130.0)]
    fresh = [cell("b", "schulze", "rated"), cell("c", "borda", "rated")]
    assert [(c.dataset, c.spec, c.outcome) for c in merged(earlier, fresh)] == [
        ("a", "borda", "rated"), ("b", "schulze", "rated"), ("b", "borda", "rated"), ("d", "schulze", "rated"),
        ("e", "schulze", "over budget"), ("c", "borda", "rated")]
    assert merged(earlier, fresh)[3].estimate_s == round(estimate("schulze", Size(3, 3, kind="battles")).seconds, 3)  # as judged
