"""Voting methods against OpenSpiel's `open_spiel.python.voting`, timed in the same run.

Run as `python -m benchmarks.bench_voting [--ballots N]`. Fixed seeds; every number is also a
ratio to a baseline timed in this run; a table is printed and JSON written to
benchmarks/results/voting.json. Ballots follow a Plackett-Luce model (agent i has log-strength
`spread * i / m` plus Gumbel noise), so pools have a realistic mix of clear and close pairs.

1. Store to ratings: N ballots over 20 agents are written as CSV, `Store.ingest`ed (not timed),
   then `reduce_store` (pairwise counts) and every pairwise method are timed. OpenSpiel runs
   Copeland, Schulze and ranked pairs end to end (profile building included) on 5k and 10k
   ballot subsamples; its time at N is extrapolated linearly from those two (fixed + per-ballot
   cost). OpenSpiel's Kemeny (20! orders) and maximal lotteries (needs cvxpy, not installed)
   cannot run here and are left out of that ratio.
2. Maximal lotteries at m = 50: ours (essential-set LP, null space) against scipy's `linprog`
   (HiGHS) on the maximin LP, the usual way, and against OpenSpiel's game solve (cvxpy, from the
   bench extra) on the same margins.
3. Kemeny exact at m = 10 against OpenSpiel's enumeration, timed at m = 8 and 9 and extrapolated
   to m = 10 by the number of orders times the pairs per order (the m = 8 -> 9 prediction error
   is reported as a check); then our time at m = 20, 30, 40 as a ratio to our m = 10 time. These
   profiles are impartial culture (101 uniformly random orders), the hardest case for the MIP:
   no Condorcet decomposition applies.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
from open_spiel.python.voting import base, copeland, kemeny_young, ranked_pairs, schulze
from scipy.optimize import linprog

from benchmarks.common import best_of
from pipeline import methods
from pipeline.methods.voting.maximal_lotteries import essential_set, lottery
from pipeline.stats.counts import PairwiseCounts, Statistics
from pipeline.stats.in_memory import profile
from pipeline.stats.reduce import reduce_store
from pipeline.store import Store

RESULTS = Path(__file__).parent / "results" / "voting.json"
PAIRWISE = ["copeland", "schulze", "ranked-pairs", "kemeny", "maximal-lotteries", "iterative-maximal-lotteries"]
COMPARED = {"copeland": copeland.CopelandVoting, "schulze": schulze.SchulzeVoting,
            "ranked-pairs": ranked_pairs.RankedPairsVoting}


def plackett_luce(rng: np.random.Generator, m: int, voters: int, spread: float) -> np.ndarray:
    """Orders (best first) of `voters` ballots over m agents."""
    strength = spread * np.arange(m)[::-1] / m
    return np.argsort(-(strength + rng.gumbel(size=(voters, m))), axis=1)


def names(m: int) -> list[str]:
    return [f"a{i:02d}" for i in range(m)]


def rankings(orders: np.ndarray) -> list[str]:
    labels = np.array(names(orders.shape[1]))[orders]
    return pl.DataFrame(labels).select(pl.concat_str(pl.all(), separator=">")).to_series().to_list()




def open_spiel_profile(orders: np.ndarray) -> base.PreferenceProfile:
    labels = names(orders.shape[1])
    return base.PreferenceProfile(votes=[[labels[i] for i in row] for row in orders.tolist()])


def store_to_ratings(ballots: int, rng: np.random.Generator) -> dict:
    orders = plackett_luce(rng, 20, ballots, spread=3.0)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "ballots.csv"
        pl.DataFrame({"ranking": rankings(orders)}).write_csv(csv)
        store = Store(Path(tmp) / "store")
        ingest, _ = best_of(lambda: store.ingest([csv], "ballots"), 1)
        reduce, stats = best_of(lambda: reduce_store(store, "ballots", {"pairwise"}), 1)
        per_method = {spec: best_of(lambda s=spec: methods.run(s, stats), 1)[0] for spec in PAIRWISE}
    ours_compared = reduce + sum(per_method[s] for s in COMPARED)
    theirs = {}
    for spec, rule in COMPARED.items():
        small, large = 5_000, 10_000
        t_small, _ = best_of(lambda r=rule: r().run_election(open_spiel_profile(orders[:small])), 1)
        t_large, _ = best_of(lambda r=rule: r().run_election(open_spiel_profile(orders[:large])), 1)
        slope = (t_large - t_small) / (large - small)
        theirs[spec] = max(t_large + slope * (ballots - large), t_large)
    total_theirs = sum(theirs.values())
    return {"ballots": ballots, "agents": 20, "ingest_s": ingest, "reduce_s": reduce, "methods_s": per_method,
            "ours_compared_s": ours_compared, "ours_all_pairwise_s": reduce + sum(per_method.values()),
            "open_spiel_extrapolated_s": theirs, "open_spiel_total_s": total_theirs,
            "speedup": total_theirs / ours_compared}


def maximal_lotteries_50(rng: np.random.Generator) -> dict:
    stats, _ = profile(rankings(plackett_luce(rng, 50, 501, spread=1.0)))
    margins = stats.pairwise.margins
    ours, _ = best_of(lambda: lottery(margins, essential_set(margins)), repeat=5)
    m = len(margins)

    def scipy_maximin():
        # max v s.t. M^T p >= v, sum p = 1, p >= 0 (variables p, v)
        a_ub = np.hstack([-margins.T, np.ones((m, 1))])
        return linprog(np.r_[np.zeros(m), -1.0], A_ub=a_ub, b_ub=np.zeros(m), A_eq=np.r_[np.ones(m), 0.0][None, :],
                       b_eq=[1.0], bounds=[(0, None)] * m + [(None, None)], method="highs")

    theirs, res = best_of(scipy_maximin, repeat=5)
    p = lottery(margins, essential_set(margins)).p
    result = {"agents": m, "ours_s": ours, "scipy_linprog_s": theirs, "ratio": theirs / ours,
              "same_lottery": bool(np.allclose(p, res.x[:m], atol=1e-6)), "support": int((p > 0).sum())}
    try:  # OpenSpiel's maximal lotteries solve the same game with cvxpy (the bench extra)
        from open_spiel.python.voting import maximal_lotteries as spiel

        solver = spiel.MaximalLotteriesVoting(iterative=False)
        spiel_s, spiel_p = best_of(lambda: solver._solve_game(margins), repeat=5)
        result |= {"open_spiel_s": spiel_s, "open_spiel_ratio": spiel_s / ours,
                   "open_spiel_max_abs_difference": float(np.abs(np.asarray(spiel_p) - p).max())}
    except ImportError as missing:
        result["open_spiel_missing"] = str(missing)
    return result


def kemeny_scaling(rng: np.random.Generator) -> dict:
    def stats_for(m: int, voters: int = 101):
        orders = plackett_luce(rng, m, voters, spread=0.0)  # impartial culture: one big component
        return profile(rankings(orders))[0], orders

    out = {}
    open_spiel = {}
    for m in (8, 9):
        _, orders = stats_for(m)
        open_spiel[m], _ = best_of(lambda o=orders: kemeny_young.KemenyYoungVoting().run_election(open_spiel_profile(o)), 1)
    cost = lambda m: math.factorial(m) * m * (m - 1) / 2  # noqa: E731
    predicted_9 = open_spiel[8] * cost(9) / cost(8)
    theirs_10 = open_spiel[9] * cost(10) / cost(9)
    stats10, _ = stats_for(10)
    ours_10, r10 = best_of(lambda: methods.run("kemeny", stats10), repeat=3)
    out["m10"] = {"ours_s": ours_10, "open_spiel_extrapolated_s": theirs_10, "speedup": theirs_10 / ours_10,
                  "open_spiel_m8_s": open_spiel[8], "open_spiel_m9_s": open_spiel[9],
                  "m9_prediction_error": predicted_9 / open_spiel[9] - 1,
                  "largest_component": max(r10.info["component_sizes"])}
    for m in (20, 30, 40):
        stats, _ = stats_for(m)
        t, r = best_of(lambda s=stats: methods.run("kemeny", s), 1)
        out[f"m{m}"] = {"ours_s": t, "ratio_to_m10": t / ours_10, "unique": r.info["kemeny_unique"],
                        "largest_component": max(r.info["component_sizes"])}
    return out


def sparse_pool(rng: np.random.Generator, players: int = 20_000, games: int = 60_000) -> dict:
    """Maximal lotteries on a Diplomacy-scale sparse pool: random pairs, stronger player wins more."""
    a, b = rng.integers(0, players, games), rng.integers(0, players, games)
    keep = a != b
    a, b = a[keep], b[keep]
    skill = rng.normal(size=players)
    a_wins = rng.random(len(a)) < 1 / (1 + np.exp(skill[b] - skill[a]))
    winner, loser = np.where(a_wins, a, b), np.where(a_wins, b, a)
    wins = sp.csr_array((np.ones(len(winner)), (winner, loser)), shape=(players, players))
    wins.sum_duplicates()
    pairs = PairwiseCounts(np.arange(players), wins, sp.csr_array((players, players)))
    stats = Statistics("battles", np.arange(players), np.ones(players, dtype=np.int64), pairwise=pairs)
    ml, r = best_of(lambda: methods.run("maximal-lotteries", stats), 1)
    cop, _ = best_of(lambda: methods.run("copeland", stats), 1)
    return {"players": players, "games": int(len(a)), "ml_s": ml, "copeland_s": cop, "ratio_to_copeland": ml / cop,
            "support": len(r.info["support_agents"]), "unique": r.info["unique"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ballots", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {"store_to_ratings": store_to_ratings(args.ballots, rng),
               "maximal_lotteries_m50": maximal_lotteries_50(rng),
               "kemeny": kemeny_scaling(rng),
               "maximal_lotteries_sparse": sparse_pool(rng)}
    s, ml, k, sparse = (results[key] for key in ("store_to_ratings", "maximal_lotteries_m50", "kemeny",
                                                 "maximal_lotteries_sparse"))
    rows = [
        (f"store -> copeland+schulze+ranked-pairs, {s['ballots']:,} ballots x 20", s["ours_compared_s"],
         f"OpenSpiel (extrapolated) {s['open_spiel_total_s']:.1f} s", s["speedup"]),
        ("  same, all six pairwise methods (incl. kemeny, ML, IML)", s["ours_all_pairwise_s"], "", math.nan),
        ("maximal lotteries, m = 50", ml["ours_s"], f"scipy linprog {ml['scipy_linprog_s'] * 1e3:.1f} ms",
         ml["ratio"]),
        ("maximal lotteries, m = 50", ml["ours_s"],
         f"OpenSpiel (cvxpy) {ml['open_spiel_s'] * 1e3:.1f} ms" if "open_spiel_s" in ml else "OpenSpiel: cvxpy missing",
         ml.get("open_spiel_ratio", float("nan"))),
        ("kemeny exact, m = 10", k["m10"]["ours_s"], f"OpenSpiel (extrapolated) {k['m10']['open_spiel_extrapolated_s']:.0f} s",
         k["m10"]["speedup"]),
        *[(f"kemeny exact, m = {m}", k[f"m{m}"]["ours_s"], "ours at m = 10", 1 / k[f"m{m}"]["ratio_to_m10"])
          for m in (20, 30, 40)],
        (f"maximal lotteries, sparse, {sparse['players']:,} players", sparse["ml_s"], "copeland, same stats",
         1 / sparse["ratio_to_copeland"]),
    ]
    print(f"{'case':<62} {'ours':>10}  {'baseline':<36} {'baseline/ours':>13}")
    for case, ours, baseline, ratio in rows:
        print(f"{case:<62} {ours:>9.3f}s  {baseline:<36} {ratio:>13.3g}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, default=float))
    print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
