"""Numerical helpers the method families share, with no method of their own.

`highs`: linear and mixed-integer programs solved by HiGHS; `max_entropy`: maximum-entropy
distributions under linear constraints; `resample` and `guide_table`: the Poisson draws of the
bootstrap [Efr79]; [Dev86]; `fanout`: seeded random rounds fanned out on Dask; `threads`: one
BLAS thread while a method runs; `zero_sum`: the essential set of a symmetric zero-sum game [DL99].
"""
