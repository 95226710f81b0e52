"""The partitioned Parquet store: layout, manifest of ingested files, id dictionaries."""

from pipeline.store.dictionary import IdMap
from pipeline.store.files import DamagedStore, StoreDiskFull
from pipeline.store.store import IngestReport, Manifest, Partition, Store, encode, is_store

__all__ = ["DamagedStore", "IdMap", "IngestReport", "Manifest", "Partition", "Store", "StoreDiskFull", "encode", "is_store"]
