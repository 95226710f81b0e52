"""Every voting method on the pentathlon example of [VasE] appendix C (agents A, B, C = ids 0, 1, 2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipeline import methods
from pipeline.methods.voting.kemeny import kemeny_value
from pipeline.methods.voting.schulze import strongest_paths

# (spec, scores of A, B, C, ranks of A, B, C), from appendix C.2.1-C.2.9.
EXPECTED = [
    ("approval:k=2", [4, 2, 4], [1, 3, 1]),
    # The paper's text reads "A 2, B 2, B 1" (a typo): A and C top two ballots each, B one.
    ("plurality", [2, 1, 2], [1, 3, 1]),
    ("borda", [6, 3, 6], [1, 3, 1]),
    ("stv", [3.2, 2.1, 6.3], [2, 3, 1]),
    ("copeland", [1, 0, 2], [2, 3, 1]),
    ("kemeny", [4, 0, 6], [2, 3, 1]),
    ("schulze", [4, 0, 7], [2, 3, 1]),
    ("ranked-pairs", [3, 0, 5], [2, 3, 1]),
    ("maximal-lotteries", [0, 0, 1], [2, 2, 1]),
    ("iterative-maximal-lotteries", [2, 1, 3], [2, 3, 1]),
]


def test_counts(pentathlon):
    stats, names = pentathlon
    assert names == ["A", "B", "C"]
    np.testing.assert_array_equal(stats.pairwise.wins, [[0, 4, 2], [1, 0, 2], [3, 3, 0]])
    np.testing.assert_array_equal(stats.pairwise.margins, [[0, 3, -1], [-3, 0, -1], [1, 1, 0]])


def test_kemeny_values_of_all_six_orders(pentathlon):
    stats, _ = pentathlon
    table = {"ABC": 8, "ACB": 9, "BAC": 5, "BCA": 6, "CAB": 10, "CBA": 7}
    for order in itertools.permutations(range(3)):
        assert kemeny_value(stats.pairwise.wins, np.array(order)) == table["".join("ABC"[i] for i in order)]


def test_schulze_path_matrix(pentathlon):
    stats, _ = pentathlon
    np.testing.assert_array_equal(strongest_paths(stats.pairwise.wins), [[0, 4, 0], [0, 0, 0], [3, 3, 0]])


@pytest.mark.parametrize(("spec", "score", "rank"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_method(pentathlon, spec, score, rank):
    stats, _ = pentathlon
    result = methods.run(spec, stats)
    np.testing.assert_allclose(result.score, score, atol=1e-12)
    np.testing.assert_array_equal(result.rank, rank)


def test_diagnostics(pentathlon):
    stats, _ = pentathlon
    for spec in ("kemeny", "schulze", "ranked-pairs", "maximal-lotteries", "iterative-maximal-lotteries"):
        info = methods.run(spec, stats).info
        assert info["condorcet_winner_agent"] == 2 and info["weak_condorcet_winner_agents"] == [2], spec
    assert methods.run("kemeny", stats).info["kemeny_value"] == 10
    assert methods.run("stv", stats).info["unique_votes"] == 4  # C>A>B appears twice
    iml = methods.run("iterative-maximal-lotteries", stats).info
    assert iml["levels"] == 3 and iml["level_agents"] == [[2], [0], [1]]
