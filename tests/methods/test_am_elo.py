"""am-Elo: annotator abilities, the paper's normalisation, the stable arena."""

import numpy as np
import pytest

from pipeline.backtest.stability import perturbation_experiment, simulate_votes
from pipeline.methods.am_elo import am_elo as am_elo_method
from pipeline.methods.am_elo import fit_am_elo
from pipeline.methods.convergence import NoEstimate
from tests.conftest import SAMPLES


def am_elo(counts, **options):
    """The method on counts whose ids are in name order."""
    return am_elo_method(counts, np.arange(len(counts.agents)), **options)


def test_abilities_sum_to_one_and_a_contrarian_is_flagged():
    counts, _ = simulate_votes(6, 10, 150, seed=0)
    # annotator 3 votes against every result: the Flip perturbation, by hand
    flip = counts.judge == 3
    x_wins, y_wins = counts.x_wins.copy(), counts.y_wins.copy()
    x_wins[flip], y_wins[flip] = counts.y_wins[flip], counts.x_wins[flip]
    noisy = counts.replace(x_wins, y_wins, counts.ties)
    first = fit_am_elo(noisy)
    assert first.ability.sum() == pytest.approx(1.0)
    assert np.flatnonzero(first.ability <= 0).tolist() == [3]
    ratings = am_elo(noisy)
    table = ratings.tables["annotators"].to_pydict()
    assert table["flagged"] == [k == 3 for k in range(10)]
    assert table["ability_refit"][3] is None and ratings.info["annotators_used"] == 9
    assert ratings.info["annotators_flagged"] == 1 and ratings.info["annotators_flagged_at"] == "ability <= 0.0"
    refit = fit_am_elo(noisy.select(np.array([0, 1, 2, 4, 5, 6, 7, 8, 9])))
    assert ratings.score - ratings.score.mean() == pytest.approx(400 / np.log(10) * refit.rating, abs=1e-6)


def test_twenty_percent_flipping_annotators_are_found_and_do_not_move_the_ranking():
    counts, _ = simulate_votes(20, 50, 200, seed=1)
    result = perturbation_experiment(counts, strategy="flip", ratio=0.2, seed=2)
    assert result["f1"][0.0] >= 0.9
    assert result["consistency_am_elo"] > result["consistency_m_elo"]


def test_thin_annotators_are_left_out():
    counts, _ = simulate_votes(5, 4, 30, seed=3)
    thin = counts.select(np.array([0, 1, 2]))  # keep three annotators of 30 votes
    with pytest.raises(NoEstimate):
        ratings = am_elo(thin, min_records=31)
    ratings = am_elo(thin, min_records=30)
    assert ratings.info["annotators_too_few_records"] == 0


def test_unbounded_abilities_are_reported_without_a_prior():
    counts, _ = simulate_votes(4, 3, 4, tie_rate=0.0, seed=5)  # 4 votes each: someone agrees with everything
    with pytest.raises(NoEstimate, match="without bound"):
        am_elo(counts, prior=0.1, ability_prior=0.0)
    assert np.all(np.isfinite(am_elo(counts, prior=0.1).score))


def test_runs_on_the_llmfao_crowd_and_publishes_the_annotator_table(tmp_path):
    import json

    import pyarrow.parquet as pq

    from pipeline.board import Board, run_board
    from pipeline.store import Store

    board = Board("crowd", "battles", (str(SAMPLES / "llmfao" / "crowd_battles.csv"),), ("am-elo",))
    out, store = tmp_path / "out", Store(tmp_path / "store")
    ratings = run_board(board, store, out).ratings[0]
    assert len(ratings.agents) == 59 and np.all(np.isfinite(ratings.score))
    table = pq.read_table(out / "am-elo.annotators.parquet")
    assert table.column_names == ["judge", "judge_id", "records", "ability", "flagged", "ability_refit"]
    judges = store.dictionary("judges").names
    assert table.num_rows == 124 and sorted(table.column("judge").to_pylist()) == sorted(judges)
    # the name column is the judges dictionary's entry for the store id beside it
    assert all(judges[i] == name for i, name in zip(table.column("judge_id").to_pylist(), table.column("judge").to_pylist()))
    assert sum(a for a in table.column("ability").to_pylist() if a is not None) == pytest.approx(1.0)
    assert sum(table.column("flagged").to_pylist()) == ratings.info["annotators_flagged"]
    assert (out / "am-elo.annotators.md").read_text().startswith("# crowd: am-elo.annotators\n")
    assert "ability_refit" not in (out / "leaderboard.md").read_text()  # the table is not in the leaderboard's info
    assert "am-elo.annotators.parquet" in json.loads((out / "run.json").read_text())["outputs"]


def test_running_out_of_rounds_is_one_line_with_the_numbers_and_the_agents():
    from pipeline.methods.convergence import ConvergenceError

    counts, _ = simulate_votes(6, 5, 60, seed=7)
    with pytest.raises(ConvergenceError) as failed:
        am_elo(counts, max_iter=1)
    message = failed.value.named([f"model-{i}" for i in range(6)])
    assert message.startswith("am-elo did not converge in 1 rounds (largest change ") and "tol=1e-08" in message
    assert "the largest abilities M*theta: " in message and "ratings still moving most: model-" in message
    assert "\n" not in message
    converged = am_elo(counts)
    assert converged.info["stopped"] == "converged"


def test_annotators_are_fitted_in_name_order():
    """Renumbering the annotators (other judge ids, same names) changes no bit."""
    counts, _ = simulate_votes(6, 5, 60, seed=7)
    order = np.array([3, 0, 4, 1, 2])
    renumbered = counts.select(order)  # annotator k of `renumbered` is annotator order[k], with its name
    assert am_elo(renumbered).score.tobytes() == am_elo(counts).score.tobytes()
