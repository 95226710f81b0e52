"""A peer's whole command: read a battles CSV (model_a, model_b, winner) with pandas, rate it with the
peer's own code, write `agent,score` (Elo points) as CSV. The counterpart of `vase rate FILE -m m-elo`
in `benchmarks.bench_elo`'s whole-command comparison.

Run: `python -m benchmarks.peers.rate_file {fastchat,choix,evalica} BATTLES.csv OUT.csv [--rounds R]`.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

ELO_PER_NATURAL_UNIT = 400 / math.log(10)


def fastchat(battles: pd.DataFrame, rounds: int) -> pd.Series:
    from benchmarks.peers.fastchat_rating_systems import (
        compute_bootstrap_bt,
        compute_bt,
    )

    ratings = compute_bt(battles)
    if rounds:
        compute_bootstrap_bt(battles, rounds)  # intervals as the leaderboard computes them (a process per core)
    return ratings


def choix_ilsr(battles: pd.DataFrame, rounds: int) -> pd.Series:
    import choix

    if rounds:
        raise SystemExit("choix: no bootstrap of its own")
    codes, names = pd.factorize(pd.concat([battles["model_a"], battles["model_b"]]))
    a, b = codes[: len(battles)], codes[len(battles):]
    winner = battles["winner"].to_numpy()
    n = len(names)
    wins = np.zeros((n, n))
    np.add.at(wins, (a, b), (winner == "model_a") + 0.5 * (winner == "tie"))
    np.add.at(wins, (b, a), (winner == "model_b") + 0.5 * (winner == "tie"))
    return pd.Series(ELO_PER_NATURAL_UNIT * choix.ilsr_pairwise_dense(wins), index=names)


def evalica_bt(battles: pd.DataFrame, rounds: int) -> pd.Series:
    import evalica

    if rounds:
        raise SystemExit("evalica: no bootstrap in this script")
    outcome = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    result = evalica.bradley_terry(battles["model_a"], battles["model_b"], battles["winner"].map(outcome).tolist(),
                                   tolerance=1e-10, limit=1000)
    return ELO_PER_NATURAL_UNIT * np.log(result.scores)


PEERS = {"fastchat": fastchat, "choix": choix_ilsr, "evalica": evalica_bt}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("battles")
    parser.add_argument("out")
    parser.add_argument("--rounds", type=int, default=0, help="bootstrap rounds (FastChat only)")
    args = parser.parse_args()
    scores = PEERS[args.peer](pd.read_csv(args.battles), args.rounds)
    scores.rename_axis("agent").rename("score").to_csv(args.out)


if __name__ == "__main__":
    main()
