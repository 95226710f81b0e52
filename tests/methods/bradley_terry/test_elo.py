"""Online Elo: a hand-computed sequence, the order of a log without timestamps (ingest order),
games updated at once, seeded shuffles."""

import json

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.methods import run
from pipeline.methods.bradley_terry.elo import run_elo
from tests.conftest import SAMPLES

HAND = [
    {"battle_id": "1", "model_a": "A", "model_b": "B", "winner": "model_a", "timestamp": "2024-01-01T00:00:00Z"},
    {"battle_id": "2", "model_a": "B", "model_b": "C", "winner": "model_a", "timestamp": "2024-01-02T00:00:00Z"},
    {"battle_id": "3", "model_a": "C", "model_b": "A", "winner": "tie", "timestamp": "2024-01-03T00:00:00Z"},
]


def test_online_elo_matches_a_hand_computed_sequence(log_stats):
    stats, _ = log_stats(HAND[::-1], {"sequence"})  # rows out of order: the timestamps decide
    ratings = run("elo:k=32", stats)
    # 1) A=B=1000, E_A = 1/2: A = 1016, B = 984
    # 2) B (984) beats C (1000): E_B = 1/(1+10^(16/400)) = 0.477001, B += 32*(1-E_B) = 16.736, C -= 16.736
    # 3) C (983.264) ties A (1016): E_A = 1/(1+10^(-32.736/400)) = 0.546940, A += 32*(0.5-E_A) = -1.503
    e_b = 1 / (1 + 10 ** (16 / 400))
    b, c = 984 + 32 * (1 - e_b), 1000 - 32 * (1 - e_b)
    e_a = 1 / (1 + 10 ** ((c - 1016) / 400))
    a, c = 1016 + 32 * (0.5 - e_a), c - 32 * (0.5 - e_a)
    assert ratings.score == pytest.approx([a, b, c], abs=1e-9)
    assert ratings.score == pytest.approx([1014.497, 1000.736, 984.767], abs=1e-3)
    assert ratings.rank.tolist() == [1, 2, 3]
    assert ratings.info["logistic_scale"] == 400.0


def plain_elo(rows: list[dict], k: float = 4.0, scale: float = 400.0, initial: float = 1000.0) -> dict[str, float]:
    """Online Elo written out once more, over battles (dicts) in the order given, by model name."""
    ratings: dict[str, float] = {}
    for row in rows:
        a, b = row["model_a"], row["model_b"]
        ra, rb = ratings.setdefault(a, initial), ratings.setdefault(b, initial)
        step = k * ({"model_a": 1.0, "model_b": 0.0}.get(row["winner"], 0.5) - 1.0 / (1.0 + 10.0 ** ((rb - ra) / scale)))
        ratings[a], ratings[b] = ra + step, rb - step
    return ratings


def rated_by_vase(tmp_path, *sources) -> dict[str, float]:
    out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
    result = CliRunner().invoke(app, ["rate", *map(str, sources), "--kind", "battles", "--method", "elo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return {r["agent"]: r["score"] for r in json.loads((out / "ratings.json").read_text())}


def test_a_log_without_timestamps_is_rated_in_ingest_order_file_then_line(tmp_path):
    """The LLMFAO sample (ids like "0:58", "0:83", "1:22", not in file order) and a second file
    without ids (made-up ids "<file>:<line>": line 10 sorts before line 2 as text), through
    `vase rate`: online Elo equals a plain loop over the first file's rows, then the second's."""
    sample = SAMPLES / "llmfao" / "crowd_battles.csv"
    rows = pl.read_csv(sample).to_dicts()
    assert [r["battle_id"] for r in rows] != sorted(r["battle_id"] for r in rows)
    models = sorted({r["model_a"] for r in rows})
    rng = np.random.default_rng(12)
    pairs = [rng.choice(len(models), 2, replace=False) for _ in range(300)]
    more = [{"model_a": models[i], "model_b": models[j], "winner": str(rng.choice(["model_a", "model_b", "tie"]))}
            for i, j in pairs]
    second = tmp_path / "more.csv"
    pl.DataFrame(more).write_csv(second)

    got = rated_by_vase(tmp_path, sample, second)
    expected = plain_elo(rows + more)
    assert got.keys() == expected.keys()
    assert all(abs(got[name] - expected[name]) <= 1e-9 for name in expected)
    by_id = plain_elo(sorted(rows, key=lambda r: r["battle_id"]) + [more[int(i)] for i in sorted(map(str, range(300)))])
    assert max(abs(by_id[name] - expected[name]) for name in expected) > 10  # the order matters on this log

    got = rated_by_vase(tmp_path, second, sample)  # the other file first: its rows first
    expected = plain_elo(more + rows)
    assert all(abs(got[name] - expected[name]) <= 1e-9 for name in expected)


def test_given_ids_that_do_not_sort_in_file_order_keep_the_file_order(log_stats):
    rng = np.random.default_rng(3)
    models = ["A", "B", "C", "D"]
    rows = []
    for i in range(60):
        a, b = rng.choice(4, 2, replace=False)
        rows.append({"battle_id": f"{'zyxwcba'[i % 7]}{(i * 37) % 60}", "model_a": models[a], "model_b": models[b],
                     "winner": str(rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"]))})
    for files, target_rows in ((1, 2_000_000), (3, 1)):  # one file, or three files in many units of work
        stats, store = log_stats(rows, {"sequence"}, files=files, target_rows=target_rows)
        ratings = run("elo:k=32", stats)
        names = store.dictionary("agents").names
        expected = plain_elo([row for part in range(files) for row in rows[part::files]], k=32.0)
        assert ratings.score == pytest.approx([expected[names[a]] for a in ratings.agents], abs=1e-9)


def test_a_log_that_grew_continues_in_ingest_order(tmp_path):
    """A grown CSV is read from where it stopped: its new rows come after the files ingested in between."""
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    rng = np.random.default_rng(4)
    models = ["A", "B", "C", "D", "E"]
    # with ids: identical records without them would be one battle (`pipeline.logs.identity.ContentIds`)
    rows = [{"battle_id": f"b{j}", "model_a": models[i], "model_b": models[(i + 1 + int(rng.integers(0, 4))) % 5],
             "winner": str(rng.choice(["model_a", "model_b", "tie"]))} for j, i in enumerate(rng.integers(0, 5, 240))]
    log, other = tmp_path / "log.csv", tmp_path / "other.csv"
    pl.DataFrame(rows[:100]).write_csv(log)
    pl.DataFrame(rows[100:140]).write_csv(other)
    store = Store(tmp_path / "store")
    store.ingest([log, other], "battles")
    with log.open("a") as handle:
        pl.DataFrame(rows[140:]).write_csv(handle, include_header=False)
    [grown] = store.ingest([log], "battles")
    assert grown.continues is not None and grown.rows_in == 100
    ratings = run("elo", reduce_store(store, "battles", {"sequence"}))
    names = store.dictionary("agents").names
    expected = plain_elo(rows)
    assert ratings.score == pytest.approx([expected[names[a]] for a in ratings.agents], abs=1e-9)


def test_a_game_updates_its_pairs_from_the_ratings_before_the_game():
    # X beats Y and Z in one 3-player game, Y beats Z: every pair starts from 1000 (E = 1/2),
    # so X gains 2 * k/2, Y gains k/2 - k/2 = 0, Z loses k; with sequential updates Y would move
    a, b, s = np.array([0, 0, 1]), np.array([1, 2, 2]), np.ones(3)
    together = run_elo(3, a, b, s, np.full(3, 32.0), np.zeros(3, np.int64), 400.0, 1000.0)
    assert together.tolist() == [1032.0, 1000.0, 968.0]
    one_by_one = run_elo(3, a, b, s, np.full(3, 32.0), np.arange(3), 400.0, 1000.0)
    assert one_by_one[1] != 1000.0


def test_games_can_weight_each_players_game_like_one_battle(log_stats):
    rows = [{"game_id": "g", "player": p, "place": i + 1} for i, p in enumerate("XYZ")]
    stats, _ = log_stats(rows, {"sequence"}, kind="games")
    # with games=player each pair has weight 1/2: X gains 2 * (32/2) / 2 = 16
    assert run("elo:k=32,games=player", stats).score.tolist() == [1016.0, 1000.0, 984.0]


def test_shuffles_are_seeded_and_average_the_orders(log_stats):
    rows = [dict(row, battle_id=f"{i}") for i, row in enumerate(HAND * 5)]
    stats, _ = log_stats(rows, {"sequence"})
    first, second = run("elo:shuffles=30,seed=3", stats), run("elo:shuffles=30,seed=3", stats)
    assert first.score.tobytes() == second.score.tobytes()
    assert first.score.mean() == pytest.approx(1000.0)  # updates are zero-sum
    assert np.all(first.extras["sd"] > 0)  # the order matters for online Elo
    assert run("elo:shuffles=30,seed=4", stats).score.tobytes() != first.score.tobytes()


def test_shuffles_do_not_depend_on_the_workers(log_stats, dask_client):
    rows = [dict(row, battle_id=f"{i}") for i, row in enumerate(HAND * 5)]
    stats, _ = log_stats(rows, {"sequence"})
    on_cluster = run("elo:shuffles=25,seed=1", stats)
    import dask

    with dask.config.set(scheduler="sync"):
        local = run("elo:shuffles=25,seed=1", stats)
    assert on_cluster.score.tobytes() == local.score.tobytes()


def test_huge_weights_and_rating_gaps_do_not_overflow(log_stats):
    """Online Elo is not scale-free (a step is k times the weight) but must never overflow."""
    from pipeline.methods.bradley_terry.elo_update import expected

    assert expected(1e6) == 1.0 and expected(-1e6) == 0.0 and expected(0.0) == 0.5
    assert expected(-700.0) > 0 and expected(30.0) == pytest.approx(1 / (1 + np.exp(-30.0)), rel=1e-15)
    rows = [dict(row, battle_id=f"{i}", weight=1e11) for i, row in enumerate(HAND * 4)]
    stats, _ = log_stats(rows, {"sequence"})
    for spec in ("elo", "elo:shuffles=5"):
        ratings = run(spec, stats)
        assert np.all(np.isfinite(ratings.score)) and np.abs(ratings.score).max() > 1e11
        assert np.isfinite(ratings.win_probability(np.array([0, 1]), np.array([1, 0]))).all()


def test_shuffles_do_not_depend_on_the_logs_order_or_ids(log_stats):
    """The shuffled orders permute the battles in a canonical order of their content."""
    rows = [dict(row, battle_id=f"{i}") for i, row in enumerate(HAND * 5)]
    first, _ = log_stats(rows, {"sequence"})
    renumbered, _ = log_stats([dict(r, timestamp=None, battle_id=f"x{99 - i}") for i, r in enumerate(rows)][::-1], {"sequence"})
    a, b = run("elo:shuffles=20,seed=7", first), run("elo:shuffles=20,seed=7", renumbered)
    assert a.score.tobytes() == b.score.tobytes() and a.extras["sd"].tobytes() == b.extras["sd"].tobytes()


def python_update(n, a, b, score, step, group, scale, initial) -> np.ndarray:
    """The update written in plain Python, a group's deltas from the ratings before it."""
    from math import exp, log

    def logistic(z):
        return 1.0 / (1.0 + exp(-z)) if z >= 0 else exp(z) / (1.0 + exp(z))

    r, c = [float(initial)] * n, log(10.0) / scale
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]).tolist() + [len(group)]
    for lo, hi in zip(starts[:-1], starts[1:]):
        deltas = [(a[i], b[i], step[i] * (score[i] - logistic((r[a[i]] - r[b[i]]) * c))) for i in range(lo, hi)]
        for x, y, d in deltas:
            r[x] += d
            r[y] -= d
    return np.array(r)


@pytest.mark.parametrize("game_size", [2, 4, 40])
def test_the_compiled_loop_gives_the_bits_of_the_update_in_python(game_size):
    rng = np.random.default_rng(7)
    groups = 2_000 if game_size < 40 else 20
    pairs = game_size * (game_size - 1) // 2
    a = rng.integers(0, 30, groups * pairs)
    b = (a + rng.integers(1, 30, len(a))) % 30
    score, step = rng.choice([0.0, 0.5, 1.0], len(a)), rng.uniform(1, 40, len(a)) * 10.0 ** rng.integers(-3, 12, len(a))
    group = np.repeat(np.arange(groups), pairs)
    expected = python_update(30, a.tolist(), b.tolist(), score.tolist(), step.tolist(), group, 400.0, 1000.0)
    assert run_elo(30, a, b, score, step, group, 400.0, 1000.0).tobytes() == expected.tobytes()
    assert run_elo(30, a.astype(np.int32), b.astype(np.int32), score, step, group, 400.0, 1000.0).tobytes() == expected.tobytes()
