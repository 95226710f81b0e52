"""The widest-path (Floyd-Warshall) steps of Schulze's strongest paths [Sch11, section 2.3], compiled.

Written in numpy, each step k built two m x m temporaries (the min of column k and row k, then the
max with the paths): memory traffic, about 100 CPU s for WTA's 2,692 players. Here a step is one pass
over the rows that reach k (a row with P(i, k) = 0 cannot gain through k), on the paths' ranks among
their distinct values rather than on the values: min and max commute with any increasing map, so the
ranks' widest paths are the values' exactly, in 2 or 4 bytes a cell (WTA: 19 distinct values, 2.0 CPU
s). Row and column k do not change in step k (P(k, k) bounds nothing below P(k, j)), so they are
read in place. `schulze` imports this module on first use, so that importing the methods does not
import numba; the compiled code is cached on disk by numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def widen(paths: np.ndarray, first: int, stop: int) -> None:
    """Steps `first` to `stop` - 1 of the widest-path Floyd-Warshall, in place:
    P(i, j) = max(P(i, j), min(P(i, k), P(k, j)))."""
    m = paths.shape[0]
    for k in range(first, stop):
        through = paths[k]
        for i in range(m):
            to_k = paths[i, k]
            if to_k == 0:
                continue
            row = paths[i]
            for j in range(m):
                wider = min(to_k, through[j])
                if wider > row[j]:
                    row[j] = wider
