"""`prior=auto`: the Gaussian prior on the ratings chosen by held-out log-likelihood, k-fold over battles.

Shared by m-Elo (`m_elo`), style control (`style_control`) and am-Elo (`am_elo`). On a long-tailed log
the prior decides the ratings of everyone with a handful of records (on WTA, prior 0.01 puts players
with 4 and 1 matches first, prior 1 gives a sensible top), and nothing in the data says which to take
unless one asks it to predict what it has not seen. A method hands `choose_prior` a stack of weight
columns over its cells (m-Elo: x wins, y wins, ties per pair; style control: the weight of each distinct
battle; am-Elo: x wins, y wins, ties per annotator and pair), in an order that does not depend on store
ids, and a function that fits its model at a prior on some weights and scores other weights. The battles
of each cell are dealt at random to `FOLDS` folds (`fold_weights`: whole battles, a cell of n battles
split by a multinomial draw, the fraction of a weighted record going with one more draw), seeded. For
every prior of `GRID` (1e-3 to 10, log-spaced: the scale of a Gaussian prior in natural units,
1/variance), the model is fitted on all folds but one and scored by the log-likelihood of the left-out
fold's battles; the prior with the best mean held-out log-likelihood per battle wins (`PriorChoice`,
whose `info` the method records: the value and the curve). Cost: len(GRID) x FOLDS fits, each given the
previous prior's fit of its fold to start from (priors from strongest to weakest). A log with fewer than
`MIN_BATTLES` battles is refused: every fold must hold a few.

A held-out battle may involve an agent (or, in am-Elo, an annotator) with no battle in the training
folds: each method scores it with what its fit says of such an agent, the prior's centre (rating 0,
the mean rating) and the average annotator (see the methods' docstrings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import Rule

GRID = tuple(float(p) for p in np.logspace(-3, 1, 9))  # 1e-3, 3.2e-3, ..., 10
FOLDS = 5
MIN_BATTLES = 4 * FOLDS  # fewer: folds of a battle or two say nothing
FOLD_TOL = 1e-4  # natural units: the held-out log-likelihood is flat at the optimum, so fits this close suffice
AUTO = "auto"  # prior=auto: the method chooses
PRIOR = Rule(lambda value: value == AUTO or (not isinstance(value, str) and value >= 0), "non-negative, or auto", texts=(AUTO,))

FitAndScore = Callable[[np.ndarray, np.ndarray, float, Any], tuple[Any, float]]
"""(training weight columns, held-out weight columns, prior, the previous prior's fit on these folds or None)
-> (the fit, the held-out battles' log-likelihood under it)."""


@dataclass(frozen=True)
class PriorChoice:
    prior: float
    curve: list[list[float]]  # [prior, held-out log-likelihood per battle] pairs, in the grid's order

    def info(self) -> dict[str, object]:
        """What run.json records of the choice."""
        return {"prior": self.prior, "prior_chosen_by": f"held-out log-likelihood per battle, {FOLDS}-fold over battles",
                "prior_curve": self.curve}


def fold_weights(columns: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """(folds, *columns.shape): each weight of `columns` dealt to the folds, whole battles at random."""
    whole = np.floor(columns)
    dealt = rng.multinomial(whole.astype(np.int64).ravel(), np.full(folds, 1.0 / folds)).T.reshape(folds, *columns.shape)
    rest = columns - whole  # a weighted record's fraction goes to one fold
    dealt = dealt.astype(np.float64)
    at = rng.integers(folds, size=columns.shape)
    np.put_along_axis(dealt, at[None], np.take_along_axis(dealt, at[None], 0) + rest[None], 0)
    return dealt


def choose_prior(columns: np.ndarray, fit_and_score: FitAndScore, *, method: str, seed: int = 0,
                 grid: tuple[float, ...] = GRID, folds: int = FOLDS) -> PriorChoice:
    """The prior of `grid` with the best mean held-out log-likelihood per battle over `folds` folds of the
    weights `columns` (any shape; their sum is the number of battles), fitted and scored by `fit_and_score`."""
    columns = np.asarray(columns, dtype=np.float64)
    battles = float(columns.sum())
    if battles < MIN_BATTLES:
        raise RatingError(f"{method}: prior=auto needs at least {MIN_BATTLES} battles to cross-validate over {folds} folds, "
                          f"and the data has {battles:g}; give the prior (for example prior=1)")
    dealt = fold_weights(columns, folds, np.random.default_rng(seed))
    total = dealt.sum(axis=0)
    held_out = np.zeros(len(grid))
    for f in range(folds):
        start = None
        for i in sorted(range(len(grid)), key=lambda i: -grid[i]):  # strongest prior first: each fit starts the next
            start, score = fit_and_score(total - dealt[f], dealt[f], grid[i], start)
            held_out[i] += score
    curve = held_out / battles
    return PriorChoice(grid[int(np.argmax(curve))], [[p, float(v)] for p, v in zip(grid, curve)])
