"""The guide-table search of `pipeline.methods.numerics.resample.poisson_draws`, compiled [Dev86, ch. III.2.4].

Written over arrays in numpy, the search took about as long again as its uniforms twice over (a
gather for the guide, then rounds of gathers over the draws still pending, each a new array);
here it is one loop over a round's cells that starts from the guide and steps up the table
(WTA-like graph, 129k cells a round: the draws 1.8-2.6 ms a round to 1.1-1.5 ms, the uniforms
0.6 ms of it). The cells of weight 0 are listed apart rather than tested in the loop (a branch
taken at random: 1.7x slower). The same IEEE operations on the same uniforms give the same
draws, bit for bit. `resample` imports this module on first use, so that importing the methods
does not import numba; the compiled code is cached on disk by numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def invert(draws, drawn, skipped, group, guide, cdf, low, width):
    """Replace each uniform u of the cells `drawn` in `draws` (rounds x cells, in place) by its cell's Poisson
    quantile: the first value of the cell's table (`group`, per drawn cell: the table of its distinct weight,
    `width` entries from `low`) whose CDF exceeds u, searched from the guide's entry for the bucket of u;
    the cells `skipped` (weight 0: Poisson(0) is 0) are set to 0."""
    for r in range(draws.shape[0]):
        row = draws[r]
        for c in skipped:
            row[c] = 0.0
        for k in range(len(drawn)):
            c = drawn[k]
            u, base = row[c], group[k] * width
            pos = guide[base + np.int64(u * width)]
            while cdf[pos] <= u:
                pos += 1
            row[c] = low[group[k]] + (pos - base)
