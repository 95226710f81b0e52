"""The registry's bootstrap: spec handling, resampled statistics against a re-reduction of the redrawn
records, cells against records in distribution, coverage, workers, store numbering, Arena-hard."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from pipeline.methods import REGISTRY, Spec, needed_statistics, run
from pipeline.methods.uncertainty import records, round_seed
from pipeline.runtime import local_cluster
from pipeline.stats import reduce_store
from pipeline.stats.game_data import ScoreTable
from pipeline.stats.in_memory import profile, statistics_of_records
from pipeline.stats.partials import DENSE_MAX_AGENTS
from pipeline.store import Store
from tests.conftest import SAMPLES

ARENA = SAMPLES / "arena_bench" / "arena_hard_battles.csv"
ACCEPTANCE = ("elo", "copeland", "schulze", "borda", "maximal-lotteries", "deviation")


def battles(rng: np.random.Generator, strength: np.ndarray, n: int, names: list[str]) -> list[dict]:
    """Bradley-Terry battles between random pairs, with a few ties."""
    rows = []
    for _ in range(n):
        a, b = rng.choice(len(strength), 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        u = rng.random()
        winner = "tie" if u < 0.05 else ("model_a" if u < 0.05 + 0.95 * p else "model_b")
        rows.append({"model_a": names[a], "model_b": names[b], "winner": winner})
    return rows


def test_spec_parameters():
    assert Spec.parse("copeland:bootstrap=0") == Spec.parse("copeland")  # the registry's parameters appear only when set
    assert str(Spec.parse("copeland:bootstrap=20")) == "copeland:bootstrap=20,tie_credit=0.5"
    assert str(Spec.parse("borda:bootstrap_seed=3,bootstrap=5")) == "borda:bootstrap=5,bootstrap_seed=3,normalise=false"
    assert Spec.parse("copeland:bootstrap=20").without_bootstrap() == Spec.parse("copeland")
    with pytest.raises(ValueError, match="bootstrap_seed"):  # m-Elo keeps its own bootstrap
        Spec.parse("m-elo:bootstrap_seed=1")
    assert "histogram" in needed_statistics(["copeland:bootstrap=10"]) and "histogram" not in needed_statistics(["copeland"])


def test_a_method_without_a_resampler_is_refused_by_name():
    stats, _ = statistics_of_records([{"model_a": "a", "model_b": "b", "winner": "model_a", "judge": "j"}], "battles",
                                     ["annotators"])
    with pytest.raises(ValueError, match="am-elo: bootstrap is not available.*annotators"):
        run("am-elo:bootstrap=5", stats)


def test_what_cannot_be_resampled_is_refused_by_name(monkeypatch):
    """Ballots reduced without their histogram, and a method reading statistics of two different record sources
    (none is registered: one made for the test), are refused before anything is rated."""
    stats, _ = profile(["a>b", "b>a>c"], statistics=["positions"])
    with pytest.raises(ValueError, match="borda: bootstrap of ballots needs the histogram statistic, which was not computed"):
        run("borda:bootstrap=2", stats)
    monkeypatch.setitem(REGISTRY, "two-sources", replace(REGISTRY["copeland"], name="two-sources", needs=("pairwise", "sequence")))
    with pytest.raises(ValueError, match="two-sources: bootstrap is not available: the method reads statistics of different records"):
        records(Spec.parse("two-sources:bootstrap=2"), stats)


def _draws_of(source, seed=5):
    return np.random.default_rng(seed).poisson(source.weights).astype(np.float64)


def test_redrawn_pair_cells_are_the_reduction_of_the_redrawn_battles():
    rows = battles(np.random.default_rng(1), np.array([1.0, 0.3, 0.0, -0.8]), 200, ["w", "x", "y", "z"])
    statistics = ["pairwise", "positions", "histogram"]
    stats, names = statistics_of_records(rows, "battles", statistics)
    sources = {s: records(Spec.parse(f"{s}:bootstrap=1"), stats) for s in ("borda", "copeland", "stv")}
    source = sources["copeland"]
    assert source.weights.sum() == len(rows)
    draws = _draws_of(source)
    expected, _ = statistics_of_records(redrawn_battles(source, draws, names), "battles", statistics)
    pairs = source.rebuild(draws).pairwise
    assert np.array_equal(pairs.wins, expected.pairwise.wins) and np.array_equal(pairs.ties, expected.pairwise.ties)
    histogram = sources["stv"].rebuild(draws).histogram
    assert histogram.ballots == expected.histogram.ballots and np.array_equal(histogram.weights, expected.histogram.weights)
    positions = sources["borda"].rebuild(draws).positions
    assert positions.groups.keys() == expected.positions.groups.keys()
    assert all(np.array_equal(positions.groups[g], expected.positions.groups[g]) for g in positions.groups)


def redrawn_battles(source, draws: np.ndarray, names: list[str]) -> list[dict]:
    """The battles pair-cell draws stand for: each cell's battle (x beat y, or x tied y) repeated as often as drawn."""
    redrawn = []
    for count, x, y, cell in zip(draws, source.cells.x, source.cells.y, range(len(draws))):
        winner = "model_a" if cell < source.cells.wins else "tie"
        redrawn += [{"model_a": names[x], "model_b": names[y], "winner": winner}] * int(count)
    return redrawn


@pytest.mark.parametrize("dense", [True, False])
def test_redrawn_pair_cells_when_the_last_agent_only_wins_or_only_loses(dense):
    """The rebuilt counts span every agent, even one that never loses (no cell has it as loser) or never wins;
    appearances count the drawn battles of each side; sparse counts stay sparse (beyond DENSE_MAX_AGENTS agents
    they must); and only the statistics the method reads are rebuilt."""
    statistics = ["pairwise", "positions", "histogram"]
    rows = battles(np.random.default_rng(12), np.array([0.5, 0.0, -0.5]), 60, ["w", "x", "y"])
    for edge in ({"model_a": "zz", "winner": "model_a"}, {"model_a": "zz", "winner": "model_b"}):  # zz: the last local id
        log = rows + [edge | {"model_b": opponent} for opponent in ("w", "x", "y") for _ in range(3)]
        stats, names = statistics_of_records(log, "battles", statistics + ["sequence"], dense=dense)
        for spec, read in (("borda", "positions"), ("stv", "histogram"), ("copeland", "pairwise")):
            source = records(Spec.parse(f"{spec}:bootstrap=1"), stats)
            draws = _draws_of(source, seed=4)
            expected, _ = statistics_of_records(redrawn_battles(source, draws, names), "battles", statistics, dense=True)
            rebuilt = source.rebuild(draws)
            assert [name for name in statistics if getattr(rebuilt, name) is not None] == [read] and not rebuilt.extra, spec
            assert rebuilt.appearances.tolist() == expected.appearances.tolist() and rebuilt.appearances.dtype == np.int64
        pairs = rebuilt.pairwise
        assert pairs.is_sparse == (not dense)
        wins, ties = (pairs.wins.toarray(), pairs.ties.toarray()) if pairs.is_sparse else (pairs.wins, pairs.ties)
        assert np.array_equal(wins, expected.pairwise.wins) and np.array_equal(ties, expected.pairwise.ties)


def test_redrawn_sequence_is_each_record_repeated_in_place():
    """Elo's sequence: each battle as often as drawn, where it stood (the order is the rating's input)."""
    rows = [row | {"timestamp": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}
            for i, row in enumerate(battles(np.random.default_rng(13), np.array([0.5, 0.0, -0.5]), 40, ["x", "y", "z"]))]
    stats, _ = statistics_of_records(rows, "battles", needed_statistics(["elo:bootstrap=1"]))
    source = records(Spec.parse("elo:bootstrap=1"), stats)
    assert source.weights.tolist() == [1.0] * len(rows)
    draws = _draws_of(source, seed=6)
    assert 0 in draws and draws.max() > 1
    expected = statistics_of_records([r for r, n in zip(rows, draws) for _ in range(int(n))], "battles",
                                     needed_statistics(["elo"]))[0].extra["sequence"]
    rebuilt = source.rebuild(draws).extra["sequence"]
    for column in ("a", "b", "score", "weight", "group"):
        assert getattr(rebuilt, column).tolist() == getattr(expected, column).tolist(), column


def test_redrawn_histogram_is_the_reduction_of_the_redrawn_ballots():
    rankings = ["a>b>c", "a>b>c", "b>c=a", "c>a>b", "c>a>b", "c>a>b", "a=b>c", "d>a", "b>d>c"]
    stats, _ = profile(rankings, statistics=["pairwise", "positions", "histogram"])
    source = records(Spec.parse("schulze:bootstrap=1"), stats)
    draws = _draws_of(source, seed=2)
    resampled = source.rebuild(draws)
    counts = {ballot: int(c) for ballot, c in zip(source.ballots, draws)}
    redrawn = [r for r in sorted(set(rankings)) for _ in range(counts[_ballot_of(r)])]
    expected, _ = profile(redrawn, statistics=["pairwise", "positions", "histogram"])
    assert np.array_equal(resampled.pairwise.wins, expected.pairwise.wins)
    assert run("schulze", resampled).rank.tolist() == run("schulze", expected).rank.tolist()
    assert resampled.appearances.tolist() == expected.appearances.tolist() and resampled.appearances.dtype == np.int64
    # every statistic a method reads is rebuilt, and only those: positions (Borda), the histogram (STV), pairs (Schulze)
    for spec, read in (("borda", "positions"), ("stv", "histogram"), ("schulze", "pairwise")):
        rebuilt = records(Spec.parse(f"{spec}:bootstrap=1"), stats).rebuild(draws)
        assert [name for name in ("pairwise", "positions", "histogram") if getattr(rebuilt, name) is not None] == [read], spec
        assert rebuilt.appearances.tolist() == expected.appearances.tolist(), spec
    positions = records(Spec.parse("borda:bootstrap=1"), stats).rebuild(draws).positions
    assert positions.agents.tolist() == stats.agents.tolist() and positions.groups.keys() == expected.positions.groups.keys()
    assert all(np.array_equal(positions.groups[g], expected.positions.groups[g]) for g in positions.groups)
    histogram = records(Spec.parse("stv:bootstrap=1"), stats).rebuild(draws).histogram
    assert histogram.agents.tolist() == stats.agents.tolist()
    assert histogram.ballots == expected.histogram.ballots and np.array_equal(histogram.weights, expected.histogram.weights)


def _ballot_of(ranking: str) -> tuple:
    """The histogram ballot of a ranking over the agents a..d (local ids follow the sorted names)."""
    return tuple(tuple(sorted("abcd".index(name) for name in group.split("="))) for group in ranking.split(">"))


def test_cells_and_records_give_the_same_bootstrap_distribution():
    """Poisson(n) per cell against Poisson(1) per battle: the Borda scores' spread agrees."""
    rows = battles(np.random.default_rng(3), np.array([0.5, 0.0, -0.5]), 300, ["x", "y", "z"])
    stats, names = statistics_of_records(rows, "battles", ["positions"])
    by_cells = run("borda:bootstrap=2000", stats)
    rng = np.random.default_rng(9)
    per_record = []
    for _ in range(400):
        counts = rng.poisson(1.0, len(rows))
        sample = [r for r, c in zip(rows, counts) for _ in range(c)]
        resampled, sample_names = statistics_of_records(sample, "battles", ["positions"])
        assert sample_names == names
        per_record.append(run("borda", resampled).score)
    low, high = np.percentile(per_record, [2.5, 97.5], axis=0)
    width_cells, width_records = by_cells.extras["ci_high"] - by_cells.extras["ci_low"], high - low
    np.testing.assert_allclose(width_cells, width_records, rtol=0.2)


def test_rank_intervals_cover_the_true_ranks():
    strength = np.array([1.2, 0.6, 0.2, -0.2, -0.6, -1.2])
    names = ["a", "b", "c", "d", "e", "f"]
    covered = []
    for replicate in range(8):
        rows = battles(np.random.default_rng(100 + replicate), strength, 400, names)
        stats, got = statistics_of_records(rows, "battles", ["positions"])
        ratings = run("borda:bootstrap=100", stats)
        truth = np.array([names.index(got[i]) + 1 for i in ratings.agents])
        covered.append((ratings.extras["rank_low"] <= truth) & (truth <= ratings.extras["rank_high"]))
    assert np.mean(covered) >= 0.85


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("arena") / "store")
    store.ingest([ARENA], "battles")
    # deviation solves an LP game per prompt each round (about a second here): fewer rounds
    specs = [f"{m}:bootstrap={6 if m == 'deviation' else 40}" for m in ACCEPTANCE] + ["m-elo:bootstrap=200"]
    return reduce_store(store, "battles", needed_statistics(specs)), specs


def _check_intervals(ratings):
    x = ratings.extras
    assert np.all(x["ci_low"] <= ratings.score + 1e-9) and np.all(ratings.score <= x["ci_high"] + 1e-9) or \
        ratings.name == "elo"  # Elo's timestamp-order score need not sit inside its bootstrap spread
    assert np.all(x["rank_low"] <= x["rank_high"])
    leaders = ratings.rank == ratings.rank.min()
    assert np.all(x["tier"][leaders] == 1) and np.all(np.diff(x["tier"][np.argsort(ratings.rank, kind="stable")]) >= 0)
    assert np.all((0 <= x["win_frequency"]) & (x["win_frequency"] <= 1)) and x["win_frequency"].sum() >= 1 - 1e-12


def test_arena_hard_intervals_and_tiers_the_same_on_one_and_two_workers(arena, dask_client):
    stats, specs = arena
    with local_cluster(1) as cluster:
        from distributed import Client

        with Client(cluster) as one:
            single = [run(s, stats, client=one) for s in specs]
    for spec, alone in zip(specs, single):
        pair = run(spec, stats, client=dask_client)
        assert np.array_equal(alone.score, pair.score) and alone.extras.keys() == pair.extras.keys()
        for key in alone.extras:
            assert np.array_equal(alone.extras[key], pair.extras[key], equal_nan=True), (spec, key)
        if spec.startswith("m-elo"):
            assert {"ci_low", "ci_high", "rank_ci"} <= alone.extras.keys()
            continue
        assert alone.info["bootstrap_dropped"] < alone.info["bootstrap_rounds"]
        _check_intervals(alone)
    lottery = single[ACCEPTANCE.index("maximal-lotteries")]
    assert np.all(lottery.extras["support_frequency"][lottery.score > 0] > 0)
    assert np.any(single[ACCEPTANCE.index("copeland")].extras["tier"] > 1)  # the sample separates some models


def intervals_by_name(store: Store, log, kind: str, specs: list[str], first=None) -> list[dict]:
    """Each spec's scores and interval columns on `log` ingested into `store` (after `first`, a (file, kind) of
    another kind that numbers other agents first), in the order of the agents' names."""
    if first is not None:
        store.ingest([first[0]], first[1])
    store.ingest([log], kind)
    stats = reduce_store(store, kind, needed_statistics(specs))
    names = store.dictionary("agents").names
    by_name = []
    for spec in specs:
        ratings = run(spec, stats)
        order = np.argsort([names[i] for i in ratings.agents])
        by_name.append({k: v[order].tolist() for k, v in ratings.extras.items()} | {"score": ratings.score[order].tolist()})
    return by_name


def test_the_store_numbering_does_not_move_the_intervals(tmp_path):
    rows = battles(np.random.default_rng(4), np.linspace(1, -1, 6), 300, [f"m{i}" for i in range(6)])
    path = tmp_path / "battles.csv"
    pl.DataFrame(rows).write_csv(path)
    unrelated = tmp_path / "first.csv"
    pl.DataFrame({"ranking": ["0 other>m5>m3>m1"]}).write_csv(unrelated)
    specs = ["copeland:bootstrap=30", "borda:bootstrap=30", "elo:bootstrap=30"]
    assert intervals_by_name(Store(tmp_path / "plain"), path, "battles", specs) == intervals_by_name(
        Store(tmp_path / "rotated"), path, "battles", specs, (unrelated, "ballots"))


def test_the_store_numbering_does_not_move_the_intervals_of_ballots(tmp_path):
    """Ballots are drawn in the order of their agents' names, not of the store's ids (a mutant drawing them in
    id order survived every other test): a store that numbered other agents first gives the same intervals."""
    rng = np.random.default_rng(6)
    strength = np.linspace(1, -1, 5)
    rankings = []
    for _ in range(120):  # noisy orders of m0..m4, some with a tie, some partial
        order = np.argsort(-(strength + rng.gumbel(size=5)))[: rng.integers(2, 6)]
        names = [f"m{i}" for i in order]
        tie = rng.integers(1, len(names)) if rng.random() < 0.3 else 0
        rankings.append(">".join(names[:tie - 1] + ["=".join(names[tie - 1: tie + 1])] + names[tie + 1:]) if tie else ">".join(names))
    path = tmp_path / "ballots.csv"
    pl.DataFrame({"ranking": rankings}).write_csv(path)
    unrelated = tmp_path / "first.csv"
    pl.DataFrame({"model_a": ["other", "m2"], "model_b": ["m4", "m0"], "winner": ["model_a", "tie"]}).write_csv(unrelated)
    specs = ["schulze:bootstrap=30", "borda:bootstrap=30"]
    plain = intervals_by_name(Store(tmp_path / "plain"), path, "ballots", specs)
    assert plain == intervals_by_name(Store(tmp_path / "rotated"), path, "ballots", specs, (unrelated, "battles"))
    assert all(np.ptp(by_name["ci_high"]) > 0 for by_name in plain)  # intervals, not constants


def test_absent_is_not_measured_an_agent_of_one_or_two_records_keeps_its_own_interval():
    """A round that draws none of a newcomer's one or two battles says nothing about it (m-Elo would put it at
    its prior's centre, Borda at 0): it is left out of the newcomer's interval and counted in `rounds_measured`."""
    from tests.methods.test_standing import long_tail

    rounds = 60
    specs = (f"m-elo:prior=0.01,bootstrap={rounds}", f"borda:bootstrap={rounds}",
             f"m-elo:covariates=len,prior=0.01,bootstrap={rounds}")  # style control's bootstrap too
    rng = np.random.default_rng(5)
    rows = [row | {"features_a.len": float(rng.integers(100, 900)), "features_b.len": float(rng.integers(100, 900))}
            for row in long_tail()]
    stats, names = statistics_of_records(rows, "battles", needed_statistics(specs))
    newcomers = np.isin(stats.agents, [names.index("new1"), names.index("new2")])
    for spec in specs:
        r = run(spec, stats)
        at = r.positions(stats.agents)
        measured = r.extras["rounds_measured"][at]
        assert (measured[~newcomers] == rounds).all(), spec
        assert ((0 < measured[newcomers]) & (measured[newcomers] < rounds)).all(), spec  # absent in about e^-1, e^-2 of rounds
        low = r.extras["ci_low"][at][newcomers]
        if spec.startswith("m-elo"):  # every round that measured them saw only wins: far above the mean rating, 1000
            assert (low > 1000 + r.info["logistic_scale"]).all(), low
        else:  # a Borda score of at least their one win, never the 0 of a round without them
            assert (low >= 1).all(), low


def test_an_empty_sequence_bootstraps_to_empty_intervals():
    """A log without comparisons redraws no records (a mutant that took it for one record of none crashed)."""
    stats, _ = statistics_of_records([], "battles", needed_statistics(["elo:bootstrap=5"]))
    ratings = run("elo:bootstrap=5", stats)
    assert len(ratings.agents) == 0 and ratings.extras["ci_low"].shape == (0,) and ratings.info["bootstrap_dropped"] == 0


def score_rows(rng: np.random.Generator, tasks: int, agents: str = "wxyz") -> list[dict]:
    """A score table: every agent on every task, noisy scores by strength, uneven task weights
    (whole: in games a weight is a number of copies), and every third
    task scored lower-is-better."""
    return [{"task": f"t{t}", "agent": a, "score": float(np.round(i + rng.normal(0, 1), 1)) * (1 if t % 3 else -1),
             "higher_is_better": bool(t % 3), "task_weight": [1.0, 3.0, 2.0][t % 3]}
            for t in range(tasks) for i, a in enumerate(agents)]


def test_redrawn_score_table_is_the_table_of_the_redrawn_tasks():
    """A task drawn n times is n copies of it: its `task_weight` times n (weights are multiplicities); a task drawn
    0 times is gone from the table."""
    rows = score_rows(np.random.default_rng(7), 9)
    stats, _ = statistics_of_records(rows, "scores", ["game_data"])
    table = stats.extra["game_data"]
    source = records(Spec.parse("uniform:bootstrap=1"), stats)
    assert source.weights.tolist() == [1.0] * len(table.tasks)  # one Poisson(1) per task, whatever its weight
    draws = _draws_of(source, seed=1)  # the tasks are stored by name, their canonical order
    assert 0 in draws and draws.max() > 1
    drawn = dict(zip(table.tasks, draws))
    redrawn = [r | {"task_weight": r["task_weight"] * drawn[r["task"]]} for r in rows if drawn[r["task"]] > 0]
    expected = statistics_of_records(redrawn, "scores", ["game_data"])[0].extra["game_data"]
    rebuilt = source.rebuild(draws).extra["game_data"]
    assert rebuilt.tasks == expected.tasks and np.array_equal(rebuilt.scores, expected.scores)
    assert rebuilt.task_weight.tolist() == expected.task_weight.tolist()
    assert rebuilt.higher_is_better.tolist() == expected.higher_is_better.tolist()


def prompt_battles(rng: np.random.Generator, n: int, names: list[str], prompts: int) -> list[dict]:
    """Bradley-Terry battles, one in four a tie, each on one of a few prompts, so that identical battles repeat; and
    five battles without a prompt: the first agent tied the second and the third twice each, and lost to the second."""
    rows = [row | {"prompt": f"q{rng.integers(prompts)}", "winner": "tie" if i % 4 == 0 else row["winner"]}
            for i, row in enumerate(battles(rng, np.linspace(1, -1, len(names)), n, names))]
    return rows + [{"model_a": names[0], "model_b": names[j], "winner": w, "prompt": None}
                   for j, w in ((1, "tie"), (1, "tie"), (2, "tie"), (2, "tie"), (1, "model_b"))]


def prompt_cells(data, names: list[str], prompts: list[str]) -> dict[tuple, tuple[float, float]]:
    """{(prompt, a, b): (wins, ties)} of prompt counts, by names (None: no prompt), cells with weight only."""
    return {(prompts[p] if p >= 0 else None, names[a], names[b]): (w, t)
            for p, a, b, w, t in zip(data.prompt.tolist(), data.a.tolist(), data.b.tolist(), data.wins.tolist(),
                                     data.ties.tolist()) if w or t}


def prompt_cells_of_battles(rows: list[dict]) -> dict[tuple, tuple[float, float]]:
    stats, names = statistics_of_records(rows, "battles", ["game_data"])
    return prompt_cells(stats.extra["game_data"], names, sorted({r["prompt"] for r in rows} - {None}))  # in memory,
    # prompt ids follow the prompts' names


def test_redrawn_prompt_cells_are_the_counts_of_the_redrawn_battles():
    """Wins per prompt cell drawn as Poisson(wins); a tie once, in its row whose agent keys increase, and mirrored
    (a row of wins alone, whose agents never tied there, keeps no tie): the rebuilt counts are those of the battles
    the draws stand for."""
    names = ["w", "x", "y", "z"]
    lone = {"model_a": "z", "model_b": "w", "winner": "model_a", "prompt": "q9"}  # z after w: its row does not lead
    rows = prompt_battles(np.random.default_rng(2), 80, names, 3) + [lone]
    stats, _ = statistics_of_records(rows, "battles", ["game_data"])
    data, keys = stats.extra["game_data"], stats.agent_keys
    source = records(Spec.parse("uniform:bootstrap=1"), stats)
    m = len(data.a)
    assert sorted(source.weights.tolist()) == sorted(np.r_[data.wins, data.ties].tolist())
    draws = np.random.default_rng(3).poisson(np.r_[data.wins, data.ties]).astype(np.float64)  # in storage order
    prompts = sorted({r["prompt"] for r in rows} - {None})
    redrawn = []
    for r, (p, a, b) in enumerate(zip(data.prompt.tolist(), data.a.tolist(), data.b.tolist())):
        battle = {"model_a": names[a], "model_b": names[b], "prompt": prompts[p] if p >= 0 else None}
        redrawn += [battle | {"winner": "model_a"}] * int(draws[r])
        if keys[a] < keys[b]:  # the tie's leading row; its other row's draw is not read
            redrawn += [battle | {"winner": "tie"}] * int(draws[m + r])
    assert {r["prompt"] for r in redrawn} == {r["prompt"] for r in rows}  # every prompt drawn, and no prompt too
    rebuilt = prompt_cells(source.rebuild(draws).extra["game_data"], names, prompts)
    assert rebuilt == prompt_cells_of_battles(redrawn)
    given = prompt_cells(data, names, prompts)  # the draws did move the counts, the ties' too
    assert {c: t for c, (_, t) in rebuilt.items() if t} != {c: t for c, (_, t) in given.items() if t}


def test_absent_is_not_measured_on_score_tables_prompt_cells_and_sequences():
    """A newcomer (the last agent by name) scored on one task, or in one battle, is measured only in the rounds that
    draw that task, prompt cell or record: Poisson(1) > 0, 1 - e^-1 of them (within 4 binomial standard deviations);
    the others, in many, in every round."""
    rounds = 100
    share = 1 - np.exp(-1)
    newcomer_task = [{"task": "t9", "agent": a, "score": s, "higher_is_better": True, "task_weight": 1.0}
                     for a, s in (("zz", 3.0), ("w", 1.0))]
    newcomer_battle = [{"model_a": "zz", "model_b": "w", "winner": "model_a", "prompt": "q0"}]
    battles_on_prompts = prompt_battles(np.random.default_rng(9), 80, ["w", "x", "y", "z"], 3) + newcomer_battle
    logs = (("scores", "uniform", score_rows(np.random.default_rng(8), 8) + newcomer_task),
            ("battles", "uniform", battles_on_prompts), ("battles", "elo", battles_on_prompts),
            ("battles", "borda", battles_on_prompts))
    for kind, method, rows in logs:
        spec = f"{method}:bootstrap={rounds}"
        stats, names = statistics_of_records(rows, kind, needed_statistics([spec]))
        ratings = run(spec, stats)
        measured = ratings.extras["rounds_measured"]
        newcomer = np.array([names[a] == "zz" for a in ratings.agents])
        assert (measured[~newcomer] == rounds).all(), spec
        assert abs(measured[newcomer][0] - rounds * share) < 4 * np.sqrt(rounds * share * (1 - share)), spec


def test_the_store_numbering_does_not_move_the_intervals_of_games(tmp_path):
    """Tasks are drawn in the order of their names, prompt cells in that of their prompts' names (as the board names
    them) and agents': a store that numbered other agents first (a ballot ingested before) and the later tasks and
    prompts first (the log in two files, those first) gives the same intervals."""
    spec = "uniform:bootstrap=20"
    logs = {"scores": (score_rows(np.random.default_rng(10), 7), lambda row: row["task"] >= "t4"),
            "battles": (prompt_battles(np.random.default_rng(11), 60, ["w", "x", "y", "z"], 4),
                        lambda row: (row["prompt"] or "") >= "q2")}
    first = tmp_path / "first.csv"
    pl.DataFrame({"ranking": ["0 other>y>w"]}).write_csv(first)
    for kind, (rows, later) in logs.items():
        by_name = []
        for folder, files in (("plain", [rows]), ("rotated", [[r for r in rows if later(r)], [r for r in rows if not later(r)]])):
            store = Store(tmp_path / kind / folder)
            if folder == "rotated":
                store.ingest([first], "ballots")
            for i, part in enumerate(files):
                path = tmp_path / f"{kind}-{folder}-{i}.csv"
                pl.DataFrame(part).write_csv(path)
                store.ingest([path], kind)
            stats = reduce_store(store, kind, needed_statistics([spec]))
            data = stats.extra["game_data"]
            if kind == "battles":  # as the board hands them to the games
                data = replace(data, prompt_names=tuple(store.dictionary("prompts").names))
            ratings = run(spec, replace(stats, extra=stats.extra | {"game_data": data}))
            names = store.dictionary("agents").names
            by_name.append({names[a]: (lo, hi) for a, lo, hi in
                            zip(ratings.agents, ratings.extras["ci_low"].tolist(), ratings.extras["ci_high"].tolist())})
        # the same draws; the game sums its prompts in the store's order, which moves the last bits only
        assert by_name[0].keys() == by_name[1].keys(), kind
        np.testing.assert_allclose([by_name[1][a] for a in by_name[0]], list(by_name[0].values()), rtol=1e-9, err_msg=kind)
        assert len({hi - lo for lo, hi in by_name[0].values()}) > 1, kind  # intervals, not constants


def test_tasks_are_drawn_in_the_order_of_their_names_whatever_the_table_order():
    """A score table need not list its tasks by name (the backtest's copies of tasks are appended): the same table
    with its tasks reversed gets the same draws, so the same intervals."""
    stats, _ = statistics_of_records(score_rows(np.random.default_rng(12), 7), "scores", ["game_data"])
    table = stats.extra["game_data"]
    backwards = ScoreTable(table.agents, table.tasks[::-1], table.scores[:, ::-1], table.higher_is_better[::-1],
                           table.task_weight[::-1])
    by_name, reversed_ = (run("uniform:bootstrap=20", replace(stats, extra={"game_data": t})) for t in (table, backwards))
    for column in ("ci_low", "ci_high"):  # the game sums the tasks in the table's order: the last bits may move
        np.testing.assert_allclose(reversed_.extras[column], by_name.extras[column], rtol=1e-9, err_msg=column)
    assert np.ptp(by_name.extras["ci_high"] - by_name.extras["ci_low"]) > 0


def test_a_round_that_cannot_be_rated_is_dropped_and_the_next_ones_still_run():
    """A score table of one task: a round that draws it 0 times (e^-1 of rounds) holds no task, so no game
    (`RatingError`): dropped and counted, and the rounds after it are rated as usual."""
    rounds = 100
    rows = [{"task": "t", "agent": a, "score": float(i)} for i, a in enumerate("abc")]
    stats, _ = statistics_of_records(rows, "scores", ["game_data"])
    info = run(f"uniform:bootstrap={rounds}", stats).info
    expected, spread = rounds * np.exp(-1), 4 * np.sqrt(rounds * np.exp(-1) * (1 - np.exp(-1)))  # binomial, 4 sd
    assert abs(info["bootstrap_dropped"] - expected) < spread, info["bootstrap_dropped"]


def test_support_frequency_only_for_a_method_that_publishes_a_lottery():
    """Maximal lotteries give each round's support; a Condorcet winner far ahead is its whole support in every round.
    Copeland gives no lottery, so no support frequency."""
    rows = battles(np.random.default_rng(14), np.array([3.0, 0.0, -0.2]), 120, ["x", "y", "z"])
    stats, names = statistics_of_records(rows, "battles", needed_statistics(["maximal-lotteries:bootstrap=10"]))
    lottery = run("maximal-lotteries:bootstrap=10", stats)
    winner = np.array([names[a] == "x" for a in lottery.agents])
    assert lottery.extras["support_frequency"][winner].tolist() == [1.0]
    assert (lottery.extras["support_frequency"][~winner] == 0).all()
    assert "support_frequency" not in run("copeland:bootstrap=10", stats).extras


def test_the_rounds_seed_is_the_bootstrap_seed_and_the_spec_spelled_canonically():
    """Another `bootstrap_seed`, or another spec, draws other rounds; the same spec however written the same ones
    (the seed fits a signed 64-bit integer)."""
    seeds = {(spec, seed): round_seed(Spec.parse(spec), seed)
             for spec in ("borda", "borda:normalise=false", "copeland") for seed in (0, 1)}
    assert all(0 <= s < 2**63 for s in seeds.values())
    assert seeds["borda", 0] == seeds["borda:normalise=false", 0]  # the same canonical spelling
    assert len({seeds["borda", 0], seeds["borda", 1], seeds["copeland", 0], seeds["copeland", 1]}) == 4
    rows = battles(np.random.default_rng(15), np.array([0.5, 0.0, -0.5]), 60, ["x", "y", "z"])
    stats, _ = statistics_of_records(rows, "battles", ["positions"])
    first, other = (run(f"borda:bootstrap=10,bootstrap_seed={seed}", stats).extras["ci_low"] for seed in (0, 1))
    assert not np.array_equal(first, other)


def test_ballots_of_more_agents_than_dense_counts_allow_are_rebuilt_sparse():
    """Beyond DENSE_MAX_AGENTS agents a round's pair counts are sparse, as the reduction's are (dense ones would take
    k^2 floats per round); at DENSE_MAX_AGENTS they are dense."""
    for k, sparse in ((DENSE_MAX_AGENTS, False), (DENSE_MAX_AGENTS + 1, True)):
        names = [f"m{i:04d}" for i in range(k)]
        stats, _ = profile([f"{a}>{b}" for a, b in zip(names[0::2], names[1::2] + names[:1])], statistics=["pairwise", "histogram"])
        assert len(stats.agents) == k
        source = records(Spec.parse("schulze:bootstrap=1"), stats)
        assert source.rebuild(_draws_of(source)).pairwise.is_sparse == sparse, k
