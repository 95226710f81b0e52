"""A store in object storage: how a commit holds without rename or flock.

```
<url>/manifests/<sequence>.json             commit n's manifest (10 digits), created only if absent
<url>/lease.json                            the one writer's lease: owner, token, expiry
<url>/dictionaries/<name>-<token>-<n>.parquet the dictionaries as of commit n (its manifest names them)
<url>/<kind>/date=YYYY-MM-DD/<sha>-<token>.parquet, <url>/quarantine/<kind>/<sha>-<token>.parquet,
<url>/ids/<kind>/run-<hex>.npy              as in a local store, each name unique to the writer that made it
```
An object is never overwritten: every partition, quarantine, dictionary and id run carries the
token of the ingest that wrote it, and is uploaded before the manifest that lists it. The commit
point is the creation of `manifests/<n+1>.json` *if it does not exist* (S3's `If-None-Match: *`,
which s3fs sends for `pipe_file(mode="create")`; a filesystem without a conditional write of its
own gets fsspec's check-then-write, and there the lease alone keeps writers apart). Readers list
`manifests/` and take the newest; a manifest holds a SHA-256 of its content, so one edited by hand
is refused (`DamagedStore`, naming it) instead of being read.

One writer at a time holds `lease.json` (created if absent; renewed while it works; expired
after `VASE_LEASE_SECONDS`, 300 by default). A second writer stops in one line naming the URL
and the holder. A lease past its expiry belonged to a writer that died: the next one deletes it,
takes its own, and checks that what it reads back is its own (two writers taking over at once:
one of them stops). Correctness does not rest on the lease: two writers that both built on
manifest n both try to create n+1, and only one can; the other stops, and its objects are
orphans. Orphans (objects that neither the newest manifest nor the one before list: left by a
killed or beaten writer) are deleted by the next writer after its own commit, which fences off
the writer that left them (its manifest could only be an n+1 that now exists). Objects that the
manifest before the newest lists are kept one commit longer for the readers that read it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path

from pipeline.store.files import DamagedStore
from pipeline.store.location import MANIFESTS, StorageError, filesystem, manifest_name, speaking_for

LEASE = "lease.json"
LEASE_SECONDS_ENV = "VASE_LEASE_SECONDS"
LEASE_SECONDS = 300.0
DATA_FOLDERS_SKIPPED = (MANIFESTS, "cache")  # not objects of a commit: never orphans
log = logging.getLogger(__name__)


class StoreBusy(StorageError):
    """Another writer holds the lease, or committed first: nothing of this ingest was committed."""


def lease_seconds() -> float:
    return float(os.environ.get(LEASE_SECONDS_ENV, LEASE_SECONDS))


def manifest_text(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def listed_objects(data: dict) -> set[str]:
    """Every object a manifest lists (relative to the store): partitions, quarantine, id runs, dictionaries."""
    files = data.get("files", [])
    listed = {p["path"] for entry in files for p in entry.get("partitions", ())}
    listed |= {entry["quarantine"] for entry in files if entry.get("quarantine")}
    listed |= {run["path"] for entry in data.get("ids", {}).values() for run in entry.get("runs", ())}
    return listed | set(data.get("dictionaries", {}).values())


class ObjectStore:
    """The objects of one store in object storage, and its commit protocol."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.path = filesystem(self.url)
        self.path = self.path.rstrip("/")
        self.token = uuid.uuid4().hex[:16]  # this writer's: in every object it uploads, and in its lease
        self._manifests: dict[int, dict] = {}  # read already (a committed manifest never changes)

    def key(self, relative: str) -> str:
        return f"{self.path}/{relative}"

    def url_of(self, relative: str) -> str:
        return f"{self.url}/{relative}"

    def sequences(self) -> list[int]:
        """The sequence numbers of the committed manifests, oldest first ([] for a new store)."""
        folder = self.key(MANIFESTS)
        with speaking_for(self.url):
            self.fs.invalidate_cache(folder)
            try:
                names = self.fs.ls(folder, detail=False)
            except FileNotFoundError:
                self._check_bucket()
                return []
        return sorted(int(Path(n).stem) for n in names if Path(n).stem.isdigit() and n.endswith(".json"))

    def _check_bucket(self) -> None:
        bucket = self.path.split("/", 1)[0]
        with speaking_for(self.url):
            if not self.fs.exists(bucket):
                raise StorageError(f"{self.url}: the bucket {bucket!r} does not exist; create it first")

    def manifest_url(self, sequence: int) -> str:
        return self.url_of(manifest_name(sequence))

    def manifest(self, sequence: int) -> dict:
        """Manifest `sequence` as committed; `DamagedStore` if it does not parse or was changed since."""
        if sequence in self._manifests:
            return self._manifests[sequence]
        url = self.manifest_url(sequence)
        with speaking_for(self.url):
            raw = self.fs.cat_file(self.key(manifest_name(sequence)))
        try:
            data = json.loads(raw.decode("utf-8"))
            recorded = data.pop("sha256")
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            raise DamagedStore(f"{url}: a manifest of the store cannot be read ({type(exc).__name__}: {exc}); restore it "
                               "from a backup, or ingest the logs into a new store", url, str(exc)) from None
        if hashlib.sha256(manifest_text(data).encode()).hexdigest() != recorded:
            raise DamagedStore(f"{url}: the manifest was changed after it was committed (its SHA-256 does not match); "
                               "restore it from a backup, or ingest the logs into a new store", url, "checksum")
        self._manifests[sequence] = data
        return data

    def newest(self) -> tuple[int, dict]:
        """The newest committed manifest and its sequence number (0 and {} for a new store)."""
        sequences = self.sequences()
        return (sequences[-1], self.manifest(sequences[-1])) if sequences else (0, {})

    def create_manifest(self, sequence: int, data: dict) -> None:
        """Commit: create manifest `sequence` unless it exists (another writer committed it first: `StoreBusy`)."""
        body = manifest_text(data | {"sha256": hashlib.sha256(manifest_text(data).encode()).hexdigest()})
        with speaking_for(self.url):
            try:
                self.fs.pipe_file(self.key(manifest_name(sequence)), body.encode(), mode="create")
            except FileExistsError:
                raise StoreBusy(f"{self.url}: another writer committed manifest {sequence} first; nothing of this ingest "
                                "was committed (its files are ingested by running it again)") from None

    def upload(self, local: Path, relative: str) -> None:
        with speaking_for(self.url):
            self.fs.put_file(str(local), self.key(relative))

    def download(self, relative: str, local: Path) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        with speaking_for(self.url):
            self.fs.get_file(self.key(relative), str(local))

    # The lease.

    def _lease(self) -> dict | None:
        with speaking_for(self.url):
            try:
                return json.loads(self.fs.cat_file(self.key(LEASE)))
            except FileNotFoundError:
                return None
            except ValueError:  # half a lease can only be damage: treated as expired
                return {"owner": "unknown", "token": "", "expires": 0}

    def _lease_body(self) -> bytes:
        return json.dumps({"owner": f"{socket.gethostname()}:{os.getpid()}", "token": self.token,
                           "expires": time.time() + lease_seconds()}).encode()

    def acquire(self) -> None:
        """Take the store's lease, or raise `StoreBusy` naming its holder; an expired lease (its
        writer died) is taken over."""
        with speaking_for(self.url):
            try:
                self.fs.pipe_file(self.key(LEASE), self._lease_body(), mode="create")
            except FileExistsError:
                held = self._lease()
                if held is not None and held["expires"] > time.time():
                    until = dt.datetime.fromtimestamp(held["expires"], dt.UTC).isoformat(timespec="seconds")
                    raise StoreBusy(f"{self.url}: another writer ({held['owner']}) holds the store's lease until {until}; "
                                    "try again when it is done") from None
                log.warning("%s: the lease of %s expired; taking it over", self.url, (held or {}).get("owner", "a writer"))
                if held is not None:
                    self.fs.rm_file(self.key(LEASE))
                try:
                    self.fs.pipe_file(self.key(LEASE), self._lease_body(), mode="create")
                except FileExistsError:
                    raise StoreBusy(f"{self.url}: another writer took over the store's lease first") from None
        self.renew()  # read back: two writers taking over an expired lease at once both deleted and created it

    def renew(self) -> None:
        """Extend the lease, after checking it is still this writer's (`StoreBusy` if it was taken over)."""
        held = self._lease()
        if held is None or held.get("token") != self.token:
            raise StoreBusy(f"{self.url}: this writer's lease expired and another writer took it over; nothing of "
                            f"this ingest was committed (raise {LEASE_SECONDS_ENV} for longer ingests)")
        with speaking_for(self.url):
            self.fs.pipe_file(self.key(LEASE), self._lease_body())

    def release(self) -> None:
        held = self._lease()
        if held is not None and held.get("token") == self.token:
            with speaking_for(self.url):
                self.fs.rm_file(self.key(LEASE))

    # Orphans.

    def orphans(self, sequence: int) -> list[str]:
        """Objects (relative paths) that neither manifest `sequence` nor the one before lists."""
        keep = set()
        for seq in (sequence, sequence - 1):
            if seq > 0:
                try:
                    keep |= listed_objects(self.manifest(seq))
                except FileNotFoundError:  # pruned already
                    pass
        with speaking_for(self.url):
            self.fs.invalidate_cache(self.path)
            try:
                found = self.fs.find(self.path)
            except FileNotFoundError:
                return []
        relative = [f[len(self.path) + 1:] for f in found if f.startswith(self.path + "/")]
        return sorted(r for r in relative
                      if r != LEASE and r.split("/", 1)[0] not in DATA_FOLDERS_SKIPPED and r not in keep)

    def remove(self, relatives: list[str]) -> None:
        if relatives:
            with speaking_for(self.url):
                self.fs.rm([self.key(r) for r in relatives])

    def prune_manifests(self, sequence: int) -> None:
        """Delete the manifests older than the one before `sequence` (readers take the newest)."""
        old = [s for s in self.sequences() if s < sequence - 1]
        self.remove([manifest_name(s) for s in old])
