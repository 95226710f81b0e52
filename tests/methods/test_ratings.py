"""`Ratings`: lookups of store ids."""

import numpy as np

from pipeline.methods.ratings import Ratings


def test_positions_find_each_rated_id_and_mark_the_others():
    rng = np.random.default_rng(0)
    agents = rng.permutation(np.arange(0, 3000, 3))  # not sorted: ratings list agents as their method gave them
    ratings = Ratings.from_scores(agents, rng.normal(size=len(agents)))
    ids = rng.integers(-5, 3100, 5000)
    expected = {agent: row for row, agent in enumerate(agents.tolist())}
    assert ratings.positions(ids).tolist() == [expected.get(i, -1) for i in ids.tolist()]
    assert ratings.positions(np.zeros((0,), np.int64)).shape == (0,)


def test_no_rated_agent_gives_no_position():
    empty = Ratings.from_scores(np.zeros(0, np.int64), np.zeros(0))
    assert empty.positions(np.array([0, 7])).tolist() == [-1, -1]
