"""Online Elo: the classic sequential update [Elo78]; [AmElo, section 3, algorithm 1].

For each comparison of x and y in order, with x's result s (1 win, 0.5 tie, 0 loss) and weight
w: E = 1 / (1 + 10^((R_y - R_x) / scale)), R_x += k * w * (s - E), R_y -= k * w * (s - E).
E is computed as a logistic function that cannot overflow, however far apart the ratings. Online
Elo is not scale-free: a step is k times the weight, so weights of 1e11 move ratings by 1e11 k.
Every agent starts at `initial`; updates are zero-sum, so the mean rating stays `initial`.
The order is the `sequence` statistic's (`pipeline.stats.sequence`): timestamp (rows without one
first), then ingest order (files in the order they were ingested, then rows in file order), so a
log without timestamps runs in file order whatever its ids. The pairs of one game are updated simultaneously from the
ratings before the game; `games=player` weights them 1/(L-1) in a game of L players (each
player's game then moves it like one battle), `games=pairs` weights each pair fully.

`shuffles=S` (S > 0) reports instead the mean over S seeded random orders of the battles (or
games), as arenas do to reduce the order dependence [AmElo, 5.2]; `sd` is the spread over the
orders. The orders permute the battles (games) listed in a canonical order of their content
(agents by name, outcome, weight), so they do not depend on store ids or on the log's order.
Shuffles run in seeded chunks (`pipeline.methods.numerics.fanout`) on the Dask client the registry
passes (local threads without one).

Cost: the update is inherently sequential, so it is a loop over the comparisons, compiled by
numba (`pipeline.methods.bradley_terry.elo_update`: about 20 ns per comparison, so ~2 s per 10^8 battles and
per shuffle, and no memory beyond the arrays); the pairwise methods (`m-elo`) cost nothing per
battle.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log

import numpy as np

from pipeline.arrays import is_uniform, uniform
from pipeline.methods.numerics.fanout import fan_out
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import POSITIVE, ROUNDS, method, one_of
from pipeline.stats.game_pairs import PAIR_WEIGHTINGS
from pipeline.stats.sequence import ComparisonSequence

SHUFFLE_CHUNK = 10


def _steps(seq: ComparisonSequence, k: float, games: str) -> np.ndarray:
    """k times each comparison's weight (over its game's players - 1 with `games=player`); one
    value viewed as every row's (`pipeline.arrays.uniform`) when the weights and players are."""
    weight, players = seq.weight, seq.players
    same = is_uniform(weight) and (games == "pairs" or is_uniform(players))
    if same:
        weight, players = weight[:1], players[:1]
    step = k * (weight / (players - 1) if games == "player" else weight)
    return uniform(step[0], len(seq)) if same else step


def run_elo(n: int, a: np.ndarray, b: np.ndarray, score: np.ndarray, step: np.ndarray, group: np.ndarray,
            scale: float, initial: float) -> np.ndarray:
    """Final ratings after the comparisons in the given order; a group is updated at once (the
    compiled loop of `pipeline.methods.bradley_terry.elo_update`, over the arrays as they are: of any integer and
    float types, `uniform` views included, with no copy)."""
    from pipeline.methods.bradley_terry.elo_update import update  # numba is imported on first use only

    ratings = np.full(n, float(initial))
    update(ratings, *(np.asarray(x) for x in (a, b, score, step, group)), log(10.0) / scale)
    return ratings


@dataclass(frozen=True, eq=False)
class _Shuffles:
    seq: ComparisonSequence
    step: np.ndarray
    scale: float
    initial: float


def _shuffle_chunk(job: _Shuffles, size: int, rng: np.random.Generator) -> np.ndarray:
    seq = job.seq
    starts = np.flatnonzero(np.r_[True, seq.group[1:] != seq.group[:-1]]) if len(seq) else np.zeros(0, np.int64)
    lengths = np.diff(np.r_[starts, len(seq)])
    out = np.empty((size, len(seq.agents)))
    for row in range(size):
        groups = rng.permutation(len(starts))
        order = np.repeat(starts[groups], lengths[groups]) + _within(lengths[groups])
        out[row] = run_elo(len(seq.agents), seq.a[order], seq.b[order], seq.score[order], job.step[order],
                           np.repeat(np.arange(len(groups)), lengths[groups]), job.scale, job.initial)
    return out


def _within(lengths: np.ndarray) -> np.ndarray:
    """0..L-1 for each group of length L, concatenated."""
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def canonical_groups(seq: ComparisonSequence, agent_keys: np.ndarray, step: np.ndarray) -> tuple[ComparisonSequence, np.ndarray]:
    """The comparisons regrouped in a canonical order of their content, and their steps.

    Each pair is oriented so that its first agent comes first by name (`agent_keys`; the score is
    flipped), the pairs of a group are sorted by (agents, score, step), and the groups by length,
    then by their sorted pairs. Groups of equal content are interchangeable, so a permutation of
    this order is a shuffle that depends neither on store ids nor on the log's order."""
    key_a, key_b = agent_keys[seq.a], agent_keys[seq.b]
    flip = key_a > key_b
    low, high = np.minimum(key_a, key_b), np.maximum(key_a, key_b)
    score = np.where(flip, 1.0 - seq.score, seq.score)
    rows = np.lexsort((step, score, high, low, seq.group))
    group = seq.group[rows]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(rows) else np.zeros(0, np.int64)
    lengths = np.diff(np.r_[starts, len(rows)]).astype(np.int64)
    content = np.column_stack([low[rows], high[rows], score[rows], step[rows]]).astype(np.float64)
    by_length = []
    for length in np.unique(lengths):
        chosen = np.flatnonzero(lengths == length)
        block = content[starts[chosen][:, None] + np.arange(length)].reshape(len(chosen), -1)
        by_length.append(chosen[np.lexsort(block.T[::-1])])
    groups = np.concatenate(by_length) if by_length else np.zeros(0, np.int64)
    order = rows[np.repeat(starts[groups], lengths[groups]) + _within(lengths[groups])]
    first, second = np.where(flip, seq.b, seq.a), np.where(flip, seq.a, seq.b)
    canonical = ComparisonSequence(seq.agents, first[order], second[order], score[order], seq.weight[order],
                                   seq.players[order], np.repeat(np.arange(len(groups)), lengths[groups]))
    return canonical, step[order]


def shuffled_elo(seq: ComparisonSequence, agent_keys: np.ndarray | None = None, *, k: float, scale: float,
                 initial: float, shuffles: int, seed: int, games: str = "pairs", client=None) -> np.ndarray:
    """Final online-Elo ratings for `shuffles` seeded random orders of the groups, one row each."""
    keys = np.arange(len(seq.agents)) if agent_keys is None else agent_keys
    canonical, step = canonical_groups(seq, keys, _steps(seq, k, games))
    return fan_out(_shuffle_chunk, _Shuffles(canonical, step, scale, initial), shuffles, seed, SHUFFLE_CHUNK, client=client)


@method("elo", needs=("sequence", "agent_keys"), kinds=("battles", "games"),
        rules={"k": POSITIVE, "scale": POSITIVE, "shuffles": ROUNDS, "games": one_of(*PAIR_WEIGHTINGS)})
def elo(seq: ComparisonSequence, agent_keys: np.ndarray, *, k: float = 4.0, scale: float = 400.0, initial: float = 1000.0,
        shuffles: int = 0, seed: int = 0, games: str = "pairs", client=None) -> Ratings:
    """Online Elo in the log's order (or averaged over seeded shuffles of the order)."""
    info: dict[str, object] = {"logistic_scale": scale, "comparisons": len(seq),
                               "order": f"mean over {shuffles} shuffles" if shuffles else "timestamp, then ingest order"}
    if not shuffles:
        score = run_elo(len(seq.agents), seq.a, seq.b, seq.score, _steps(seq, k, games), seq.group, scale, initial)
        return Ratings.from_scores(seq.agents, score, info=info)
    runs = shuffled_elo(seq, agent_keys, k=k, scale=scale, initial=initial, shuffles=shuffles, seed=seed, games=games,
                        client=client)
    return Ratings.from_scores(seq.agents, runs.mean(axis=0), extras={"sd": runs.std(axis=0)}, info=info)
