"""The partitioned Parquet store: layout, manifest of ingested files, id dictionaries."""

from pipeline.store.dictionary import IdMap
from pipeline.store.store import WINNER_CODES, IngestReport, Manifest, Partition, Store

__all__ = ["WINNER_CODES", "IdMap", "IngestReport", "Manifest", "Partition", "Store"]
