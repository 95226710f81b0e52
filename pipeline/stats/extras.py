"""Statistics beyond the core three, registered by the modules that need them.

An `Extra` says which columns of which log kinds it reads, how one unit of work reduces to a
partial value, how two partials merge, and how the merged value becomes the statistic handed to
methods (indexed like the core statistics: local agents 0..k-1 for store ids `agents`). Merges
must be exact and order-independent (integer units, or a sort by a total key), so that results
stay identical whatever the partitioning. A method asks for an extra by name in `needs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class Extra:
    name: str
    columns: Mapping[str, tuple[str, ...]]  # log kind -> columns read
    partial: Callable[[pa.Table, str, int], Any]  # (unit table, kind, size of the id space)
    merge: Callable[[Any, Any], Any]
    finalize: Callable[[Any, np.ndarray, Any], Any]  # (merged, agents present, store)

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self.columns)


EXTRAS: dict[str, Extra] = {}


def register_extra(extra: Extra) -> Extra:
    if extra.name in EXTRAS or extra.name in ("pairwise", "positions", "histogram"):
        raise ValueError(f"statistic {extra.name!r} registered twice")
    EXTRAS[extra.name] = extra
    return extra
