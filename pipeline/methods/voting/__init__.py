"""Social-choice rules over ballots, battles and score tables [VasE, appendix C.2].

Positional scoring rules (`scoring`: plurality, approval, Borda), single transferable vote (`stv`),
and the majority-graph rules built on `majority`'s pairwise margins: Copeland (`copeland`), Schulze
(`schulze`, its widest paths compiled in `widest_paths`), ranked pairs (`ranked_pairs`), Kemeny-Young (`kemeny`) and (iterative) maximal
lotteries (`maximal_lotteries`). Each module registers its rules with `pipeline.methods.registry`.
"""
