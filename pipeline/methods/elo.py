"""Online Elo: the classic sequential update [Elo78]; [AmElo, section 3, algorithm 1].

For each comparison of x and y in order, with x's result s (1 win, 0.5 tie, 0 loss) and weight
w: E = 1 / (1 + 10^((R_y - R_x) / scale)), R_x += k * w * (s - E), R_y -= k * w * (s - E).
Every agent starts at `initial`; updates are zero-sum, so the mean rating stays `initial`.
The order is the `sequence` statistic's: timestamp, then battle or game id (rows without a
timestamp come first, ordered by id). The pairs of one game are updated simultaneously from the
ratings before the game; `games=player` weights them 1/(L-1) in a game of L players (each
player's game then moves it like one battle), `games=pairs` weights each pair fully.

`shuffles=S` (S > 0) reports instead the mean over S seeded random orders of the battles (or
games), as arenas do to reduce the order dependence [AmElo, 5.2]; `sd` is the spread over the
orders. Shuffles run on Dask in seeded chunks (`pipeline.methods.fanout`).

Cost: the update is inherently sequential, so it is a plain Python loop over comparisons (about
0.5 microsecond per comparison, so ~1 minute per 10^8 battles and per shuffle); the pairwise
methods (`m-elo`) cost nothing per battle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.methods.fanout import fan_out
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.sequence import ComparisonSequence

SHUFFLE_CHUNK = 10


def _steps(seq: ComparisonSequence, k: float, games: str) -> np.ndarray:
    if games not in ("pairs", "player"):
        raise ValueError(f"elo: games must be 'pairs' or 'player', not {games!r}")
    weight = seq.weight / (seq.players - 1) if games == "player" else seq.weight
    return k * weight


def run_elo(n: int, a: np.ndarray, b: np.ndarray, score: np.ndarray, step: np.ndarray, group: np.ndarray,
            scale: float, initial: float) -> np.ndarray:
    """Final ratings after the comparisons in the given order; a group is updated at once."""
    r = [float(initial)] * n
    xs, ys, ss, ks = a.tolist(), b.tolist(), score.tolist(), step.tolist()
    if len(group) == 0 or group[-1] == len(group) - 1:  # one comparison per group (groups count up from 0)
        for x, y, s, kw in zip(xs, ys, ss, ks):
            d = kw * (s - 1.0 / (1.0 + 10.0 ** ((r[y] - r[x]) / scale)))
            r[x] += d
            r[y] -= d
        return np.array(r)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]).tolist() + [len(group)]
    for lo, hi in zip(starts[:-1], starts[1:]):
        deltas = [(xs[i], ys[i], ks[i] * (ss[i] - 1.0 / (1.0 + 10.0 ** ((r[ys[i]] - r[xs[i]]) / scale)))) for i in range(lo, hi)]
        for x, y, d in deltas:
            r[x] += d
            r[y] -= d
    return np.array(r)


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


def shuffled_elo(seq: ComparisonSequence, *, k: float, scale: float, initial: float, shuffles: int, seed: int,
                 games: str = "pairs") -> np.ndarray:
    """Final online-Elo ratings for `shuffles` seeded random orders of the groups, one row each."""
    return fan_out(_shuffle_chunk, _Shuffles(seq, _steps(seq, k, games), scale, initial), shuffles, seed, SHUFFLE_CHUNK)


@method("elo", needs=("sequence",), kinds=("battles", "games"))
def elo(seq: ComparisonSequence, *, k: float = 4.0, scale: float = 400.0, initial: float = 1000.0, shuffles: int = 0,
        seed: int = 0, games: str = "pairs") -> Ratings:
    """Online Elo in timestamp order (or averaged over seeded shuffles of the order)."""
    if k <= 0 or scale <= 0 or shuffles < 0:
        raise ValueError("elo: k and scale must be positive and shuffles non-negative")
    info: dict[str, object] = {"logistic_scale": scale, "comparisons": len(seq),
                               "order": f"mean over {shuffles} shuffles" if shuffles else "timestamp, then id"}
    if not shuffles:
        score = run_elo(len(seq.agents), seq.a, seq.b, seq.score, _steps(seq, k, games), seq.group, scale, initial)
        return Ratings.from_scores(seq.agents, score, info=info)
    runs = shuffled_elo(seq, k=k, scale=scale, initial=initial, shuffles=shuffles, seed=seed, games=games)
    return Ratings.from_scores(seq.agents, runs.mean(axis=0), extras={"sd": runs.std(axis=0)}, info=info)
