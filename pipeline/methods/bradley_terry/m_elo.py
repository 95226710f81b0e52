"""m-Elo: maximum-likelihood Bradley-Terry ratings on the pairwise counts [BT52]; [AmElo, 4.1].

The model, the fit and its stopping rules are `pipeline.methods.bradley_terry.core`'s. Ties count as
half a win each way by default (`ties=half`); `ties=davidson` fits the Davidson tie model
[Dav70], with nu reported in `info`. Newton stops when its largest step is at most `tol`
(natural units; the ratings are then accurate to about tol^2) or at the precision floor
(`info["stopped"]`); every number is the same whatever the weights' scale.

Scale and anchor: score = anchor + (scale / ln 10) * (b - mean(b)), so 400 Elo points are a
factor 10 in odds and the mean rated agent sits at `anchor` (1000). `info["logistic_scale"]`
is `scale`, so `Ratings.win_probability` gives P(x beats y) (ignoring ties).

Existence: with `prior=0` the MLE exists iff the graph "x beat y or tied with y" is strongly
connected (Zermelo; Ford 1957). Otherwise (an agent with no win or no loss, a comparison graph
in several pieces, a single agent) the method raises `NoEstimate` naming the agents, instead of
returning ratings that drift to infinity. `prior=p` is a Gaussian prior N(0, 1/p) on each b
(natural units), i.e. the penalty p/2 * sum(b^2) (choix's `alpha` is p/2); it makes the
estimate exist for any data, and p = 0.01 moves well-observed agents by a negligible amount. A
prior is worth a fixed number of battles, so with `prior > 0` the ratings depend on the scale of
the weights.

Bootstrap (`bootstrap=R`, default 1000; 0 disables): each round redraws every count cell (x beat
y, y beat x, tie) as Poisson(cell weight), the Poisson bootstrap: each battle of weight 1 gets a
Poisson(1) weight, which approximates resampling battles with replacement (the multinomial) and
costs one draw per cell instead of one per battle (a weighted cell is treated as that many
battles, so intervals narrow as the weights grow; draws by `pipeline.methods.numerics.resample`). Cells
are drawn in the canonical order of their agents' names, so the intervals do not depend on the
ids a store assigned. Every round refits from the full-data estimate, to steps of `ROUND_TOL` (or
`tol` if looser): its ratings are then within about 1e-5 natural units (0.002 Elo points) of its
exact fit, a hundredth or less of the Monte Carlo error of a 1000-round percentile, at two thirds of
the CPU a round solved to the default `tol` takes at Diplomacy scale. The rounds report 2.5% and 97.5%
percentiles as `ci_low`, `ci_high`, and `rank_ci` = 1 + the number of agents whose lower bound
is above the agent's upper bound. Scores closer than a fit's step tolerance in Elo points
(`bradley_terry.elo_tolerance`, `info["tie_tolerance"]` for the full-data ranks) share a rank, in the
full-data ranks, a round's ranks and `rank_ci`: structurally tied agents (the same record, or no
comparisons in a round, at the prior's centre) are not ranked apart by the solver's last digits.
Rounds run in seeded chunks (`pipeline.methods.numerics.fanout`) on the Dask client the registry passes
(local threads without one); rounds whose resample has no MLE are dropped and counted in
`info["bootstrap_dropped"]`, rounds whose fit did not converge in `info["bootstrap_unconverged"]`.
With ties=half the rounds of a chunk are fitted by the path a model of their cost picks
(`chord_is_cheaper`, with a memory bound): the chord method [OR70, 10.1], all rounds of a chunk at
once by Newton steps that reuse the full-data Hessian's dense inverse, stopping when the largest
step is at most a hundredth of the rounds' tolerance (while the steps at least halve,
so the error is then below that), with Newton as the fallback, where every agent has enough
comparisons for the resamples' Hessians to stay close to the full-data one; otherwise Newton
round by round (`_newton_rounds`, compiled in `pipeline.methods.bradley_terry.newton`: the same
steps and stopping rules as a plain fit, warm-started by a few nonlinear Jacobi sweeps, each
system solved by conjugate gradients preconditioned by symmetric Gauss-Seidel on the round's own
Hessian [Eis81], started from a coarse guess over blocks of the agents [Nic87]).

One-step bootstrap (`refit=onestep`; the default `refit=exact` is the above): each round takes the
same draws and, from the full-data estimate, the same nonlinear Jacobi sweeps as a compiled Newton round,
then ONE Newton step on its own gradient and Hessian, no line search (`newton.one_step`; the one-step
bootstrap of [And02], whose error against the round's exact fit is of the order of the next Newton step),
its system solved to a relative residual of `ONE_STEP_RTOL`. Ties=half only. Validated against the exact
bootstrap on the same draws (docs/design-notes.md): the endpoints within 10% of the exact interval's width
for at least 99% of the agents.

Style control (`covariates=len,md`, battles whose files give those features): ratings and
coefficients fitted jointly, with bootstrap intervals, by `pipeline.methods.bradley_terry.style_control`
(`prior=auto` too).

Prior chosen by evidence (`prior=auto`): `pipeline.methods.bradley_terry.prior_choice`, 5-fold over battles; `info`
records the value chosen (`prior`) and the curve (`prior_curve`).

Time (`half_life_days=D`, default inf: none): each battle weighed by 0.5 ** (age in days / D), age from the
newest battle rated. The weights are applied in the reduction (`pipeline.stats.recency`), so the counts
here are the weighted ones and the fit, its prior and its bootstrap are those of any weighted counts: the
exact weighted maximum likelihood. The registry refuses counts weighed by another half-life than the spec's.

Games: `games=pairs` fits the pairs of each game with the game's weight (a 7-player game is 21
comparisons); `games=player` weights each pair 1/(L-1) (see `pipeline.stats.game_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.special import expit

from pipeline.methods.bradley_terry.core import STEP_TOL, Cells, Fit, dense_fits, dense_hessian, dense_solve, elo_points, elo_tolerance, evaluate, existence_problems, fit, fit_or_refuse, incidence
from pipeline.methods.bradley_terry.prior_choice import AUTO, FOLD_TOL, PRIOR, choose_prior
from pipeline.methods.bradley_terry.steps import Banded, SolveLog
from pipeline.methods.bradley_terry.style_control import parse_covariates, style_controlled
from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.methods.numerics.fanout import fan_out
from pipeline.methods.numerics.resample import PoissonTable, ranks_by_round, score_interval_columns
from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.methods.registry import POSITIVE, ROUNDS, Rule, at_least, method, one_of
from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.features import BattleFeatures
from pipeline.stats.game_pairs import PAIR_WEIGHTINGS, PerGameCounts
from pipeline.stats.recency import HALF_LIFE, NO_DECAY

TIES = ("half", "davidson")
FITTED, NO_ESTIMATE, UNCONVERGED = 0.0, 1.0, 2.0  # status of a bootstrap round (last column of its row)
ROUND_TOL = 1e-3  # natural units (0.17 Elo points): a bootstrap round stops at steps this short (see the docstring)
ROUND_BLOCK = 1 << 22  # cells x rounds taken together from the draws (32 MB per array)
REFITS = ("exact", "onestep")  # refit=: each round fitted to convergence, or one Newton step from the full-data fit
ONE_STEP = "onestep"
ONE_STEP_RTOL = 3e-2  # relative residual of a one-step round's Newton system: the step errs by about this share, below
#                       its own distance from the round's exact fit (the same endpoints as 1e-3 within 0.2% of the
#                       agents on WTA 2021-2024 and Diplomacy-scale, at 0.73-0.88x the CPU; docs/design-notes.md)
CHORD_SHARE = 1e-2  # the chord method stops at steps of CHORD_SHARE * tol: its error is then below that
CHORD_SPREAD = 5.0  # the chord's worst error factor per step: this many relative standard deviations of a
#                     resampled agent's total weight (Poisson: 1 / sqrt(weight)); at 1/2 or more it is not tried
#                     (with 3, pools whose lightest agent had 37-64 comparisons sent 16-82% of the rounds on to Newton)
# The price of a bootstrap round on each path (`round_costs`), in flops of a product with the Hessian
# (2 (2 pairs + n) each), fitted to the CPU per round measured by benchmarks/bench_chord_switch.py
# (pools of 12 to 2,692 agents; see docs/design-notes.md):
NEWTON_PRODUCTS = 35  # a compiled Newton round to ROUND_TOL, measured 17-60 products' worth (2-6 steps, 2-25 CG iterations)
NEWTON_OVERHEAD = 60_000  # its fixed cost (Python calls), what a 12-agent round costs beyond its products
CHORD_STEP_PRODUCTS = 6.5  # a chord step's passes over the cells x rounds of a block (measured 3-7 products,
#                            the most where those arrays outgrow the cache)
CHORD_SPEEDUP = 5  # its product with the dense n x n inverse: BLAS-3 over the rounds, per flop this many
#                    times cheaper than a product with the Hessian


@dataclass(frozen=True, eq=False)
class Resample:
    """What every bootstrap chunk needs: the cells, the full-data fit, the fit options."""

    cells: Cells
    full: Fit
    options: dict
    path: str  # "chord" (`_chord_rounds`), "rounds" or ONE_STEP (`_newton_rounds`) or "plain" (`_fit_round` per round)
    chord: tuple[np.ndarray, np.ndarray] | None  # `chord_operator` on the chord path
    banded: Banded  # the agents renumbered for Newton per round (and the chord's fallback), with the Hessian's pattern
    table: PoissonTable  # of the cells' x wins, then y wins, then ties: built once for every chunk
    scale: float  # of the Elo points, whose ranks each chunk reads off its rounds
    anchor: float


def _draw(job: Resample, out: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson(weight) redraws of every cell for `len(out)` rounds, into `out` (rounds x 3 cells), as
    (cells, rounds) views: x's wins, y's wins, ties."""
    draws = job.table.draws(len(out), rng, out).T
    c = len(job.cells.x)
    return draws[:c], draws[c: 2 * c], draws[2 * c:]


def _fit_round(job: Resample, sample: Cells) -> np.ndarray:
    """One resample by the plain path: existence check (prior = 0), then Newton from the full-data fit;
    the estimate followed by its status."""
    if job.options["prior"] == 0 and existence_problems(sample, job.options["davidson"]) is not None:
        return np.r_[np.full(sample.n, np.nan), NO_ESTIMATE]
    try:
        return np.r_[fit(sample, start=job.full, **job.options).beta, FITTED]
    except ConvergenceError:
        return np.r_[np.full(sample.n, np.nan), UNCONVERGED]


def _plain_rounds(job: Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rounds of a block by the plain path, one at a time (`_fit_round`), and `_present`."""
    return np.array([_fit_round(job, job.cells.with_weights(x_wins[:, k], y_wins[:, k], ties[:, k]))
                     for k in range(x_wins.shape[1])]), _present(job, x_wins, y_wins, ties)


def _present(job: Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Rounds x agents: whether the round drew a record of the agent."""
    touches = abs(incidence(job.cells))  # agent x cell: 1 where the agent is in the cell
    drawn = x_wins.T + y_wins.T + ties.T  # rounds x cells, each round's row contiguous: a product per row, no copy
    return np.stack([touches @ row for row in drawn]) > 0


def round_rows(agents: int) -> np.dtype:
    """A bootstrap round's row as the workers send it: the Elo points, their ranks as float32 (competition ranks
    are integers, exact in float32 below 2^24 agents, and NaN where absent: a quarter less to send, 1000 rounds of
    53k agents 640 MB instead of 850, and not a bit of the intervals changed), the round's status."""
    return np.dtype([("points", np.float64, (agents,)), ("ranks", np.float32, (agents,)), ("status", np.float64)])


def _bootstrap_chunk(job: Resample, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` resamples, one row each (`round_rows`): the Elo points, their ranks (`resample.ranks_by_round`: on
    the workers, 6 s a thousand rounds of 53k agents), then the round's status. The rounds are drawn and
    fitted a block at a time, the draws into one buffer of about ROUND_BLOCK numbers per kind of
    count: the same uniforms in the same order as drawing the chunk at once (rounds row by row), and
    at Diplomacy scale 93 MB instead of a fresh 776 MB a chunk of 50 rounds, whose first touch cost
    more than the draws."""
    fit_block = {"plain": _plain_rounds, "chord": _chord_rounds, "rounds": _newton_rounds, ONE_STEP: _newton_rounds}[job.path]
    width = max(1, ROUND_BLOCK // max(1, len(job.cells.x)))
    buffer = np.empty((min(width, size), 3 * len(job.cells.x)))
    blocks, present = [], []
    for lo in range(0, size, width):
        x_wins, y_wins, ties = _draw(job, buffer[: min(width, size - lo)], rng)
        rows, drew = fit_block(job, x_wins, y_wins, ties)  # and rounds x agents: whether it drew a record of the agent
        blocks.append(rows)
        present.append(drew)
    rows = np.concatenate(blocks)
    points = elo_points(rows[:, :-1], job.scale, job.anchor)
    ranks = ranks_by_round(points, elo_tolerance(job.options["tol"], job.scale))
    absent = ~np.concatenate(present)  # absent is not measured (`interval_columns`)
    points[absent] = ranks[absent] = np.nan
    out = np.empty(len(rows), dtype=round_rows(job.cells.n))
    out["points"], out["ranks"], out["status"] = points, ranks, rows[:, -1]
    return out


def _chord_rounds(job: Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All rounds of a chunk at once by the chord method [OR70, 10.1]: Newton steps with the full-data Hessian.

    Every round starts at the full-data estimate and iterates b <- b + H0^-1 g(b), H0 the
    (penalised) Hessian at that estimate, inverted once: the resamples' Hessians differ from it by
    a few per cent, so each step shrinks the error by about that factor. A round stops when its
    largest step is at most CHORD_SHARE * tol (natural units; while the steps at least halve, the
    error is then below that, 1e-5 at `ROUND_TOL`: linear convergence, so it stops later than
    Newton's quadratic one, whose last step of `tol` leaves an error of about tol^2); a round whose
    steps do not shrink by half is fitted by Newton (`_newton_rounds`). Existence: `_existence`. With the rows,
    `_present`.
    """
    cells, full, prior, tol = job.cells, job.full, job.options["prior"], job.options["tol"]
    wx, wy = x_wins + ties / 2, y_wins + ties / 2
    rounds = wx.shape[1]
    out = np.full((rounds, cells.n + 1), np.nan)
    out[:, -1] = _existence(job, x_wins, y_wins, ties)
    plain = np.zeros(rounds, dtype=bool)
    inverse, p0 = job.chord
    edges = incidence(cells)
    active = np.flatnonzero(out[:, -1] == FITTED)
    b, cx, cc = np.repeat(full.beta[:, None], len(active), axis=1), wx[:, active], wx[:, active] + wy[:, active]
    previous = np.full(len(active), np.inf)
    for iteration in range(job.options["max_iter"]):
        if len(active) == 0:
            break
        p = p0[:, None] if iteration == 0 else 0.5 + 0.5 * np.tanh((b[cells.x] - b[cells.y]) / 2)  # expit, 2x faster
        step = inverse @ (edges @ (cx - cc * p) - prior * b)
        b += step
        size = np.abs(step).max(axis=0)
        done, stalled = size <= CHORD_SHARE * tol, size > previous / 2
        if (finished := done | stalled).any():
            out[active[finished], :-1] = b[:, finished].T
            plain[active[stalled & ~done]] = True
            keep = ~finished
            active, b, cx, cc, previous = active[keep], b[:, keep], cx[:, keep], cc[:, keep], size[keep]
        else:
            previous = size
    plain[active] = True
    if plain.any():
        out[plain] = _newton_rounds(job, x_wins[:, plain], y_wins[:, plain], ties[:, plain])[0]
    if prior == 0:
        out[:, :-1] -= out[:, :-1].mean(axis=1, keepdims=True)
    return out, _present(job, x_wins, y_wins, ties)


def _existence(job: Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """FITTED or NO_ESTIMATE per round (columns of the redrawn counts). With prior = 0 the check
    runs once per chunk on the "x beat y" edges present in every round of it: if they connect
    strongly, so does each round's graph; otherwise each round is checked alone."""
    cells, rounds = job.cells, x_wins.shape[1]
    status = np.full(rounds, FITTED)
    if job.options["prior"] == 0:
        wx, wy, no_ties = x_wins + ties / 2, y_wins + ties / 2, np.zeros(len(cells.x))
        if existence_problems(cells.with_weights(wx.min(axis=1), wy.min(axis=1), no_ties)) is not None:
            exists = [existence_problems(cells.with_weights(wx[:, k], wy[:, k], no_ties)) is None for k in range(rounds)]
            status[~np.array(exists)] = NO_ESTIMATE
    return status


def _newton_rounds(job: Resample, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rounds of a chunk by Newton's method (ties=half), one round at a time, compiled
    (`pipeline.methods.bradley_terry.newton.newton`): `fit`'s steps and stopping rules (largest step
    at most `tol`, or the precision floor; Armijo line search) from the full-data estimate, after a
    few nonlinear Jacobi sweeps; each Newton system solved by conjugate gradients with a symmetric
    Gauss-Seidel preconditioner built from the round's own Hessian, so every round converges to its
    own answer; the agents numbered by reverse Cuthill-McKee and the cells sorted by them (`Banded`,
    for memory locality), the ratings returned in the cells' order. The full-data Hessian is no use here: on sparse graphs an agent with one or two
    comparisons has a resampled curvature anywhere from 0 to several times its full-data one, so
    the chord method diverges, and as a preconditioner (even exactly factorised, or scaled to the
    round's diagonal) it needs more iterations than Gauss-Seidel on the round's own Hessian. Rounds
    whose line search fails or that run out of iterations are counted unconverged, as in `_fit_round`.
    A round's passes over the cells skip those it drew nothing from (`newton.Round`: the same bits), and its
    effective wins say which agents it drew (the rows' `_present`, by `newton.drawn_agents`).
    """
    from pipeline.methods.bradley_terry.newton import Round, drawn_agents, effective_wins, newton, one_step  # numba: on first use

    cells, options, banded = job.cells, job.options, job.banded
    out = np.full((x_wins.shape[1], cells.n + 1), np.nan)
    present = np.zeros((x_wins.shape[1], cells.n), dtype=bool)
    out[:, -1] = _existence(job, x_wins, y_wins, ties)
    for k in range(x_wins.shape[1]):
        wx, wy = effective_wins(x_wins[:, k], y_wins[:, k], ties[:, k], banded.cells)  # a round's cells in `Banded` order
        drawn = wx + wy
        present[k, banded.order] = drawn_agents(drawn, banded.adjacency.start, banded.adjacency.cell)
        if out[k, -1] != FITTED:
            continue
        beta = job.full.beta[banded.order]
        position = np.flatnonzero(drawn > 0)
        round_ = Round(banded.x[position], banded.y[position], banded.adjacency, wx[position], wy[position], options["prior"], position)
        if (one_step(round_, beta, ONE_STEP_RTOL) if job.path == ONE_STEP
                else newton(round_, beta, options["tol"], options["max_iter"]).fitted):
            out[k, banded.order] = beta - beta.mean() if options["prior"] == 0 else beta
        else:
            out[k, -1] = UNCONVERGED
    return out, present


def chord_operator(cells: Cells, full: Fit, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of the full-data (penalised) Hessian, dense, and P(x beats y) per cell at the full-data estimate."""
    curvature = evaluate(cells, full.beta, None, prior).curvature
    return dense_solve(dense_hessian(cells, curvature, prior), np.eye(cells.n)), expit(full.beta[cells.x] - full.beta[cells.y])


def round_costs(cells: Cells) -> tuple[float, float]:
    """The modelled CPU of one bootstrap round by the chord method (`_chord_rounds`; infinite where it is
    not tried) and by compiled Newton (`_newton_rounds`), in flops of a product with the Hessian.

    Newton costs `NEWTON_PRODUCTS` products with the 2 pairs + n nonzeros and `NEWTON_OVERHEAD`. The
    chord takes log(CHORD_SHARE * tol) / log(rho) steps, where rho, its error factor per step, is
    about `CHORD_SPREAD` relative standard deviations of the lightest agent's resampled weight (an
    agent with a handful of comparisons has a resampled curvature anywhere from 0 to several times
    its full-data one, and the chord diverges: at rho >= 1/2 it is not tried); a step costs
    `CHORD_STEP_PRODUCTS` products (its passes over the cells) and a product with the dense n x n
    inverse at `CHORD_SPEEDUP` times a product's speed per flop. The inverse must fit `dense_fits`;
    its factorisation (n^3 / 3, once) is shared by all rounds."""
    n, product = cells.n, 2 * (2 * len(cells.x) + cells.n)
    newton = float(NEWTON_PRODUCTS * product + NEWTON_OVERHEAD)
    if not dense_fits(n) or n < 2:
        return np.inf, newton
    total = cells.x_wins + cells.y_wins + cells.ties
    lightest = float((np.bincount(cells.x, total, minlength=n) + np.bincount(cells.y, total, minlength=n)).min())
    contraction = CHORD_SPREAD / np.sqrt(max(lightest, np.finfo(float).tiny))
    if contraction >= 0.5:
        return np.inf, newton
    steps = np.log(CHORD_SHARE * ROUND_TOL) / np.log(contraction)
    return float(steps * (CHORD_STEP_PRODUCTS * product + 2 * n * n / CHORD_SPEEDUP)), newton


def chord_is_cheaper(cells: Cells) -> bool:
    """Whether the chord bootstrap (`_chord_rounds`) costs less than Newton round by round (`_newton_rounds`):
    the model of `round_costs`."""
    chord, newton = round_costs(cells)
    return chord <= newton


def bootstrap_intervals(cells: Cells, full: Fit, options: dict, rounds: int, seed: int, scale: float, anchor: float,
                        algorithm: str = "chord", client=None, established: np.ndarray | None = None,
                        ) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """95% percentile intervals and interval-respecting ranks from `rounds` Poisson resamples, in the
    agent order of `cells`.

    `algorithm="onestep"` takes one Newton step per round (`refit=onestep`, ties=half; see the module docstring).
    `algorithm="chord"` fits the rounds of a chunk together where ties=half: by the chord method
    (`_chord_rounds`) where a model of the cost says so (`chord_is_cheaper`), else by compiled Newton
    round by round (`_newton_rounds`); with Davidson ties each round alone. "newton"
    always fits each round alone (the reference). All draw the same resamples and stop at the same
    tolerance: `ROUND_TOL`, or `options["tol"]` (the full-data fit's) if looser.
    Chunks run on `client` (a distributed Client), or on local threads without one. Given `established`
    (a mask in the agent order of `cells`), ranks are counted among those agents (`interval_columns`).
    """
    if algorithm not in ("chord", "newton", ONE_STEP):
        raise ValueError(f"bootstrap algorithm must be chord or newton (exact), or onestep, not {algorithm!r}")
    if algorithm == ONE_STEP and options["davidson"]:
        raise ValueError("m-elo: refit=onestep needs ties=half and no covariates")
    path, chord = "plain" if algorithm != ONE_STEP else ONE_STEP, None
    if algorithm == "chord" and not options["davidson"]:
        path = "chord" if chord_is_cheaper(cells) else "rounds"
    if path == "chord":
        chord = chord_operator(cells, full, options["prior"])
    rounds_options = options | {"tol": max(options["tol"], ROUND_TOL)}
    table = PoissonTable.of(np.concatenate([cells.x_wins, cells.y_wins, cells.ties]))
    job = Resample(cells, full, rounds_options, path, chord, Banded.of(cells.n, cells.x, cells.y), table, scale, anchor)
    rows = fan_out(_bootstrap_chunk, job, rounds, seed, client=client)
    status = rows["status"]
    kept = rows if (status == FITTED).all() else rows[status == FITTED]  # no copy of 850 MB (1000 rounds of 53k agents)
    summary = {"bootstrap_rounds": rounds, "bootstrap_dropped": int(np.sum(status == NO_ESTIMATE)),
               "bootstrap_unconverged": int(np.sum(status == UNCONVERGED))}
    if len(kept) == 0:
        raise NoEstimate(f"m-elo: none of the {rounds} bootstrap resamples has a maximum-likelihood estimate "
                         f"({summary['bootstrap_dropped']} without one, {summary['bootstrap_unconverged']} not converged); "
                         "use m-elo:prior=auto, or bootstrap=0 for no intervals")
    rank = competition_ranks(elo_points(full.beta, scale, anchor), tolerance=elo_tolerance(options["tol"], scale))
    return score_interval_columns(kept["points"], kept["ranks"], rank, elo_tolerance(rounds_options["tol"], scale),
                                  established), summary


HALF_LIFE_RULE = Rule(lambda value: value > 0, "positive (inf: every record weighs the same)", infinite=True)


def held_out_pairs(cells: Cells, davidson: bool, max_iter: int, train: np.ndarray, test: np.ndarray, prior: float,
                   start: Fit | None) -> tuple[Fit, float]:
    """`prior_choice`'s fit and score for m-Elo: the fit on the training folds' x wins, y wins and ties per
    cell, and the held-out cells' log-likelihood (an agent with no training battle sits at the prior's centre)."""
    fitted = fit(cells.with_weights(*train), davidson=davidson, prior=prior, tol=FOLD_TOL, max_iter=max_iter, start=start)
    return fitted, evaluate(cells.with_weights(*test), fitted.beta, fitted.log_nu, 0.0).log_likelihood


def _distinct_features(covariates: object) -> bool:
    try:
        parse_covariates(str(covariates))
    except ValueError:
        return False
    return True


@method("m-elo", needs=("pairwise", "agent_keys"),
        needs_with={"games": ("pairwise_per_game",), "covariates": ("battle_features",)},
        rules={"ties": one_of(*TIES), "prior": PRIOR, "bootstrap": ROUNDS, "refit": one_of(*REFITS), "scale": POSITIVE, "games": one_of(*PAIR_WEIGHTINGS),
               "tol": POSITIVE, "max_iter": at_least(1), "covariates": Rule(_distinct_features, "distinct features"),
               HALF_LIFE: HALF_LIFE_RULE})
def m_elo(pairs: PairwiseCounts, agent_keys: np.ndarray, per_game: PerGameCounts | None = None, features: BattleFeatures | None = None,
          *, ties: str = "half", prior: float | str = 0.0, bootstrap: int = 1000, refit: str = "exact", seed: int = 0, scale: float = 400.0,
          anchor: float = 1000.0, games: str = "pairs", tol: float = STEP_TOL, max_iter: int = 100, covariates: str = "",
          half_life_days: float = NO_DECAY, client=None, established: np.ndarray | None = None) -> Ratings:
    """m-Elo: Bradley-Terry maximum likelihood on the pairwise counts, with bootstrap intervals.

    With a finite `half_life_days` the counts were weighed by age in the reduction (`pipeline.stats.recency`;
    the registry checks that they were): the fit is then the exact weighted fit."""
    if refit == ONE_STEP and (ties != "half" or covariates):
        raise ValueError("m-elo: refit=onestep needs ties=half and no covariates")
    if half_life_days != NO_DECAY and (covariates or games != "pairs"):
        raise ValueError(f"m-elo: {HALF_LIFE} weighs battles' pair counts, not covariates or games=player")
    if covariates:
        if ties != "half":
            raise ValueError("m-elo: covariates need ties=half")
        return style_controlled(features, agent_keys, parse_covariates(covariates), prior=prior, bootstrap=bootstrap,
                                seed=seed, scale=scale, anchor=anchor, tol=tol, max_iter=max_iter, client=client,
                                established=established)
    counts = (PerGameCounts(None) if per_game is None else per_game).choose(pairs, games)  # None: games=pairs
    cells = Cells.from_counts(counts, agent_keys)  # agent agent_keys[i] of the cells is local agent i
    by_key = np.empty_like(counts.agents)
    by_key[agent_keys] = counts.agents
    solves = SolveLog()
    chosen: dict[str, object] = {}
    if prior == AUTO:
        choice = choose_prior(np.stack([cells.x_wins, cells.y_wins, cells.ties]),
                              partial(held_out_pairs, cells, ties == "davidson", max_iter), method="m-elo", seed=seed)
        prior, chosen = choice.prior, choice.info()
    options = {"davidson": ties == "davidson", "prior": prior, "tol": tol, "max_iter": max_iter}
    full = fit_or_refuse(cells, by_key, "m-elo", solves=solves, hint="prior=auto to choose a prior by cross-validation",
                         **options)
    tie = elo_tolerance(tol, scale)
    info: dict[str, object] = {"logistic_scale": scale, "anchor": f"mean rating = {anchor}", "iterations": full.iterations,
                               "stopped": full.stopped, "last_step": full.last_step, "log_likelihood": full.log_likelihood,
                               "tie_tolerance": tie} | chosen
    if solves.shortfalls:
        info |= {"cg_shortfalls": solves.shortfalls, "cg_worst_relative_residual": solves.worst_residual}
    if full.log_nu is not None:
        info["davidson_nu"] = float(np.exp(full.log_nu))
    extras: dict[str, np.ndarray] = {}
    if bootstrap:
        by_cell, summary = bootstrap_intervals(cells, full, options, bootstrap, seed, scale, anchor,
                                               algorithm=ONE_STEP if refit == ONE_STEP else "chord", client=client,
                                               established=None if established is None else np.isin(by_key, established))
        extras = {key: values[agent_keys] for key, values in by_cell.items()}
        info |= summary
    return Ratings.from_scores(counts.agents, elo_points(full.beta, scale, anchor)[agent_keys], extras=extras, info=info,
                               tie_tolerance=tie)
