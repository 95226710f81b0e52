"""Score intervals, rank intervals and tiers for every method: a Poisson bootstrap of the records [Efr79]; [VasE, 3.1].

Any spec whose method has no bootstrap of its own accepts `bootstrap=R` (and `bootstrap_seed=S`,
default 0): the registry (`pipeline.methods.registry.run`) rates the statistics once, then R
times on resampled statistics, and adds per agent

- `ci_low`, `ci_high`: the 2.5th and 97.5th percentiles of the agent's score over the rounds;
- `rank_low`, `rank_high`: the same percentiles of its rank (the best and worst rank it plausibly holds);
- `tier`: walking the agents best first, an agent without a tier leads a new one, and every
  untiered agent whose rank interval overlaps the leader's (`rank_low <= leader's rank_high`) joins it;
- `win_frequency`: the share of rounds in which the agent ranks first (the Schulze or Copeland
  winners, Kemeny's first place), and `support_frequency` for methods that publish a
  `probability` (maximal lotteries): the share of rounds in which the agent is in the support.

Resampling. Each independent record (a battle, a ballot, a game, a task) gets a Poisson(1)
multiplicity, the Poisson bootstrap, which approximates resampling the records with replacement
[Efr79]. Where a statistic sums identical records, a cell of n identical records gets one
Poisson(n) draw, which is exactly the sum of their n Poisson(1) multiplicities; a round then
costs the cells, not the records:

- comparison logs (battles): the pair cells, x beat y and x tied y (each tie drawn once, for
  both directions); positions and the histogram are rebuilt from the drawn cells;
- other weak-order logs (ballots, games, tasks of a score table): the ballot histogram, one
  draw per distinct weak order (a game or task seen once is drawn alone, as it should be);
  pair counts and positions are recounted from the drawn histogram by the store reduction's code;
- `sequence` (Elo): per record, since order matters: each battle or game is repeated in place
  as many times as its Poisson(1) draw;
- `game_data`: per task of a score table (its `task_weight` times the draw: weights are
  multiplicities), per prompt cell of battle counts (Poisson(weight) of its wins and ties).

A cell holds weight, on the 2^-24 grid of `pipeline.weights`, not a count: it is drawn as
Poisson(weight), that is as `weight` records of weight 1 (the convention of m-Elo's bootstrap).
With weight-1 records, the common case, this is the record-level bootstrap exactly; with
weighted records the intervals narrow as the weights grow, as m-Elo's do. Draws are integers, so
resampled statistics stay on the grid.

Determinism. Cells and ballots are drawn in the canonical order of their agents' names
(`Statistics.agent_keys`), records in the sequence's canonical order; rounds run in seeded
chunks (`pipeline.methods.numerics.fanout`) whose seed is spawned from `bootstrap_seed` and a checksum of
the spec's canonical spelling (without the bootstrap parameters), so results do not depend on
workers, partitions, store ids or the other specs of a run. A round the method cannot rate
(`RatingError`) is dropped and counted in `info["bootstrap_dropped"]`; an agent a method leaves
out of a round takes the last rank there and no score.

Absent is not measured. A round that draws none of an agent's records (likely for an agent of one
or two records: e^-1 = 37% of rounds for one record) says nothing about it: whatever a method
gives it there is its prior, default or position by construction (m-Elo's prior centre, a Borda
score of 0). Such a round is left out of that agent's intervals (`measured`), and the column
`rounds_measured` says how many rounds its intervals stand on. The other agents' ranks in that
round are as the method gave them.

`ballot_order` (the order of distinct ballots, for whole-ballot STV) is kept as it is: a
round keeps or drops ballots but makes none. A method that needs statistics from two different
record sources (core counts and an extra),
or an extra without a resampler (annotators, council reviews), is refused by name.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from pipeline.logs import log_kind
from pipeline.logs.orders import WeakOrders
from pipeline.methods.convergence import RatingError
from pipeline.methods.numerics.fanout import fan_out
from pipeline.methods.numerics.resample import interval_columns, poisson_draws, ranks_within
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import BOOTSTRAP, BOOTSTRAP_SEED, Spec, apply, method_inputs, register_bootstrap
from pipeline.stats.counts import CORE_STATISTICS, BallotHistogram, PairwiseCounts, Statistics
from pipeline.stats.game_data import PromptCounts, ScoreTable
from pipeline.stats.partials import DENSE_MAX_AGENTS, comparison_histogram, comparison_positions, weak_order_partial
from pipeline.stats.sequence import ComparisonSequence

FITTED, DROPPED = 0.0, 1.0  # status of a round (last column of its row)


def _key_order(*columns: np.ndarray) -> np.ndarray:
    """Stable order by the columns, the first most significant."""
    return np.lexsort(tuple(reversed(columns))) if len(columns[0]) else np.zeros(0, np.int64)


@dataclass(frozen=True, eq=False)
class Records:
    """The records the statistics a method reads are the sums of: Poisson means to draw, in canonical
    order, and what rebuilding the statistics from the draws needs."""

    weights: np.ndarray  # Poisson mean of each cell (a cell of identical records, or one record), canonical order
    stats: Statistics
    statistic: str  # what the draws rebuild: "core" (pairwise, positions, histogram) or an extra
    order: np.ndarray | None = None  # storage index of each canonical cell, where the two orders differ
    cells: PairCells | None = None  # comparison logs
    ballots: tuple | None = None  # weak-order logs: the distinct ballots, canonical order
    mirror: np.ndarray | None = None  # prompt counts: the row holding the same tie the other way round (-1: none)
    sparse: bool = False  # rebuilt pair counts are sparse (beyond DENSE_MAX_AGENTS agents)

    def rebuild(self, draws: np.ndarray) -> Statistics:
        """The statistics of one round, from its draws in storage order."""
        return REBUILD[self.statistic](self, draws)


# -- comparison logs: the pair cells ---------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PairCells:
    x: np.ndarray  # wins: x beat y (local agents), then ties: x tied y, x's key below y's
    y: np.ndarray
    wins: int  # the first `wins` cells are wins, the rest ties


def _pair_cells(pairs: PairwiseCounts, keys: np.ndarray) -> tuple[PairCells, np.ndarray]:
    wins = sp.coo_array(pairs.wins) if pairs.is_sparse else sp.coo_array(np.asarray(pairs.wins))
    ties = sp.coo_array(pairs.ties) if pairs.is_sparse else sp.coo_array(np.asarray(pairs.ties))
    keep = ties.row != ties.col
    tx, ty, tw = ties.row[keep], ties.col[keep], ties.data[keep]
    upper = keys[tx] < keys[ty]
    tx, ty, tw = tx[upper], ty[upper], tw[upper]
    wx, wy, ww = wins.row, wins.col, wins.data
    order_w, order_t = _key_order(keys[wx], keys[wy]), _key_order(keys[tx], keys[ty])
    cells = PairCells(np.r_[wx[order_w], tx[order_t]].astype(np.int64), np.r_[wy[order_w], ty[order_t]].astype(np.int64),
                      len(wx))
    return cells, np.r_[ww[order_w], tw[order_t]].astype(np.float64)


def _rebuild_pairs(source: Records, draws: np.ndarray) -> Statistics:
    stats, cells = source.stats, source.cells
    k = len(stats.agents)
    w, t = cells.wins, slice(cells.wins, None)
    wins = sp.csr_array((draws[:w], (cells.x[:w], cells.y[:w])), shape=(k, k))
    ties = sp.csr_array((np.r_[draws[t], draws[t]], (np.r_[cells.x[t], cells.y[t]], np.r_[cells.y[t], cells.x[t]])), shape=(k, k))
    wins.eliminate_zeros()
    ties.eliminate_zeros()
    pairs = PairwiseCounts(stats.agents, wins, ties) if source.sparse else PairwiseCounts(stats.agents, wins.toarray(), ties.toarray())
    appearances = (np.bincount(cells.x, draws, k) + np.bincount(cells.y, draws, k)).astype(np.int64)
    return replace(stats, appearances=appearances, pairwise=pairs if stats.pairwise is not None else None,
                   positions=comparison_positions(pairs) if stats.positions is not None else None,
                   histogram=comparison_histogram(pairs) if stats.histogram is not None else None)


# -- weak-order logs: the ballot histogram ---------------------------------------------------------

def _histogram_order(histogram: BallotHistogram, keys: np.ndarray) -> np.ndarray:
    """Distinct ballots in the order of their agents' keys (as the histogram orders ballots by local ids)."""
    by_keys = [tuple(tuple(sorted(int(keys[a]) for a in group)) for group in ballot) for ballot in histogram.ballots]
    return np.array(sorted(range(len(by_keys)), key=by_keys.__getitem__), dtype=np.int64)


def _rebuild_histogram(source: Records, draws: np.ndarray) -> Statistics:
    stats = source.stats
    k, ballots = len(stats.agents), [source.ballots[i] for i in np.flatnonzero(draws)]
    members = [[(agent, level) for level, group in enumerate(ballot) for agent in group] for ballot in ballots]
    lengths = np.array([len(m) for m in members], dtype=np.int64)
    flat = np.array([pair for m in members for pair in m], dtype=np.int64).reshape(-1, 2)
    orders = WeakOrders(np.r_[0, np.cumsum(lengths)].astype(np.int64), flat[:, 0], flat[:, 1].astype(np.float64),
                        draws[draws > 0].astype(np.float64))
    wanted = frozenset(name for name in CORE_STATISTICS if getattr(stats, name) is not None)
    partial = weak_order_partial(orders, k, wanted, dense=not source.sparse)
    everyone = np.arange(k)
    appearances = np.zeros(k, np.int64)
    np.add.at(appearances, flat[:, 0], np.repeat(draws[draws > 0], lengths).astype(np.int64))
    pairs = partial.pairs.finalize(everyone) if partial.pairs is not None else None
    return replace(stats, appearances=appearances,
                   pairwise=None if pairs is None else PairwiseCounts(stats.agents, pairs.wins, pairs.ties),
                   positions=None if partial.positions is None else replace(partial.positions.finalize(everyone), agents=stats.agents),
                   histogram=None if partial.histogram is None else _relabel(partial.histogram.finalize(everyone, k), stats.agents))


def _relabel(histogram: BallotHistogram, agents: np.ndarray) -> BallotHistogram:
    return BallotHistogram(agents, histogram.ballots, histogram.weights)


# -- extras: the sequence of comparisons, game data ------------------------------------------------

def _rebuild_sequence(source: Records, draws: np.ndarray) -> Statistics:
    seq: ComparisonSequence = source.stats.extra["sequence"]
    starts = np.flatnonzero(np.r_[True, np.diff(seq.group) != 0]) if len(seq) else np.zeros(0, np.int64)
    lengths = np.diff(np.r_[starts, len(seq)])
    copies = np.repeat(np.arange(len(starts)), draws.astype(np.int64))  # each record repeated in place
    sizes = lengths[copies]
    offsets = np.r_[0, np.cumsum(sizes)]
    rows = np.repeat(starts[copies] - offsets[:-1], sizes) + np.arange(offsets[-1])
    group = np.repeat(np.arange(len(copies)), sizes)
    resampled = ComparisonSequence(seq.agents, seq.a[rows], seq.b[rows], seq.score[rows], seq.weight[rows],
                                   seq.players[rows], group)
    return replace(source.stats, extra=source.stats.extra | {"sequence": resampled})


def _prompt_cells(counts: PromptCounts, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(canonical order of the rows: prompt by name where named, then the agents' keys; the row holding
    each row's tie the other way round, -1 for none)."""
    prompt = counts.prompt if counts.prompt_names is None else np.array(
        [counts.prompt_names[p] if p >= 0 else "" for p in counts.prompt.tolist()], dtype=str)
    prompt_rank = np.unique(prompt, return_inverse=True)[1].ravel()
    order = _key_order(prompt_rank, keys[counts.a], keys[counts.b])
    triples = list(zip(counts.prompt.tolist(), counts.a.tolist(), counts.b.tolist()))
    lookup = {t: i for i, t in enumerate(triples)}
    return order, np.array([lookup.get((p, b, a), -1) for p, a, b in triples], dtype=np.int64)


def _rebuild_game_data(source: Records, draws: np.ndarray) -> Statistics:
    data = source.stats.extra["game_data"]
    if isinstance(data, ScoreTable):
        weight = data.task_weight * draws
        keep = weight > 0
        resampled = ScoreTable(data.agents, tuple(t for t, kept in zip(data.tasks, keep) if kept), data.scores[:, keep],
                               data.higher_is_better[keep], weight[keep])
    else:  # a tie is drawn once, in the row whose agent keys are increasing, and mirrored
        m, keys = len(data.a), source.stats.agent_keys
        leader = keys[data.a] < keys[data.b]
        ties = np.where(leader, draws[m:], 0.0)
        follower = ~leader & (source.mirror >= 0)
        ties[follower] = ties[source.mirror[follower]]
        resampled = replace(data, wins=draws[:m], ties=ties)
    return replace(source.stats, extra=source.stats.extra | {"game_data": resampled})


# Extras that describe the distinct ballots themselves, not how often they occur: a redraw keeps
# or drops ballots, so they stay valid for every round.
ALONG_THE_BALLOTS = frozenset({"ballot_order"})

REBUILD = {"core": lambda source, draws: _rebuild_pairs(source, draws) if source.cells is not None
           else _rebuild_histogram(source, draws),
           "sequence": _rebuild_sequence, "game_data": _rebuild_game_data}


def records(spec: Spec, stats: Statistics) -> Records:
    """The independent records behind the statistics `spec`'s method reads (see the module's docstring)."""
    needs = [n for n in spec.method.statistics]
    sources = {"core" if n in CORE_STATISTICS or n in ALONG_THE_BALLOTS else n for n in needs}
    if len(sources) != 1 or not sources <= REBUILD.keys():
        reason = "reads statistics of different records" if len(sources) > 1 else f"reads {', '.join(sorted(sources))}, which has no resampler"
        raise ValueError(f"{spec.name}: bootstrap is not available: the method {reason}")
    (statistic,) = sources
    keys, given = stats.agent_keys, stats
    # only what the method reads is rebuilt in each round
    stats = replace(stats, extra={n: v for n, v in stats.extra.items() if n in needs},
                    **{n: getattr(stats, n) if n in needs else None for n in CORE_STATISTICS})
    if statistic == "core":
        if log_kind(stats.kind).comparisons is not None:
            cells, weights = _pair_cells(given.pairwise, keys)
            return Records(weights, stats, statistic, cells=cells, sparse=given.pairwise.is_sparse)
        histogram = given.histogram
        if histogram is None:
            raise ValueError(f"{spec.name}: bootstrap of {stats.kind} needs the histogram statistic, which was not computed")
        order = _histogram_order(histogram, keys)
        return Records(histogram.weights[order], stats, statistic, ballots=tuple(histogram.ballots[i] for i in order),
                       sparse=len(stats.agents) > DENSE_MAX_AGENTS)
    if statistic == "sequence":
        seq = stats.extra["sequence"]
        groups = int(np.count_nonzero(np.r_[True, np.diff(seq.group) != 0])) if len(seq) else 0
        return Records(np.ones(groups), stats, statistic)
    data = stats.extra["game_data"]
    if isinstance(data, ScoreTable):  # tasks by name
        return Records(np.ones(len(data.tasks)), stats, statistic, order=np.argsort(np.asarray(data.tasks, dtype=str), kind="stable"))
    order, mirror = _prompt_cells(data, keys)
    return Records(np.r_[data.wins[order], data.ties[order]], stats, statistic, order=np.r_[order, order + len(order)],
                   mirror=mirror)


def _draw(source: Records, size: int, rng: np.random.Generator) -> np.ndarray:
    """(size, cells) Poisson draws, drawn in canonical order, returned in storage order."""
    draws = poisson_draws(source.weights, size, rng)
    if source.order is None:
        return draws
    placed = np.empty_like(draws)
    placed[:, source.order] = draws
    return placed


@dataclass(frozen=True, eq=False)
class Job:
    """What every chunk of rounds needs."""

    spec: Spec  # without the bootstrap parameters
    source: Records
    agents: np.ndarray
    rows: np.ndarray  # the row of each of `agents` in the statistics


def _rounds(job: Job, size: int, rng: np.random.Generator) -> np.ndarray:
    """Per round: the agents' scores, ranks and support (1/0, NaN without a `probability`), then the status."""
    k = len(job.agents)
    out = np.full((size, 3 * k + 1), np.nan)
    for r, draws in enumerate(_draw(job.source, size, rng)):
        rebuilt = job.source.rebuild(draws)
        try:
            rated = run_plain(job.spec, rebuilt)
        except RatingError:
            out[r, -1] = DROPPED
            continue
        rows = rated.positions(job.agents)
        seen = rows >= 0
        out[r, :k][seen] = rated.score[rows[seen]]
        out[r, k: 2 * k] = k
        out[r, k: 2 * k][seen] = rated.rank[rows[seen]]
        absent = ~measured(rebuilt)[job.rows]  # absent is not measured
        out[r, :k][absent] = out[r, k: 2 * k][absent] = np.nan
        if "probability" in rated.extras:
            out[r, 2 * k: 3 * k] = 0.0
            out[r, 2 * k: 3 * k][seen] = rated.extras["probability"][rows[seen]] > 0
        out[r, -1] = FITTED
    return out


def measured(stats: Statistics) -> np.ndarray:
    """Which agents the records of a round's statistics hold (in the order of `stats.agents`): those that
    appear in a drawn ballot or battle, in a drawn comparison of the sequence, with a score on a drawn
    task, or in a drawn prompt cell."""
    k, sequence, data = len(stats.agents), stats.extra.get("sequence"), stats.extra.get("game_data")
    if isinstance(sequence, ComparisonSequence):
        return np.bincount(np.r_[sequence.a, sequence.b].astype(np.int64), minlength=k) > 0
    if isinstance(data, ScoreTable):
        return np.isfinite(data.scores).any(axis=1)
    if isinstance(data, PromptCounts):
        drawn = data.wins + data.ties
        return np.bincount(np.r_[data.a, data.b].astype(np.int64), np.r_[drawn, drawn], minlength=k) > 0
    return np.asarray(stats.appearances) > 0


def run_plain(spec: Spec, stats: Statistics) -> Ratings:
    return apply(spec, *method_inputs(spec, stats))


def round_seed(spec: Spec, seed: int) -> int:
    """The fan-out seed of a spec's rounds: from `seed` and a checksum of its canonical spelling."""
    state = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(spec.canonical.encode()),)).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


@register_bootstrap
def bootstrap(spec: Spec, stats: Statistics, *, client=None, established: np.ndarray | None = None) -> Ratings:
    """`spec` rated on `stats`, with intervals, tiers and win frequencies from `spec`'s `bootstrap` rounds;
    ranks counted among the `established` agents (store ids; None: all) and among the others after them."""
    rounds, seed = int(spec.params[BOOTSTRAP]), int(spec.params.get(BOOTSTRAP_SEED, 0))
    if rounds < 0:
        raise ValueError(f"{spec.name}: bootstrap must be non-negative, not {rounds}")
    plain = spec.without_bootstrap()
    source = records(plain, stats)  # refuses a method it cannot resample before rating anything
    full = run_plain(plain, stats)
    row_of = {int(agent): i for i, agent in enumerate(stats.agents)}
    job = Job(plain, source, full.agents, np.array([row_of[int(a)] for a in full.agents], dtype=np.int64))
    rows = fan_out(_rounds, job, rounds, round_seed(plain, seed), client=client)
    kept = rows[rows[:, -1] == FITTED]
    k = len(full.agents)
    info = {"bootstrap_rounds": rounds, "bootstrap_dropped": int(len(rows) - len(kept)), "bootstrap_seed": seed,
            "bootstrap_records": {"core": "pair cells" if source.cells is not None else "distinct ballots",
                                  "sequence": "records", "game_data": "tasks or prompt cells"}[source.statistic]}
    if len(kept) == 0:
        raise RatingError(f"{spec.name}: none of the {rounds} bootstrap rounds could be rated")
    scores, ranks, support = kept[:, :k], kept[:, k: 2 * k], kept[:, 2 * k: 3 * k]
    mask = None if established is None else np.isin(full.agents, established)
    extras = interval_columns(scores, ranks, full.rank, mask)
    extras["win_frequency"] = ((ranks if mask is None else ranks_within(ranks, mask)) == 1).mean(axis=0)
    if np.isfinite(support).all():
        extras["support_frequency"] = support.mean(axis=0)
    ratings = replace(full, extras=full.extras | extras, info=full.info | info)
    return replace(ratings, params=spec.effective_params)
