"""A persistent dictionary from names to dense integer ids (0, 1, 2, ... in order of arrival).

Ids never change once given. Names new to a batch are added in sorted order, so a batch gets the
same ids whatever the order of its rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import sort_positions
from pipeline.paths import is_url
from pipeline.store.files import reading_store_file, write_parquet
from pipeline.store.location import read_table

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])


class IdMap:
    def __init__(self, names: list[str] | None = None):
        self.names: list[str] = list(names or [])
        self._index = {name: i for i, name in enumerate(self.names)}
        if len(self._index) != len(self.names):
            raise ValueError("duplicate names in an id map")

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def load(cls, path: Path | str) -> IdMap:
        """The dictionary at a local path (empty if missing), or at a URL (`pipeline.store.location`)."""
        if not is_url(path) and not Path(path).exists():
            return cls()
        with reading_store_file(path):
            table = read_table(str(path))
            ids = table.column("id").to_numpy()
            if not np.array_equal(ids, np.arange(len(ids))):
                raise ValueError("ids are not dense 0..n-1")
            return cls(table.column("name").to_pylist())

    def save(self, path: Path) -> None:
        write_parquet(path, pa.table({"id": pa.array(range(len(self.names)), pa.int32()), "name": self.names}, schema=SCHEMA))

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Give the unseen names among `values` the next ids, in sorted order."""
        unseen = sorted(set(pc.unique(values).drop_null().to_pylist()) - self._index.keys())
        for name in unseen:
            self._index[name] = len(self.names)
            self.names.append(name)

    def truncate(self, size: int) -> None:
        """Forget the names given ids at or after `size` (the names of a file that was refused)."""
        for name in self.names[size:]:
            del self._index[name]
        del self.names[size:]

    def lookup(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Ids of `values`; nulls, and names not in the dictionary, are null. Each distinct name
        is looked up once, so the cost follows the names in `values`, not the dictionary's size."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return self.lookup_encoded(pc.dictionary_encode(values))

    def lookup_encoded(self, values: pa.DictionaryArray) -> pa.Array:
        """`lookup` of dictionary-encoded names: each name of the dictionary looked up once."""
        ids = pa.array([self._index.get(name) for name in values.dictionary.to_pylist()], pa.int32())
        return pc.take(ids, values.indices)

    def encode(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Ids of `values` (nulls stay null), adding unseen names."""
        self.add(values)
        return self.lookup(values)

    def name_order(self) -> np.ndarray:
        """Each id's position among the names sorted by Unicode code point: a key that orders ids by
        name without handing the names on (statistics carry ids only)."""
        return sort_positions(np.array(self.names, dtype=object))

    def ids(self, names: list[str]) -> np.ndarray:
        return np.array([self._index[n] for n in names], dtype=np.int32)
