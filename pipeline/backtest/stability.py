"""Stability experiments for the Elo family [AmElo, 5.4-5.5].

- `shuffle_stability`: ranking consistency of online Elo against m-Elo when the order of the
  battles is shuffled (m-Elo is a function of the counts, hence order-free by construction).
- `perturbation_experiment`: a share `ratio` of the annotators is perturbed with one of the
  paper's four strategies (random, equal, flip, mixed); it reports the ranking consistency of
  m-Elo and of am-Elo (stable arena) against the same method on the unperturbed data, and the
  F1 score of detecting the perturbed annotators as those with ability <= threshold.

Consistency [AmElo, 5.4] is the share of agent pairs ordered the same way by two rankings
(pairs tied in both count as agreeing). Perturbations act on the per-annotator counts with the
same distribution as perturbing each vote, so they need integer vote counts (weights of 1).
"""

from __future__ import annotations

import itertools

import numpy as np

from pipeline.methods.bradley_terry import AnnotatorCells, Cells, fit_or_refuse, shuffled_elo, stable_arena
from pipeline.stats.annotators import AnnotatorCounts
from pipeline.stats.sequence import ComparisonSequence

STRATEGIES = ("random", "equal", "flip", "mixed")


def pair_agreement(first: np.ndarray, second: np.ndarray) -> float:
    """Share of agent pairs (i < j) whose order (or tie) is the same under both scores."""
    i, j = np.triu_indices(len(first), 1)
    if len(i) == 0:
        return 1.0
    return float(np.mean(np.sign(first[i] - first[j]) == np.sign(second[i] - second[j])))


def consistency(runs: np.ndarray) -> float:
    """Mean pair agreement over all pairs of runs (rows)."""
    pairs = list(itertools.combinations(range(len(runs)), 2))
    return float(np.mean([pair_agreement(runs[a], runs[b]) for a, b in pairs])) if pairs else 1.0


def _sequence_cells(seq: ComparisonSequence, order: np.ndarray) -> Cells:
    """Counts of the comparisons, accumulated in the given order (ties as half a win)."""
    a, b, s, w = seq.a[order], seq.b[order], seq.score[order], seq.weight[order]
    sx = np.where(a < b, s, 1 - s)
    columns = np.column_stack([w * (sx == 1), w * (sx == 0), w * (sx == 0.5)])
    return Cells.summed(len(seq.agents), np.minimum(a, b), np.maximum(a, b), columns)


def shuffle_stability(seq: ComparisonSequence, *, shuffles: int = 10, seed: int = 0, k: float = 4.0,
                      prior: float = 0.0) -> dict[str, float]:
    """Consistency of the rankings over `shuffles` random orders: online Elo and m-Elo."""
    elo_runs = shuffled_elo(seq, k=k, scale=400.0, initial=1000.0, shuffles=shuffles, seed=seed)
    rng = np.random.default_rng(seed)
    m_runs = np.array([fit_or_refuse(_sequence_cells(seq, rng.permutation(len(seq))), seq.agents, "m-elo", prior=prior).beta
                       for _ in range(shuffles)])
    return {"elo": consistency(elo_runs), "m-elo": consistency(m_runs)}


def perturb(counts: AnnotatorCounts, annotators: np.ndarray, strategy: str, rng: np.random.Generator) -> AnnotatorCounts:
    """The votes of `annotators` (indices) perturbed by `strategy` [AmElo, 5.5], vote by vote in distribution."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown perturbation {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    votes = np.column_stack([counts.x_wins, counts.y_wins, counts.ties])
    if not np.array_equal(votes, np.rint(votes)):
        raise ValueError("perturbations need integer vote counts (battles of weight 1)")
    votes = votes.astype(np.int64)
    hit = np.isin(counts.judge, annotators)
    xw, yw, tie = votes[hit, 0], votes[hit, 1], votes[hit, 2]
    if strategy == "flip":
        new = np.column_stack([yw, xw, tie])
    elif strategy == "equal":
        new = np.column_stack([np.zeros_like(xw), np.zeros_like(yw), xw + yw + tie])
    else:
        # a decisive vote becomes a tie or the opposite win (1/2 each under both strategies);
        # a tie becomes either win (random) or, under mixed, stays a tie with probability 2/3
        tie_stays = 0.0 if strategy == "random" else 2 / 3
        x_to_tie = rng.binomial(xw, 0.5)
        y_to_tie = rng.binomial(yw, 0.5)
        from_tie = rng.multinomial(tie, [(1 - tie_stays) / 2, (1 - tie_stays) / 2, tie_stays]) if len(tie) else np.zeros((0, 3), np.int64)
        new = np.column_stack([yw - y_to_tie + from_tie[:, 0], xw - x_to_tie + from_tie[:, 1],
                               x_to_tie + y_to_tie + from_tie[:, 2]])
    votes[hit] = new
    return counts.replace(*(votes[:, c].astype(np.float64) for c in range(3)))


def f1_score(predicted: np.ndarray, truth: np.ndarray) -> float:
    tp = float(np.sum(predicted & truth))
    return 2 * tp / (np.sum(predicted) + np.sum(truth)) if np.any(predicted | truth) else 1.0


def _m_elo(counts: AnnotatorCounts, prior: float) -> np.ndarray:
    cells = AnnotatorCells.from_counts(counts)
    beta = np.full(len(counts.agents), np.nan)
    beta[cells.rated] = fit_or_refuse(cells.pooled, counts.agents[cells.rated], "m-elo", prior=prior).beta
    return beta


def _am_elo(counts: AnnotatorCounts, **options) -> tuple[np.ndarray, object]:
    arena = stable_arena(counts, **options)
    rating = np.full(len(counts.agents), np.nan)
    rating[arena.fit.agents] = arena.fit.rating
    return rating, arena


def perturbation_experiment(counts: AnnotatorCounts, *, strategy: str, ratio: float, seed: int = 0,
                            thresholds: tuple[float, ...] = (0.0, 0.005), threshold: float = 0.0, min_records: int = 1,
                            prior: float = 0.0, ability_prior: float = 1.0) -> dict[str, object]:
    """Perturb round(ratio * M) random annotators; consistency with the clean data and detection F1."""
    if not 0 <= ratio <= 1:
        raise ValueError("ratio must be in [0, 1]")
    rng = np.random.default_rng(seed)
    m = len(counts.judges)
    chosen = np.sort(rng.choice(m, size=int(round(ratio * m)), replace=False))
    noisy = perturb(counts, chosen, strategy, rng)
    options = {"threshold": threshold, "min_records": min_records, "prior": prior, "ability_prior": ability_prior}
    clean_m, noisy_m = _m_elo(counts, prior), _m_elo(noisy, prior)
    clean_am, _ = _am_elo(counts, **options)
    noisy_am, arena = _am_elo(noisy, **options)
    truth = np.isin(np.arange(m), chosen)[arena.eligible]
    ability = arena.first.ability
    both = lambda a, b: ~(np.isnan(a) | np.isnan(b))  # noqa: E731
    keep_m, keep_am = both(clean_m, noisy_m), both(clean_am, noisy_am)
    return {
        "strategy": strategy, "ratio": ratio, "perturbed": chosen.tolist(),
        "consistency_m_elo": pair_agreement(clean_m[keep_m], noisy_m[keep_m]),
        "consistency_am_elo": pair_agreement(clean_am[keep_am], noisy_am[keep_am]),
        "f1": {float(t): float(f1_score(ability <= t, truth)) for t in thresholds},
    }


def simulate_votes(models: int, annotators: int, votes: int, *, tie_rate: float = 0.1, spread: float = 1.0,
                   seed: int = 0) -> tuple[AnnotatorCounts, np.ndarray]:
    """Synthetic arena: `votes` votes per annotator on uniform random pairs, strengths N(0, spread^2)
    (natural units); a vote is a tie with probability `tie_rate`, else Bradley-Terry. Returns the
    per-annotator counts (annotator k has judge id k) and the true strengths."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, spread, models)
    total = annotators * votes
    judge = np.repeat(np.arange(annotators), votes)
    a = rng.integers(0, models, total)
    b = (a + rng.integers(1, models, total)) % models
    x, y = np.minimum(a, b), np.maximum(a, b)
    outcome = np.where(rng.random(total) < tie_rate, 2, np.where(rng.random(total) < 1 / (1 + np.exp(strength[y] - strength[x])), 0, 1))
    keys, inverse = np.unique((judge * models + x) * models + y, return_inverse=True)
    cells = np.zeros((len(keys), 3))
    np.add.at(cells, (inverse.ravel(), outcome), 1.0)
    counts = AnnotatorCounts(np.arange(models), np.arange(annotators), keys // (models * models), keys // models % models,
                             keys % models, cells[:, 0].copy(), cells[:, 1].copy(), cells[:, 2].copy())
    return counts, strength
