"""Game-theoretic ratings: agents rated by equilibria of the game their data defines.

Nash averaging (`nash_averaging`) [Bal18], deviation ratings (`deviation`) [DevR], affinity-entropy
ratings (`affinity`) [GTLLM], alpha-Rank (`alpha_rank`) [VasE, F.0.3] and the uniform baseline
(`uniform`); `equilibria` chooses the game from the statistics and publishes per-player ratings.
The games themselves are built in `pipeline.games`.
"""
