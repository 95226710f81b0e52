"""m-Elo: maximum-likelihood Bradley-Terry ratings on the pairwise counts [BT52]; [AmElo, 4.1].

P(x beats y) = 1 / (1 + exp(-(b_x - b_y))) in natural units b; the log-likelihood is
[AmElo, eq. 2] with C = 1, summed over the count cells (N and T of [VasE, 3.1]), so a fit costs
the same for 10^3 or 10^8 battles. Ties count as half a win each way by default (`ties=half`);
`ties=davidson` fits the Davidson tie model [Dav70], P(tie) proportional to nu * sqrt(pi_x pi_y),
with nu estimated jointly (reported in `info`).

Fit: Newton's method with a backtracking line search on the concave log-likelihood, the
Hessian being a weighted graph Laplacian (dense Cholesky up to 2048 agents, conjugate gradients
on a sparse Laplacian beyond). It stops when the largest step is below `tol` (natural units)
and raises `ConvergenceError` after `max_iter` steps.

Scale and anchor: score = anchor + (scale / ln 10) * (b - mean(b)), so 400 Elo points are a
factor 10 in odds and the mean rated agent sits at `anchor` (1000). `info["logistic_scale"]`
is `scale`, so `Ratings.win_probability` gives P(x beats y) (ignoring ties).

Existence: with `prior=0` the MLE exists iff the graph "x beat y or tied with y" is strongly
connected (Zermelo; Ford 1957). Otherwise (an agent with no win or no loss, a comparison graph
in several pieces) the method raises `NoEstimate` naming the agents, instead of returning
ratings that drift to infinity. `prior=p` is a Gaussian prior N(0, 1/p) on each b (natural
units), i.e. the penalty p/2 * sum(b^2) (choix's `alpha` is p/2); it makes the estimate exist
for any data, and p = 0.01 moves well-observed agents by a negligible amount.

Bootstrap (`bootstrap=R`, default 1000; 0 disables): each round redraws every count cell (x beat
y, y beat x, tie) as Poisson(cell weight), the Poisson bootstrap: each battle of weight 1 gets a
Poisson(1) weight, which approximates resampling battles with replacement (the multinomial) and
costs one draw per cell instead of one per battle (a weighted cell is treated as that many
battles; draws by `pipeline.methods.resample`). Every round refits from the full-data estimate
and reports 2.5% and 97.5% percentiles as `ci_low`, `ci_high`, and `rank_ci` = 1 + the number
of agents whose lower bound is above the agent's upper bound. Rounds run on Dask in seeded
chunks (`pipeline.methods.fanout`); rounds whose resample has no MLE are dropped and counted in
`info["bootstrap_dropped"]`. With ties=half and at most DENSE_MAX_AGENTS agents, the rounds of
a chunk are fitted together by the chord method [OR70, 10.1]: Newton steps that reuse the
full-data Hessian, with the same stopping rule (largest step below `tol`) and the plain Newton
fit as the fallback (`bootstrap_intervals`); it gives the plain path's intervals to about `tol`.

Games: `games=pairs` fits the pairs of each game with the game's weight (a 7-player game is 21
comparisons); `games=player` weights each pair 1/(L-1) (see `pipeline.stats.game_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.methods.fanout import fan_out
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.methods.resample import poisson_draws
from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.game_pairs import PerGameCounts
from pipeline.arrays import sum_by_key
from pipeline.stats.partials import DENSE_MAX_AGENTS

LN10 = float(np.log(10.0))
TIES = ("half", "davidson")


@dataclass(frozen=True, eq=False)
class Cells:
    """Unordered pairs x < y (local agents) with the weight of x's wins, y's wins and ties."""

    n: int
    x: np.ndarray
    y: np.ndarray
    x_wins: np.ndarray
    y_wins: np.ndarray
    ties: np.ndarray

    @classmethod
    def from_counts(cls, pairs: PairwiseCounts) -> Cells:
        n = pairs.n
        wins, ties = sp.coo_array(pairs.wins), sp.coo_array(pairs.ties)
        upper = ties.row < ties.col
        rows = np.concatenate([wins.row, ties.row[upper]]).astype(np.int64)
        cols = np.concatenate([wins.col, ties.col[upper]]).astype(np.int64)
        values = np.zeros((len(rows), 3))
        k = len(wins.data)
        first = rows[:k] < cols[:k]
        values[:k, 0] = np.where(first, wins.data, 0.0)
        values[:k, 1] = np.where(first, 0.0, wins.data)
        values[k:, 2] = ties.data[upper]
        keys, values = sum_by_key(np.minimum(rows, cols) * n + np.maximum(rows, cols), values)
        keep = values.sum(axis=1) > 0
        keys, values = keys[keep], values[keep]
        return cls(n, keys // n, keys % n, values[:, 0].copy(), values[:, 1].copy(), values[:, 2].copy())

    def half(self) -> tuple[np.ndarray, np.ndarray]:
        """Effective wins with each tie counted as half a win for both sides."""
        return self.x_wins + self.ties / 2, self.y_wins + self.ties / 2


@dataclass(frozen=True)
class Fit:
    beta: np.ndarray  # natural units, centred
    log_nu: float | None  # Davidson's tie parameter, None for ties=half
    iterations: int
    log_likelihood: float


def existence_problems(cells: Cells, davidson: bool = False) -> tuple[str, list[int]] | None:
    """Why the unpenalised MLE does not exist (message, local agents), or None if it does."""
    wx, wy = cells.half()
    n = cells.n
    beat = sp.csr_array((np.r_[wx, wy], (np.r_[cells.x, cells.y], np.r_[cells.y, cells.x])), shape=(n, n))
    beat.eliminate_zeros()
    strong, _ = connected_components(beat, directed=True, connection="strong")
    if strong > 1 or n < 2:
        pieces, _ = connected_components(beat, directed=False)
        won = np.asarray(beat.sum(axis=1)).ravel() > 0
        lost = np.asarray(beat.sum(axis=0)).ravel() > 0
        bad = sorted(set(np.flatnonzero(~won).tolist()) | set(np.flatnonzero(~lost).tolist()))
        return (f"agents without a win: {np.flatnonzero(~won).tolist()}; agents without a loss: "
                f"{np.flatnonzero(~lost).tolist()}; the comparison graph has {pieces} connected piece(s) and "
                f"{strong} strongly connected piece(s)", bad)
    if davidson and (cells.ties.sum() == 0 or (cells.x_wins.sum() + cells.y_wins.sum()) == 0):
        return "the Davidson tie parameter needs both ties and decisive results", []
    return None


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    """u . v without BLAS: a threaded BLAS dot stalls when the cores are busy (measured 13 ms instead of
    1.5 ms per evaluation on 20k cells under load; threadpoolctl is not a dependency)."""
    return float(np.sum(u * v))


def _evaluate(cells: Cells, beta: np.ndarray, log_nu: float | None, prior: float):
    """Log-likelihood, per-cell d(loglik)/dd and -d2/dd2, and the Davidson terms (or None)."""
    d = beta[cells.x] - beta[cells.y]
    penalty = prior / 2 * float(beta @ beta)
    if log_nu is None:
        wx, wy = cells.half()
        ll = -(_dot(wx, np.logaddexp(0.0, -d)) + _dot(wy, np.logaddexp(0.0, d))) - penalty
        p = expit(d)
        c = wx + wy
        return ll, wx - c * p, c * p * (1 - p), None
    c = cells.x_wins + cells.y_wins + cells.ties
    lz = np.logaddexp(np.logaddexp(d / 2, -d / 2), log_nu)
    ll = _dot(cells.x_wins, d / 2 - lz) + _dot(cells.y_wins, -d / 2 - lz) + _dot(cells.ties, log_nu - lz) - penalty
    q1, q2, q3 = np.exp(d / 2 - lz), np.exp(-d / 2 - lz), np.exp(log_nu - lz)
    m = (q1 - q2) / 2
    davidson = (float(cells.ties.sum()) - _dot(c, q3), _dot(c, q3 - q3 * q3), c * (-m * q3))
    return ll, (cells.x_wins - cells.y_wins) / 2 - c * m, c * ((q1 + q2) / 4 - m * m), davidson


def _spread(cells: Cells, per_cell: np.ndarray) -> np.ndarray:
    """Sum of a per-cell quantity into agent x with sign +, agent y with sign -."""
    return np.bincount(cells.x, per_cell, minlength=cells.n) - np.bincount(cells.y, per_cell, minlength=cells.n)


def _laplacian_solve(cells: Cells, h: np.ndarray, prior: float, rhs: np.ndarray, rtol: float = 1e-13) -> np.ndarray:
    """Solve (L_h + prior I) X = rhs, L_h the Laplacian with edge weights h; rhs columns sum to 0 if prior = 0.

    Dense systems are solved exactly; sparse ones by conjugate gradients to relative residual `rtol`."""
    n = cells.n
    degree = np.bincount(cells.x, h, minlength=n) + np.bincount(cells.y, h, minlength=n) + prior
    if n <= DENSE_MAX_AGENTS:
        a = np.zeros((n, n))
        a.flat[cells.x * n + cells.y] = -h
        a += a.T
        a.flat[:: n + 1] = degree
        if prior == 0:
            a += degree.mean() / n  # pins the mean: (L + c 11') x = g with 1'g = 0 gives the centred solution
        return np.linalg.solve(a, rhs)
    lap = sp.csr_array((np.r_[-h, -h, degree], (np.r_[cells.x, cells.y, np.arange(n)], np.r_[cells.y, cells.x, np.arange(n)])),
                       shape=(n, n))
    jacobi = sp.diags_array(1.0 / degree)
    out = np.empty_like(rhs)
    for col in range(rhs.shape[1]):
        b = rhs[:, col] - (rhs[:, col].mean() if prior == 0 else 0.0)
        out[:, col], info = spla.cg(lap, b, rtol=rtol, maxiter=10 * n, M=jacobi)
        if info != 0:
            raise ConvergenceError(f"conjugate gradients did not converge on the {n}-agent Newton system")
    return out - out.mean(axis=0) if prior == 0 else out


def fit(cells: Cells, *, davidson: bool = False, prior: float = 0.0, tol: float = 1e-10, max_iter: int = 100,
        start: Fit | None = None) -> Fit:
    """Newton's method on the (penalised) log-likelihood; the caller checks existence when prior = 0."""
    beta = np.zeros(cells.n) if start is None else start.beta.copy()
    log_nu = None
    if davidson:
        log_nu = start.log_nu if start is not None and start.log_nu is not None else 0.0
    ll, r, h, dav = _evaluate(cells, beta, log_nu, prior)
    first = None
    for iteration in range(1, max_iter + 1):
        grad = _spread(cells, r) - prior * beta
        # Inexact Newton [EW96]: solve loosely while the gradient is large, to 1e-13 as it vanishes.
        size = float(np.abs(grad).max(initial=0.0))
        first = first or size or 1.0
        rtol = min(1e-2, max(1e-13, size / first))
        if dav is None:
            step = _laplacian_solve(cells, h, prior, grad[:, None], rtol)[:, 0]
            step_nu = 0.0
        else:
            g_nu, h_nu, h_cross = dav
            u = _spread(cells, h_cross)
            solved = _laplacian_solve(cells, h, prior, np.column_stack([grad, u]))
            step_nu = (g_nu - u @ solved[:, 0]) / (h_nu - u @ solved[:, 1])
            step = solved[:, 0] - solved[:, 1] * step_nu
        t = 1.0
        while True:
            trial_nu = None if log_nu is None else log_nu + t * step_nu
            trial = _evaluate(cells, beta + t * step, trial_nu, prior)
            if trial[0] >= ll - 1e-13 * (abs(ll) + 1) or t < 1e-12:
                break
            t /= 2
        beta, log_nu = beta + t * step, trial_nu
        ll, r, h, dav = trial
        if max(np.abs(t * step).max(initial=0.0), abs(t * step_nu)) < tol:
            return Fit(beta - beta.mean() if prior == 0 else beta, log_nu, iteration, ll)
    raise ConvergenceError(f"Newton's method did not converge in {max_iter} iterations (tol={tol})")


def check_and_fit(cells: Cells, agents: np.ndarray, name: str, **options) -> Fit:
    if options.get("prior", 0.0) == 0:
        problem = existence_problems(cells, options.get("davidson", False))
        if problem is not None:
            message, local = problem
            raise NoEstimate(f"{name}: the maximum-likelihood ratings do not exist ({message}; local ids, store ids "
                             f"{agents[local].tolist()}); use {name}:prior=0.01 for a small Gaussian prior", agents[local].tolist())
    return fit(cells, **options)


def elo_points(beta: np.ndarray, scale: float, anchor: float) -> np.ndarray:
    """Elo points, rounded to 1e-9: agents with the same record get the same rating (and rank),
    not two ratings that differ in the solver's last bits."""
    return np.round(anchor + scale / LN10 * (beta - beta.mean(axis=-1, keepdims=True)), 9)


@dataclass(frozen=True, eq=False)
class _Resample:
    cells: Cells
    full: Fit
    options: dict
    chord: tuple[np.ndarray, np.ndarray] | None  # `_chord_operator`, or None for the plain path


def _draw(cells: Cells, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson(weight) redraws of every cell, (cells, rounds) each: x's wins, y's wins, ties."""
    draws = poisson_draws(np.concatenate([cells.x_wins, cells.y_wins, cells.ties]), size, rng).T
    c = len(cells.x)
    return draws[:c], draws[c: 2 * c], draws[2 * c:]


def _resampled(cells: Cells, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> Cells:
    return replace(cells, x_wins=x_wins, y_wins=y_wins, ties=ties)


def _fit_or_nan(job: _Resample, sample: Cells) -> np.ndarray:
    """One resample by the plain path: existence check (prior = 0), then Newton from the full-data fit."""
    if job.options["prior"] == 0 and existence_problems(sample, job.options["davidson"]) is not None:
        return np.full(sample.n, np.nan)
    return fit(sample, start=job.full, **job.options).beta


def _bootstrap_chunk(job: _Resample, size: int, rng: np.random.Generator) -> np.ndarray:
    """Natural-unit estimates of `size` resamples (NaN rows where the MLE does not exist)."""
    cells, draws = job.cells, _draw(job.cells, size, rng)
    if job.chord is None:
        return np.array([_fit_or_nan(job, _resampled(cells, *(d[:, k] for d in draws))) for k in range(size)])
    return _chord_rounds(job, *draws)


def _chord_rounds(job: _Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """All rounds of a chunk at once by the chord method [OR70, 10.1]: Newton steps with the full-data Hessian.

    Every round starts at the full-data estimate and iterates b <- b + H0^-1 g(b), H0 the
    (penalised) Hessian at that estimate, inverted once: the resamples' Hessians differ from it by
    a few per cent, so each step shrinks the error by about that factor, and the convergence test
    is the plain path's (largest step below `tol`). A round whose steps do not shrink by half goes
    through the plain path (`_fit_or_nan`). Existence (prior = 0) is checked once per chunk on the
    "x beat y" edges present in every round of it: if they connect strongly, so does each round's
    graph; otherwise each round is checked alone.
    """
    cells, full, prior, tol = job.cells, job.full, job.options["prior"], job.options["tol"]
    wx, wy = x_wins + ties / 2, y_wins + ties / 2
    rounds = wx.shape[1]
    beta = np.full((cells.n, rounds), np.nan)
    plain = np.zeros(rounds, dtype=bool)
    fit_it, no_ties = np.ones(rounds, dtype=bool), np.zeros(len(cells.x))
    if prior == 0 and existence_problems(_resampled(cells, wx.min(axis=1), wy.min(axis=1), no_ties)) is not None:
        fit_it = np.array([existence_problems(_resampled(cells, wx[:, k], wy[:, k], no_ties)) is None for k in range(rounds)])
    inverse, p0 = job.chord
    index = np.arange(len(cells.x))
    incidence = sp.csr_array((np.r_[np.ones(len(index)), -np.ones(len(index))], (np.r_[cells.x, cells.y], np.r_[index, index])),
                             shape=(cells.n, len(index)))
    active = np.flatnonzero(fit_it)
    b, cx, cc = np.repeat(full.beta[:, None], len(active), axis=1), wx[:, active], wx[:, active] + wy[:, active]
    previous = np.full(len(active), np.inf)
    for iteration in range(job.options["max_iter"]):
        if len(active) == 0:
            break
        p = p0[:, None] if iteration == 0 else 0.5 + 0.5 * np.tanh((b[cells.x] - b[cells.y]) / 2)  # expit, 2x faster
        step = inverse @ (incidence @ (cx - cc * p) - prior * b)
        b += step
        size = np.abs(step).max(axis=0)
        done, stalled = size < tol, size > previous / 2
        if (finished := done | stalled).any():
            beta[:, active[finished]] = b[:, finished]
            plain[active[stalled & ~done]] = True
            keep = ~finished
            active, b, cx, cc, previous = active[keep], b[:, keep], cx[:, keep], cc[:, keep], size[keep]
        else:
            previous = size
    plain[active] = True
    for k in np.flatnonzero(plain):
        beta[:, k] = _fit_or_nan(job, _resampled(cells, x_wins[:, k], y_wins[:, k], ties[:, k]))
    beta = beta.T
    return beta - beta.mean(axis=1, keepdims=True) if prior == 0 else beta


def _chord_operator(cells: Cells, full: Fit, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of the full-data (penalised) Hessian, and P(x beats y) per cell at the full-data estimate."""
    _, _, h, _ = _evaluate(cells, full.beta, None, prior)
    return _laplacian_solve(cells, h, prior, np.eye(cells.n)), expit(full.beta[cells.x] - full.beta[cells.y])


def bootstrap_intervals(cells: Cells, full: Fit, options: dict, rounds: int, seed: int, scale: float,
                        anchor: float, algorithm: str = "chord") -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """95% percentile intervals and interval-respecting ranks from `rounds` Poisson resamples.

    `algorithm="chord"` fits the rounds of a chunk together (`_chord_rounds`) where it applies
    (ties=half, at most DENSE_MAX_AGENTS agents), else each round alone; "newton" always fits
    each round alone (the reference). Both draw the same resamples and stop at the same `tol`.
    """
    if algorithm not in ("chord", "newton"):
        raise ValueError(f"bootstrap algorithm must be chord or newton, not {algorithm!r}")
    chord = None
    if algorithm == "chord" and not options["davidson"] and cells.n <= DENSE_MAX_AGENTS:
        chord = _chord_operator(cells, full, options["prior"])
    beta = fan_out(_bootstrap_chunk, _Resample(cells, full, options, chord), rounds, seed)
    kept = elo_points(beta[~np.isnan(beta).any(axis=1)], scale, anchor)
    if len(kept) == 0:
        raise NoEstimate("no bootstrap resample has a maximum-likelihood estimate; use a prior")
    low, high = np.percentile(kept, [2.5, 97.5], axis=0)
    rank_ci = 1 + (low[None, :] > high[:, None]).sum(axis=1)
    return ({"ci_low": low, "ci_high": high, "rank_ci": rank_ci.astype(np.int64)},
            {"bootstrap_rounds": rounds, "bootstrap_dropped": int(rounds - len(kept))})


@method("m-elo", needs=("pairwise", "pairwise_per_game"))
def m_elo(pairs: PairwiseCounts, per_game: PerGameCounts, *, ties: str = "half", prior: float = 0.0,
          bootstrap: int = 1000, seed: int = 0, scale: float = 400.0, anchor: float = 1000.0, games: str = "pairs",
          tol: float = 1e-10, max_iter: int = 100) -> Ratings:
    """m-Elo: Bradley-Terry maximum likelihood on the pairwise counts, with bootstrap intervals."""
    if ties not in TIES:
        raise ValueError(f"m-elo: ties must be one of {', '.join(TIES)}, not {ties!r}")
    if prior < 0 or bootstrap < 0 or scale <= 0:
        raise ValueError("m-elo: prior and bootstrap must be non-negative and scale positive")
    counts = per_game.choose(pairs, games)
    cells = Cells.from_counts(counts)
    options = {"davidson": ties == "davidson", "prior": prior, "tol": tol, "max_iter": max_iter}
    full = check_and_fit(cells, counts.agents, "m-elo", **options)
    info: dict[str, object] = {"logistic_scale": scale, "anchor": f"mean rating = {anchor}",
                               "iterations": full.iterations, "log_likelihood": full.log_likelihood}
    if full.log_nu is not None:
        info["davidson_nu"] = float(np.exp(full.log_nu))
    extras: dict[str, np.ndarray] = {}
    if bootstrap:
        extras, summary = bootstrap_intervals(cells, full, options, bootstrap, seed, scale, anchor)
        info |= summary
    return Ratings.from_scores(counts.agents, elo_points(full.beta, scale, anchor), extras=extras, info=info)
