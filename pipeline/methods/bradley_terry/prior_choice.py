"""`m-elo:prior=auto`: the Gaussian prior chosen by held-out log-likelihood, k-fold over battles.

On a long-tailed log the prior decides the ratings of everyone with a handful of records (on WTA,
prior 0.01 puts players with 4 and 1 matches first, prior 1 gives a sensible top), and nothing in
the data says which to take unless one asks it to predict what it has not seen. Each cell's
battles are dealt at random to `FOLDS` folds (whole battles: a cell of n battles is split by a
multinomial draw, the fraction of a weighted record going with one more draw), seeded, in the
cells' canonical order (`Cells.from_counts` with the agents' name keys), so the choice does not
depend on store ids or workers. For every prior of `GRID` (1e-3 to 10, log-spaced: the scale of
a Gaussian prior in natural units, 1/variance), the model is fitted on all folds but one and
scored by the log-likelihood of the left-out fold's battles; the prior with the best mean
held-out log-likelihood per battle wins. Cost: len(GRID) x FOLDS fits, each started from the
previous prior's fit of its fold (priors from strongest to weakest). A log with fewer than
`MIN_BATTLES` battles is refused: every fold must hold a few.
"""

from __future__ import annotations

import numpy as np

from pipeline.methods.bradley_terry.core import Cells, evaluate, fit
from pipeline.methods.convergence import RatingError

GRID = tuple(float(p) for p in np.logspace(-3, 1, 9))  # 1e-3, 3.2e-3, ..., 10
FOLDS = 5
MIN_BATTLES = 4 * FOLDS  # fewer: folds of a battle or two say nothing
FOLD_TOL = 1e-4  # natural units: the held-out log-likelihood is flat at the optimum, so fits this close suffice


def fold_weights(cells: Cells, folds: int, rng: np.random.Generator) -> np.ndarray:
    """(folds, 3, cells): each cell's x wins, y wins and ties dealt to the folds, whole battles at random."""
    columns = np.stack([cells.x_wins, cells.y_wins, cells.ties])
    whole = np.floor(columns)
    dealt = rng.multinomial(whole.astype(np.int64).ravel(), np.full(folds, 1.0 / folds)).T.reshape(folds, *columns.shape)
    rest = columns - whole  # a weighted record's fraction goes to one fold
    dealt = dealt.astype(np.float64)
    at = rng.integers(folds, size=columns.shape)
    np.put_along_axis(dealt, at[None], np.take_along_axis(dealt, at[None], 0) + rest[None], 0)
    return dealt


def choose_prior(cells: Cells, *, davidson: bool, max_iter: int, seed: int = 0,
                 grid: tuple[float, ...] = GRID, folds: int = FOLDS) -> tuple[float, list[list[float]]]:
    """The prior of `grid` with the best mean held-out log-likelihood per battle over `folds` folds, and
    that curve: [prior, held-out log-likelihood per battle] pairs."""
    battles = float(cells.x_wins.sum() + cells.y_wins.sum() + cells.ties.sum())
    if battles < MIN_BATTLES:
        raise RatingError(f"m-elo: prior=auto needs at least {MIN_BATTLES} battles to cross-validate over {folds} folds, "
                          f"and the data has {battles:g}; give the prior (for example prior=1)")
    dealt = fold_weights(cells, folds, np.random.default_rng(seed))
    total = dealt.sum(axis=0)
    held_out = np.zeros(len(grid))
    for f in range(folds):
        train, test = cells.with_weights(*(total - dealt[f])), cells.with_weights(*dealt[f])
        start = None
        for i in sorted(range(len(grid)), key=lambda i: -grid[i]):  # strongest prior first: each fit starts the next
            start = fit(train, davidson=davidson, prior=grid[i], tol=FOLD_TOL, max_iter=max_iter, start=start)
            held_out[i] += evaluate(test, start.beta, start.log_nu, 0.0).log_likelihood
    curve = held_out / battles
    return grid[int(np.argmax(curve))], [[p, float(v)] for p, v in zip(grid, curve)]
