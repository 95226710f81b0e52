"""Rating methods run with one BLAS thread.

A threaded BLAS splits long dot products (conjugate gradients, likelihoods) across however many
threads the machine gives it, so the last bits of a rating would depend on the machine and on
whether it ran in the flow process or on a single-threaded Dask worker. Equal inputs must give
equal bytes, and the parallelism comes from Dask, so methods pin BLAS to one thread.

Finding the BLAS libraries means resolving the path of every shared library in the process (a
few hundred once numba, polars and pyarrow are loaded: 3-70 ms); a bootstrap pins BLAS once per
chunk of rounds, so the libraries found are kept, and looked for again only once a module was
imported since (a BLAS arrives with an extension module: numpy's, scipy's).
"""

from __future__ import annotations

import sys

from threadpoolctl import ThreadpoolController

_found: tuple[int, ThreadpoolController] | None = None  # (modules loaded when looked for, the libraries found)


def blas_libraries() -> ThreadpoolController:
    """The process's thread pools, looked for again only after a module was imported."""
    global _found
    modules = len(sys.modules)
    if _found is None or _found[0] != modules:
        _found = (modules, ThreadpoolController())
    return _found[1]


def one_blas_thread():
    """A context manager: BLAS on one thread inside it, as it was after."""
    return blas_libraries().limit(limits=1, user_api="blas")
