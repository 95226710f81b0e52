"""Rating methods run with one BLAS thread.

A threaded BLAS splits long dot products (conjugate gradients, likelihoods) across however many
threads the machine gives it, so the last bits of a rating would depend on the machine and on
whether it ran in the flow process or on a single-threaded Dask worker. Equal inputs must give
equal bytes, and the parallelism comes from Dask, so methods pin BLAS to one thread.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def one_blas_thread() -> threadpool_limits:
    return threadpool_limits(limits=1, user_api="blas")
