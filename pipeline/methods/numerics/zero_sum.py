"""The essential set of a symmetric zero-sum game [DL99]: the union of the supports of all its
optimal strategies, found by one LP. Maximal lotteries (the majority margins as the game) and
Nash averaging (its antisymmetric payoffs) both start from it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pipeline.methods.numerics import highs
from pipeline.stats.counts import Matrix


def essential_set(margins: Matrix) -> np.ndarray:
    """Boolean mask of the agents in the support of some maximal lottery (one LP)."""
    m = margins.shape[0]
    if m == 1:
        return np.ones(1, dtype=bool)
    scale = abs(margins).max()
    game = sp.csc_array(margins / scale if scale > 0 else margins)
    eye = sp.identity(m, format="csc")
    rows = sp.vstack([sp.hstack([game.T, sp.csc_array((m, m))]), sp.hstack([eye, -eye])], format="csc")
    solution = highs.solve("maximal-lotteries essential set", np.r_[np.zeros(m), -np.ones(m)], rows,
                           np.zeros(2 * m), np.full(2 * m, highs.INF),
                           np.zeros(2 * m), np.r_[np.full(m, highs.INF), np.ones(m)])
    return solution.x[m:] > 0.5
