"""How far the methods of a board agree: Kendall's tau between rankings, and the agents they disagree on.

Tau-b [Ken45] over the agents both methods rank, so ties (1, 2, 2, 4) are neither agreement nor
disagreement; computed by scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANK_GAP = 3  # an agent is listed when its ranks under two methods differ by more than this


def kendall_matrix(ranks: dict[str, dict[str, int]]) -> np.ndarray:
    """Tau-b between each pair of methods' rankings (NaN where fewer than two common agents, or a
    ranking that puts them all level)."""
    from scipy import stats  # here: a board of one method never needs scipy.stats (~0.5 s to import)

    methods = list(ranks)
    tau = np.eye(len(methods))
    for i, a in enumerate(methods):
        for j in range(i + 1, len(methods)):
            b = methods[j]
            common = sorted(set(ranks[a]) & set(ranks[b]))
            value = float("nan")
            if len(common) >= 2:
                x, y = [ranks[a][c] for c in common], [ranks[b][c] for c in common]
                if len(set(x)) > 1 and len(set(y)) > 1:
                    value = float(stats.kendalltau(x, y, variant="b").statistic)
            tau[i, j] = tau[j, i] = value
    return tau


@dataclass(frozen=True)
class Disagreement:
    agent: str
    best: int
    best_by: list[str]
    worst: int
    worst_by: list[str]

    @property
    def spread(self) -> int:
        return self.worst - self.best


def disagreements(ranks: dict[str, dict[str, int]], gap: int = RANK_GAP) -> list[Disagreement]:
    """Agents whose best and worst ranks over the methods differ by more than `gap` places, widest first."""
    agents = sorted({a for r in ranks.values() for a in r})
    found = []
    for agent in agents:
        by = {m: r[agent] for m, r in ranks.items() if agent in r}
        if len(by) < 2:
            continue
        best, worst = min(by.values()), max(by.values())
        if worst - best > gap:
            found.append(Disagreement(agent, best, [m for m, v in by.items() if v == best], worst,
                                      [m for m, v in by.items() if v == worst]))
    return sorted(found, key=lambda d: (-d.spread, d.best, d.agent))
