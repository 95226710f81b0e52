"""Where a store's files live: a local folder, or object storage named by a URL, read through one interface.

A local path is read and written with the standard library as before (rename, fsync, flock:
`pipeline.store.files`). A URL (`s3://bucket/prefix`, `gs://`, `az://`) goes through the fsspec
filesystem of its scheme (s3fs, gcsfs, adlfs: the extras `vase-pipeline[s3]`, `[gcs]`,
`[azure]`, so a local user installs none of them), which takes credentials and endpoints from
the cloud's standard chain (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `~/.aws/config`, instance
roles; `GOOGLE_APPLICATION_CREDENTIALS`; `AZURE_STORAGE_*`): vase never stores nor logs them.

A file of a store is named by one address, a local path or a URL (`address`), and read with
`parquet_file`, `read_table` or `read_schema`, so a Dask worker without a shared disk reads the
partitions straight from the bucket with its own credentials. What the object store says when it
refuses (an endpoint that does not answer, a bucket that does not exist, a key it does not
accept) becomes `StorageError`: one line naming the URL.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.paths import is_url

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}
# What each service says when the caller's credentials are refused, or its bucket is missing
# (s3fs, gcsfs and adlfs raise PermissionError / FileNotFoundError for some, their clients' own errors for others).
REFUSED = re.compile(r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|Forbidden|403|Unauthorized|401|"
                     r"credentials|Access Key", re.IGNORECASE)
UNREACHABLE = re.compile(r"Could not connect|Connect(ion)? (call failed|refused|timeout)|EndpointConnectionError|"
                         r"Cannot connect|Name or service not known|nodename nor servname|timed out", re.IGNORECASE)

MANIFESTS = "manifests"  # a store in object storage keeps its committed manifests here (`pipeline.store.objects`)


def manifest_name(sequence: int) -> str:
    """Manifest `sequence`'s key under its store's URL."""
    return f"{MANIFESTS}/{sequence:010d}.json"


STORE_MANIFEST = re.compile(rf"^(.*/){MANIFESTS}/\d+\.json$")  # a committed manifest: its folder is a store's


class StorageError(ValueError):
    """Object storage that cannot be used as asked: one line naming the URL and what to do."""


def address(root: str | Path, relative: str) -> str:
    """The address of a file `relative` to a store's root (a URL, or a local path)."""
    return f"{str(root).rstrip('/')}/{relative}" if is_url(root) else str(Path(root) / relative)


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of a URL's scheme, and the URL's path on it (bucket/key)."""
    import fsspec

    scheme = url.split("://", 1)[0].lower()
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        extra = EXTRAS.get(scheme)
        hint = f"pip install 'vase-pipeline[{extra}]'" if extra else "install the fsspec package for it"
        raise StorageError(f"{url}: {scheme}:// needs a package that is not installed: {hint}") from None
    except ValueError as exc:  # an unknown protocol
        raise StorageError(f"{url}: {next(iter(str(exc).splitlines()), 'not a storage URL fsspec knows')}") from None


def explain(url: str, exc: BaseException) -> StorageError:
    """A service's error as one line naming `url`: credentials refused, a bucket that does not
    exist, an endpoint that does not answer, or what it said."""
    said = " ".join(next(iter(str(exc).splitlines()), "").split()) or type(exc).__name__
    if UNREACHABLE.search(said) or UNREACHABLE.search(type(exc).__name__):
        return StorageError(f"{url}: the object store cannot be reached ({said}); check AWS_ENDPOINT_URL or the network")
    if isinstance(exc, PermissionError) or REFUSED.search(said):
        return StorageError(f"{url}: access refused ({said}); check the credentials in the environment or the "
                            "cloud's config files")
    if "bucket" in said.lower() and ("not exist" in said.lower() or "NoSuchBucket" in said):
        return StorageError(f"{url}: the bucket does not exist; create it first")
    return StorageError(f"{url}: {type(exc).__name__}: {said}")


@contextmanager
def speaking_for(url: str) -> Iterator[None]:
    """Turn the object store's errors inside the block into `StorageError` naming `url`; a
    missing object stays FileNotFoundError (the caller knows what that means there)."""
    try:
        yield
    except (StorageError, FileNotFoundError, FileExistsError):
        raise
    except Exception as exc:  # noqa: BLE001 (botocore's and aiohttp's errors share no base class with OSError)
        raise explain(url, exc) from None


def _read(reader, path: str, **options):
    """`reader(path)` for a local path; for a URL, `reader(key, filesystem=...)` through fsspec."""
    if not is_url(path):
        return reader(path, **options)
    fs, key = filesystem(path)
    with speaking_for(path):
        return reader(key, filesystem=fs, **options)


def parquet_file(path: str, **options) -> pq.ParquetFile:
    """A Parquet file of a store, local or in object storage."""
    return _read(pq.ParquetFile, path, **options)


def read_table(path: str, **options) -> pa.Table:
    return _read(pq.read_table, path, **options)


def read_schema(path: str) -> pa.Schema:
    return _read(pq.read_schema, path)


def read_object(url: str) -> bytes:
    """An object's bytes (FileNotFoundError if there is none)."""
    fs, key = filesystem(url)
    with speaking_for(url):
        return fs.cat_file(key)


def write_object(url: str, data: bytes) -> None:
    """Put an object whole (a PUT is atomic: readers see the old object or the new one)."""
    fs, key = filesystem(url)
    with speaking_for(url):
        fs.pipe_file(key, data)


def log_files(url: str, suffixes: Iterable[str]) -> list[str]:
    """The log files a URL names: itself if it is an object, else the objects below it with one of
    `suffixes`, in sorted order, except inside a vase store (as a local folder is scanned)."""
    fs, key = filesystem(url)
    with speaking_for(url):
        if not fs.isdir(key):
            return [url]
        found = fs.find(key)
    stores = tuple(store.group(1) for k in found if (store := STORE_MANIFEST.match(k)))
    scheme = url.split("://", 1)[0]
    wanted = {s.lower() for s in suffixes}
    return sorted(f"{scheme}://{k}" for k in found if PurePosixPath(k).suffix.lower() in wanted and not k.startswith(stores))


@contextmanager
def fetched(source: str | Path) -> Iterator[Path]:
    """A log file as a local path: itself, or an object downloaded to a temporary folder under its
    own name (ingest hashes, reads and re-reads it as a file); the copy is deleted after the block."""
    if not is_url(source):
        yield Path(source)
        return
    fs, key = filesystem(source)
    with tempfile.TemporaryDirectory(prefix="vase-log-") as folder:
        local = Path(folder) / PurePosixPath(key).name
        with speaking_for(source):
            fs.get_file(key, str(local))
        yield local
