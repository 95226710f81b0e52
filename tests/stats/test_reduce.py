"""Reductions equal a naive reference, bit for bit, whatever the partitioning and the workers."""

from __future__ import annotations

import itertools
import json
import time
from collections import defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.stats import CORE_STATISTICS, reduce_store
from pipeline.store import DamagedStore, Store

AGENTS = [f"p{i}" for i in range(7)]
# Weights on the store's 2^-24 grid (so the reference sums them exactly too), some far from 1.
WEIGHTS = [1.0, 1.0, 0.5, 2.0, 0.75, 3.25, 3 * 2.0**-24]


def random_orders(rng, n, min_len=2):
    """n weak orders over random subsets: lists of tie groups, plus weights."""
    orders = []
    for _ in range(n):
        members = list(rng.choice(AGENTS, size=rng.integers(min_len, len(AGENTS) + 1), replace=False))
        levels = rng.integers(0, len(members), size=len(members))
        groups = [sorted(m for m, lv in zip(members, levels) if lv == level) for level in sorted(set(levels))]
        orders.append((groups, float(rng.choice(WEIGHTS))))
    return orders


def reference(orders):
    """N, T, position counts (tie groups share positions) and the histogram, by name."""
    wins, ties, positions, histogram = defaultdict(float), defaultdict(float), defaultdict(float), defaultdict(float)
    for groups, w in orders:
        length = sum(len(g) for g in groups)
        start = 0
        for i, group in enumerate(groups):
            for x in group:
                positions[(length, start, len(group), x)] += w
                for y in group:
                    if x != y:
                        ties[(x, y)] += w
                for later in groups[i + 1:]:
                    for y in later:
                        wins[(x, y)] += w
            start += len(group)
        histogram[tuple(tuple(g) for g in groups)] += w
    return dict(wins), dict(ties), dict(positions), dict(histogram)


def named(stats, names):
    """The statistics of a reduction as name-keyed dicts (ids differ between stores)."""
    who = [names[i] for i in stats.agents]
    dense = stats.pairwise.dense()
    pairs = lambda m: {(who[i], who[j]): m[i, j] for i, j in zip(*np.nonzero(m))}  # noqa: E731
    positions = {(l, s, g, who[x]): w[x] for (l, s, g), w in stats.positions.groups.items() for x in np.nonzero(w)[0]}
    histogram = {tuple(tuple(sorted(who[x] for x in grp)) for grp in b): w for b, w in zip(stats.histogram.ballots, stats.histogram.weights)}
    return pairs(dense.wins), pairs(dense.ties), positions, histogram


def write_ballots(path, orders):
    path.write_text("".join(json.dumps({"ranking": ">".join("=".join(g) for g in groups), "weight": w}) + "\n" for groups, w in orders))


def write_games(path, orders, offset=0):
    lines = ["game_id,player,place,weight,timestamp"]
    for k, (groups, w) in enumerate(orders):
        day = 1 + (k + offset) % 5
        place = 1
        for group in groups:
            lines += [f"g{k + offset},{x},{place},{w},2024-01-0{day}" for x in group]
            place += len(group)
    path.write_text("\n".join(lines) + "\n")


def write_scores(path, orders):
    lines = ["task,agent,score,task_weight"]
    for k, (groups, w) in enumerate(orders):
        lines += [f"t{k},{x},{-level},{w}" for level, group in enumerate(groups) for x in group]
    path.write_text("\n".join(lines) + "\n")


def write_battles(path, orders, offset=0):
    lines = ["battle_id,model_a,model_b,winner,weight,timestamp"]
    for k, (groups, w) in enumerate(orders):
        (a, b), flip = sorted(x for g in groups for x in g)[:2], k % 2
        winner = "tie" if len(groups) == 1 else ("model_a" if groups[0][0] == a else "model_b")
        a, b, winner = (b, a, {"model_a": "model_b", "model_b": "model_a"}.get(winner, winner)) if flip else (a, b, winner)
        lines.append(f"{k + offset},{a},{b},{winner},{w},2024-01-0{1 + k % 4}")
    path.write_text("\n".join(lines) + "\n")


def battle_orders(rng, n):
    """Battles as orders of two agents: a strict win or a tie."""
    orders = []
    for groups, w in random_orders(rng, n):
        a, b = sorted(x for g in groups for x in g)[:2]
        orders.append(([[a, b]] if rng.random() < 0.3 else [[a], [b]] if rng.random() < 0.5 else [[b], [a]], w))
    return orders


WRITERS = {"ballots": (write_ballots, ".jsonl"), "games": (write_games, ".csv"), "scores": (write_scores, ".csv"),
           "battles": (write_battles, ".csv")}


def build_store(root, kind, orders, files):
    """Ingest `orders` split over `files` log files."""
    write, suffix = WRITERS[kind]
    store = Store(root / "store")
    chunks = np.array_split(np.arange(len(orders)), files)
    paths = []
    for i, chunk in enumerate(chunks):
        path = root / f"part{i}{suffix}"
        part = [orders[j] for j in chunk]
        write(path, part, int(chunk[0])) if kind in ("games", "battles") else write(path, part)
        paths.append(path)
    store.ingest(paths, kind)
    return store


@pytest.mark.parametrize("kind", ["ballots", "games", "scores", "battles"])
@pytest.mark.parametrize(("files", "target_rows", "dense"), [(1, 10**6, True), (4, 10**6, False), (6, 7, True)])
def test_reduction_equals_reference(tmp_path, kind, files, target_rows, dense):
    rng = np.random.default_rng(11)
    orders = battle_orders(rng, 120) if kind == "battles" else random_orders(rng, 60)
    if kind == "scores":  # ties in a score table are equal scores, so every group is a level
        orders = [(groups, w) for groups, w in orders]
    store = build_store(tmp_path, kind, orders, files)
    stats = reduce_store(store, kind, CORE_STATISTICS, dense=dense, target_rows=target_rows)
    assert stats.pairwise.is_sparse == (not dense)
    got = named(stats, store.dictionary().names)
    for name, mine, theirs in zip(("N", "T", "positions", "histogram"), got, reference(orders)):
        assert mine == theirs, name  # exact equality of floats


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ballots", "battles"])
def test_bit_identical_for_one_and_two_workers(tmp_path, kind):
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(5)
    orders = battle_orders(rng, 400) if kind == "battles" else random_orders(rng, 200)
    store = build_store(tmp_path, kind, orders, 5)
    results = []
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            results.append(reduce_store(store, kind, CORE_STATISTICS, client=client, target_rows=50))
    one, two = results
    assert one.pairwise.wins.tobytes() == two.pairwise.wins.tobytes()
    assert one.pairwise.ties.tobytes() == two.pairwise.ties.tobytes()
    assert all(one.positions.groups[k].tobytes() == two.positions.groups[k].tobytes() for k in one.positions.groups)
    assert one.histogram.ballots == two.histogram.ballots and one.histogram.weights.tobytes() == two.histogram.weights.tobytes()


def test_reduction_on_the_session_cluster_equals_local(tmp_path, dask_client):
    rng = np.random.default_rng(3)
    store = build_store(tmp_path, "games", random_orders(rng, 80), 3)
    local = reduce_store(store, "games", {"pairwise"})
    remote = reduce_store(store, "games", {"pairwise"}, client=dask_client, target_rows=40)
    assert local.pairwise.wins.tobytes() == remote.pairwise.wins.tobytes()


@pytest.mark.parametrize("kind", ["battles", "games"])
def test_the_sequence_on_the_session_cluster_has_the_bytes_of_local_threads(tmp_path, dask_client, kind):
    """The batches' partials are gathered and finalized on the client: the same sequence, bit for
    bit, as on local threads, and no partial is left on a worker."""
    rng = np.random.default_rng(17)
    orders = battle_orders(rng, 300) if kind == "battles" else random_orders(rng, 120)
    store = build_store(tmp_path, kind, orders, 4)
    local = reduce_store(store, kind, {"pairwise", "sequence"}).extra["sequence"]
    remote = reduce_store(store, kind, {"pairwise", "sequence"}, client=dask_client, target_rows=30).extra["sequence"]
    assert len(local) == len(remote) >= 300
    for name in ("agents", "a", "b", "score", "weight", "players", "group"):
        assert getattr(local, name).tobytes() == getattr(remote, name).tobytes(), name
    assert held_on_workers(dask_client) == 0


def held_on_workers(client, wait: float = 10.0) -> int:
    """The keys the workers hold, once the releases the client has sent have reached them (a released
    future is freed on its worker asynchronously), or after `wait` seconds."""
    deadline = time.monotonic() + wait
    while (held := sum(client.run(lambda dask_worker: len(dask_worker.data)).values())) and time.monotonic() < deadline:
        time.sleep(0.05)
    return held


@pytest.mark.parametrize("on_cluster", [False, True])
def test_a_damaged_partition_is_named_locally_and_from_a_worker(tmp_path, request, on_cluster):
    rng = np.random.default_rng(5)
    store = build_store(tmp_path, "games", random_orders(rng, 40), 2)
    path = store.path(store.partitions("games")[-1])
    path.write_bytes(path.read_bytes()[:100])  # cut short by hand, or by a copy that ran out of space
    client = request.getfixturevalue("dask_client") if on_cluster else None
    with pytest.raises(DamagedStore) as raised:
        reduce_store(store, "games", {"pairwise"}, client=client)
    assert str(raised.value).startswith(f"{path.resolve()}: a file of the store cannot be read (ArrowInvalid: ")
    path.unlink()
    with pytest.raises(DamagedStore, match="No such file or directory"):
        reduce_store(store, "games", {"pairwise"}, client=client)


def test_sparse_and_dense_agree_and_sparse_is_csr(tmp_path):
    rng = np.random.default_rng(8)
    store = build_store(tmp_path, "ballots", random_orders(rng, 50), 2)
    dense = reduce_store(store, "ballots", {"pairwise"}, dense=True).pairwise
    sparse = reduce_store(store, "ballots", {"pairwise"}, dense=False).pairwise
    assert isinstance(sparse.wins, sp.csr_array)
    np.testing.assert_array_equal(sparse.dense().wins, dense.wins)
    np.testing.assert_array_equal(sparse.dense().ties, dense.ties)


def test_a_statistic_is_computed_only_when_asked(tmp_path):
    rng = np.random.default_rng(1)
    store = build_store(tmp_path, "ballots", random_orders(rng, 10), 1)
    stats = reduce_store(store, "ballots", {"positions"})
    assert stats.positions is not None and stats.histogram is None
    with pytest.raises(ValueError, match="unknown statistics"):
        reduce_store(store, "ballots", {"margins"})
    with pytest.raises(ValueError, match="holds no games"):
        reduce_store(store, "games", {"pairwise"})


def test_appearances_count_ballots_per_agent(tmp_path):
    orders = [([["a"], ["b", "c"]], 1.0), ([["c"], ["a"]], 2.0), ([["d"]], 1.0)]
    store = build_store(tmp_path, "ballots", orders, 1)
    stats = reduce_store(store, "ballots", {"pairwise"})
    names = store.dictionary().names
    assert dict(zip((names[i] for i in stats.agents), stats.appearances.tolist())) == {"a": 2, "b": 1, "c": 2, "d": 1}


def test_weighted_sums_are_exact_and_order_free():
    # The units trick: 0.1 is not on the grid, but its quantised value adds exactly in any order.
    from pipeline.stats.partials import UNIT, to_units

    w = np.rint(np.full(1000, 0.1) * UNIT) / UNIT
    forward = to_units(w).sum()
    for perm in itertools.islice(itertools.permutations(range(3)), 3):
        assert to_units(w[np.r_[perm, 3:1000]]).sum() == forward


def test_agent_keys_order_agents_by_name_whatever_ids_the_store_gave(tmp_path):
    # The same battles in two stores; in the second, another file gave the names other ids first.
    battles = tmp_path / "battles.csv"
    battles.write_text("model_a,model_b,winner\ncat,ant,model_a\nbee,cat,tie\nant,bee,model_b\n")
    other = tmp_path / "other.csv"
    other.write_text("model_a,model_b,winner\nzoo,cat,model_a\nbee,zoo,model_a\n")
    plain, rotated = Store(tmp_path / "plain"), Store(tmp_path / "rotated")
    plain.ingest([battles], "battles")
    rotated.ingest([other, battles], "battles")
    orders = []
    for store in (plain, rotated):
        stats = reduce_store(store, "battles", {"pairwise"})
        names = store.dictionary("agents").names
        by_key = stats.agents[np.argsort(stats.agent_keys)]
        orders.append([names[a] for a in by_key])
    assert orders[0] == ["ant", "bee", "cat"] and orders[1] == ["ant", "bee", "cat", "zoo"]


def test_agent_keys_default_to_id_order_and_are_checked():
    from pipeline.stats import Statistics

    assert Statistics("ballots", np.array([2, 5]), np.ones(2)).agent_keys.tolist() == [0, 1]
    with pytest.raises(ValueError, match="agent_keys must be a permutation"):
        Statistics("ballots", np.array([2, 5]), np.ones(2), agent_keys=np.array([0, 0]))
