import numpy as np

from pipeline.backtest.units import load_units


def test_games_become_one_weak_order_per_game(small_games):
    store, games = small_games
    log = load_units(store, "games")
    assert log.units == 300 and log.table.num_rows == 300 * 7  # the fixture's 300 games of seven players
    assert np.all(np.diff(log.orders.offsets) == 7)
    names = store.dictionary("agents").names
    # Unit u is the game whose rows have row_unit == u; its weak order lists those players, best first.
    u = 17
    rows = log.table.filter(log.row_unit == u)
    members = log.orders.agents[log.orders.offsets[u]: log.orders.offsets[u + 1]]
    assert sorted(members.tolist()) == sorted(rows.column("player").to_pylist())
    best = rows.column("score").to_numpy().max()
    assert names[members[0]] in {names[p] for p, s in zip(rows.column("player").to_pylist(), rows.column("score").to_pylist()) if s == best}
    assert np.all(log.times >= 0)


def test_select_keeps_members_and_levels(crowd_battles):
    log_orders = load_units(crowd_battles, "battles").orders
    picked = log_orders.select(np.array([5, 2]))
    for k, u in enumerate([5, 2]):
        lo, hi = log_orders.offsets[u], log_orders.offsets[u + 1]
        assert picked.agents[picked.offsets[k]: picked.offsets[k + 1]].tolist() == log_orders.agents[lo:hi].tolist()
        assert picked.levels[picked.offsets[k]: picked.offsets[k + 1]].tolist() == log_orders.levels[lo:hi].tolist()


def test_battles_winner_ahead_and_ties_level(crowd_battles):
    log = load_units(crowd_battles, "battles")
    assert log.units == log.table.num_rows
    winner = log.table.column("winner").to_numpy()
    levels = log.orders.levels.reshape(-1, 2)
    assert np.all((levels[:, 0] == levels[:, 1]) == (winner >= 2))
