"""Voting methods against OpenSpiel's `open_spiel.python.voting`, timed in the same run; a ratio
counts only where OpenSpiel's answer is vase's.

Run as `python -m benchmarks.bench_voting [--ballots N]`. Fixed seeds; one line per comparison (what
it compares in brackets) and JSON in benchmarks/results/voting.json. Ballots follow a Plackett-Luce
model (agent i has log-strength `spread * i / m` plus Gumbel noise), so pools have a realistic mix
of clear and close pairs.

1. N ballots over 20 agents, per method (Copeland, Schulze, ranked pairs), two ways:
   - counting + method: vase's `reduce_store` of the ingested store plus the method, against
     OpenSpiel's `run_election` on a `PreferenceProfile` built before the clock starts (it counts
     the pairs itself);
   - file to ratings, in this process: the same plus vase's ingest of the CSV, against reading the
     CSV with polars and building the profile.
   OpenSpiel runs on 5k and 10k ballot subsamples; its time at N is extrapolated linearly from those
   two (fixed + per-ballot cost). Its answer is checked on the 10k subsample against vase's on the
   same ballots (scores equal within 1e-6). OpenSpiel's Kemeny (20! orders) and maximal lotteries
   (cvxpy) cannot run at m = 20 and are left out.
2. Maximal lotteries at m = 50, solver only: ours (essential-set LP, null space) against scipy's
   `linprog` (HiGHS) on the maximin LP, the usual way, and against OpenSpiel's game solve (cvxpy,
   from the bench extra) on the same margins; lotteries equal within 1e-6.
3. Kemeny exact at m = 10 against OpenSpiel's enumeration, timed at m = 8 and 9 (answers checked
   there) and extrapolated to m = 10 by the number of orders times the pairs per order (the
   m = 8 -> 9 prediction error is reported as a check); then our time at m = 20, 30, 40 as a ratio
   to our m = 10 time (vase against itself: no peer runs there). These profiles are impartial culture
   (101 uniformly random orders), the hardest case for the MIP: no Condorcet decomposition applies.
4. Maximal lotteries on a Diplomacy-scale sparse pool, against Copeland on the same statistics (vase
   against itself).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
from open_spiel.python.voting import base, copeland, kemeny_young, ranked_pairs, schulze
from scipy.optimize import linprog

from benchmarks.common import SOLVER_ONLY, Comparison, Verdict, best_of, report, scores_agree
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


def open_spiel_scores(rule, orders: np.ndarray) -> np.ndarray:
    """OpenSpiel's scores in the agents' order."""
    outcome = rule().run_election(open_spiel_profile(orders))
    by_name = dict(zip(outcome.ranking, outcome.scores))
    return np.array([by_name[name] for name in names(orders.shape[1])], dtype=float)


def vase_scores(spec: str, orders: np.ndarray) -> np.ndarray:
    stats, agent_names = profile(rankings(orders))
    by_name = dict(zip(agent_names, methods.run(spec, stats).score))
    return np.array([by_name[name] for name in names(orders.shape[1])], dtype=float)


def extrapolated(run, small: int, large: int, ballots: int) -> float:
    """Seconds at `ballots` from a fixed and a per-ballot cost, measured at `small` and `large` ballots (best of
    3 each: on a loaded machine one slow run at `small` would flatten the slope)."""
    t_small, _ = best_of(lambda: run(small), 3)
    t_large, _ = best_of(lambda: run(large), 3)
    return max(t_large + (t_large - t_small) / (large - small) * (ballots - large), t_large)


def store_to_ratings(ballots: int, rng: np.random.Generator) -> tuple[list[Comparison], dict]:
    orders = plackett_luce(rng, 20, ballots, spread=3.0)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "ballots.csv"
        pl.DataFrame({"ranking": rankings(orders)}).write_csv(csv)
        store = Store(Path(tmp) / "store")
        ingest, _ = best_of(lambda: store.ingest([csv], "ballots"), 1)
        reduce, stats = best_of(lambda: reduce_store(store, "ballots", {"pairwise"}), 1)
        per_method = {spec: best_of(lambda s=spec: methods.run(s, stats), 1)[0] for spec in PAIRWISE}
        small, large = min(5_000, ballots // 4), min(10_000, ballots // 2)
        subsample = Path(tmp) / "subsample.csv"

        def read_profile(count: int) -> base.PreferenceProfile:
            pl.DataFrame({"ranking": rankings(orders[:count])}).write_csv(subsample)
            votes = [line.split(">") for line in pl.read_csv(subsample)["ranking"].to_list()]
            return base.PreferenceProfile(votes=votes)

        reading = extrapolated(read_profile, small, large, ballots)  # the same for every rule

        comparisons = []
        case = f"{ballots:,} ballots x 20 agents (OpenSpiel extrapolated from {small:,} and {large:,}, checked on {large:,})"
        for spec, rule in COMPARED.items():
            profiles = {count: open_spiel_profile(orders[:count]) for count in (small, large)}
            counting = extrapolated(lambda count, r=rule, p=profiles: r().run_election(p[count]), small, large, ballots)
            whole = reading + counting
            verdict = scores_agree(vase_scores(spec, orders[:large]), open_spiel_scores(rule, orders[:large]), 1e-6,
                                   centre=False)
            comparisons += [
                Comparison(f"{spec}, {case}", "counting + method: vase reduce + method, OpenSpiel run_election",
                           f"OpenSpiel {rule.__name__}", reduce + per_method[spec], counting, verdict),
                Comparison(f"{spec}, {case}", "file to ratings, in process: vase ingest + reduce + method, "
                           "OpenSpiel read + profile + run_election", f"OpenSpiel {rule.__name__}",
                           ingest + reduce + per_method[spec], whole, verdict)]
    facts = {"ballots": ballots, "agents": 20, "ingest_s": ingest, "reduce_s": reduce, "methods_s": per_method,
             "open_spiel_read_and_profile_s": reading,
             "all_six_pairwise_methods_after_reduce_s": sum(per_method.values())}
    return comparisons, facts


def maximal_lotteries_50(rng: np.random.Generator) -> tuple[list[Comparison], dict]:
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
    case = "maximal lotteries, m = 50 (501 ballots: the lottery is unique)"
    comparisons = [Comparison(case, SOLVER_ONLY, "scipy linprog (HiGHS) on the maximin LP", ours, theirs,
                              scores_agree(p, res.x[:m], 1e-6, centre=False))]
    try:  # OpenSpiel's maximal lotteries solve the same game with cvxpy (the bench extra)
        from open_spiel.python.voting import maximal_lotteries as spiel

        solver = spiel.MaximalLotteriesVoting(iterative=False)
        spiel_s, spiel_p = best_of(lambda: solver._solve_game(margins), repeat=5)
        comparisons.append(Comparison(case, SOLVER_ONLY, "OpenSpiel MaximalLotteriesVoting._solve_game (cvxpy)", ours,
                                      spiel_s, scores_agree(p, np.ravel(spiel_p), 1e-6, centre=False)))
    except ImportError as missing:
        comparisons.append(Comparison(case, SOLVER_ONLY, "OpenSpiel maximal lotteries", ours, None,
                                      Verdict(False, f"non-result: cannot run here ({missing}; the bench extra)")))
    return comparisons, {"support": int((p > 0).sum())}


def kemeny_scaling(rng: np.random.Generator, largest: int) -> tuple[list[Comparison], dict]:
    def orders_for(m: int, voters: int = 101) -> np.ndarray:
        return plackett_luce(rng, m, voters, spread=0.0)  # impartial culture: one big component

    open_spiel, checks = {}, []
    for m in (8, 9):
        orders = orders_for(m)
        while not methods.run("kemeny", profile(rankings(orders))[0]).info["kemeny_unique"]:
            orders = orders_for(m)  # OpenSpiel keeps the first of several optimal orders: compare unique ones
        rule = kemeny_young.KemenyYoungVoting
        open_spiel[m], _ = best_of(lambda o=orders, r=rule: r().run_election(open_spiel_profile(o)), 1)
        checks.append(scores_agree(vase_scores("kemeny", orders), open_spiel_scores(rule, orders), 1e-6, centre=False))
    cost = lambda m: math.factorial(m) * m * (m - 1) / 2
    predicted_9 = open_spiel[8] * cost(9) / cost(8)
    theirs_10 = open_spiel[9] * cost(10) / cost(9)
    stats10, _ = profile(rankings(orders_for(10)))
    ours_10, r10 = best_of(lambda: methods.run("kemeny", stats10), repeat=3)
    verdict = Verdict(all(c.agrees for c in checks), "checked at m = 8 and 9: " + "; ".join(c.detail for c in checks))
    comparisons = [Comparison("kemeny exact, m = 10, 101 impartial-culture ballots (OpenSpiel extrapolated from m = 9)",
                              "solver only, from the profile", "OpenSpiel KemenyYoungVoting", ours_10, theirs_10, verdict)]
    facts = {"open_spiel_m8_s": open_spiel[8], "open_spiel_m9_s": open_spiel[9],
             "m9_prediction_error": predicted_9 / open_spiel[9] - 1, "m10": {"ours_s": ours_10,
             "largest_component": max(r10.info["component_sizes"])}}
    for m in range(20, largest + 1, 10):
        stats, _ = profile(rankings(orders_for(m)))
        t, r = best_of(lambda s=stats: methods.run("kemeny", s), 1)
        facts[f"m{m}"] = {"ours_s": t, "ratio_to_m10": t / ours_10, "unique": r.info["kemeny_unique"],
                          "largest_component": max(r.info["component_sizes"])}
    return comparisons, facts


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
    return {"players": players, "games": len(a), "ml_s": ml, "copeland_s": cop, "ratio_to_copeland": ml / cop,
            "support": len(r.info["support_agents"]), "unique": r.info["unique"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ballots", type=int, default=1_000_000)
    parser.add_argument("--largest-kemeny", type=int, default=40, help="vase's Kemeny alone at m = 20, 30, ... up to this")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    comparisons, facts = [], {}
    for key, step in [("store_to_ratings", lambda: store_to_ratings(args.ballots, rng)),
                      ("maximal_lotteries_m50", lambda: maximal_lotteries_50(rng)), ("kemeny", lambda: kemeny_scaling(rng, args.largest_kemeny))]:
        found, facts[key] = step()
        comparisons += found
    facts["maximal_lotteries_sparse"] = sparse = sparse_pool(rng)
    k = facts["kemeny"]
    for m in range(20, args.largest_kemeny + 1, 10):
        print(f"[vase alone] kemeny exact, m = {m}: {k[f'm{m}']['ours_s']:.3f} s, {k[f'm{m}']['ratio_to_m10']:.3g}x "
              f"vase's m = 10 time")
    print(f"[vase alone] maximal lotteries, sparse, {sparse['players']:,} players: {sparse['ml_s']:.3f} s, "
          f"{sparse['ratio_to_copeland']:.3g}x Copeland on the same statistics")
    print(f"written {report('voting', comparisons, facts)}")


if __name__ == "__main__":
    main()
