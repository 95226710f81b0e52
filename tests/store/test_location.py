"""Where a store's files live (`pipeline.store.location`): local paths and URLs read through one
interface, object storage's errors said in one line naming the URL. Object storage here is
fsspec's in-memory filesystem (no server: the S3 server's tests are test_object_store.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import location
from pipeline.store.location import StorageError


@pytest.fixture
def url(memory_url):
    return memory_url


def test_an_address_is_a_path_under_a_local_root_or_a_url_under_a_url(tmp_path):
    assert location.address(tmp_path, "battles/x.parquet") == str(tmp_path / "battles" / "x.parquet")
    assert location.address("memory://bucket/store/", "battles/x.parquet") == "memory://bucket/store/battles/x.parquet"
    assert location.address("memory://bucket/store", "x") == "memory://bucket/store/x"
    assert location.address("memory://bucket/INBOX//", "x") == "memory://bucket/INBOX/x"  # slashes stripped, nothing else


def test_a_scheme_without_its_package_or_unknown_to_fsspec_is_one_line_naming_the_url(monkeypatch):
    import importlib

    import fsspec.core

    registry = importlib.import_module("fsspec.registry")  # (`fsspec.registry` is also a name of the package's)
    # gs:// as on a machine without gcsfs, and a scheme of no extra of vase, whatever is installed here
    for scheme in ("gs", "vase-test"):
        monkeypatch.setitem(registry.known_implementations, scheme,
                            {"class": "no_such_module_of_vase.FileSystem", "err": "not installed"})
        monkeypatch.delitem(registry._registry, scheme, raising=False)  # (a class imported already)
    with pytest.raises(StorageError) as missing:
        location.filesystem("gs://bucket/store")
    assert str(missing.value) == "gs://bucket/store: gs:// needs a package that is not installed: pip install 'vase-pipeline[gcs]'"
    with pytest.raises(StorageError) as other:
        location.filesystem("vase-test://bucket/store")
    assert str(other.value) == ("vase-test://bucket/store: vase-test:// needs a package that is not installed: install the "
                                "fsspec package for it")
    with pytest.raises(StorageError) as nested:  # the scheme is what comes before the first "://"
        location.filesystem("gs://bucket/copied://s3")
    assert str(nested.value).endswith("pip install 'vase-pipeline[gcs]'")
    with pytest.raises(StorageError) as unknown:
        location.filesystem("nosuchscheme://bucket/store")
    assert str(unknown.value).startswith("nosuchscheme://bucket/store: ") and "\n" not in str(unknown.value)
    assert "nosuchscheme" in str(unknown.value).removeprefix("nosuchscheme://bucket/store: ")  # fsspec's own words
    monkeypatch.setattr(fsspec.core, "url_to_fs", lambda url: (_ for _ in ()).throw(ValueError()))
    with pytest.raises(StorageError) as wordless:
        location.filesystem("odd://bucket/store")
    assert str(wordless.value) == "odd://bucket/store: not a storage URL fsspec knows"
    monkeypatch.undo()
    fs, path = location.filesystem("memory://bucket/store")
    assert fs.protocol == "memory" and path == "/bucket/store"


class EndpointConnectionError(Exception):
    """Named as botocore's: its name alone says the endpoint did not answer."""


UNREACHED = "check AWS_ENDPOINT_URL or the network"
REFUSED = "check the credentials in the environment or the cloud's config files"


@pytest.mark.parametrize(("error", "said"), [
    (OSError('Could not connect to the endpoint URL: "http://127.0.0.1:9/b"\nretries exhausted'),
     f'the object store cannot be reached (Could not connect to the endpoint URL: "http://127.0.0.1:9/b"); {UNREACHED}'),
    (EndpointConnectionError(), f"the object store cannot be reached (EndpointConnectionError); {UNREACHED}"),
    (EndpointConnectionError("http://127.0.0.1:9/b"), f"the object store cannot be reached (http://127.0.0.1:9/b); {UNREACHED}"),
    (TimeoutError("Read timed out"), f"the object store cannot be reached (Read timed out); {UNREACHED}"),
    (PermissionError("denied"), f"access refused (denied); {REFUSED}"),
    (ValueError("The AWS Access Key Id you provided does not exist in our records."),  # refused, though "not exist"
     f"access refused (The AWS Access Key Id you provided does not exist in our records.); {REFUSED}"),
    (ValueError("An error occurred (InvalidAccessKeyId) when calling   PutObject"),
     f"access refused (An error occurred (InvalidAccessKeyId) when calling PutObject); {REFUSED}"),
    (ValueError("The specified bucket does not exist"), "the bucket does not exist; create it first"),
    (ValueError("NoSuchBucket: the Bucket is gone"), "the bucket does not exist; create it first"),
    (ValueError("The bucket policy is malformed"), "ValueError: The bucket policy is malformed"),
    (ValueError("The specified key does not exist."), "ValueError: The specified key does not exist."),
    (KeyError("odd"), "KeyError: 'odd'"),
    (RuntimeError("first line\nsecond line"), "RuntimeError: first line"),
])
def test_what_the_object_store_says_becomes_one_line_naming_the_url(error, said):
    explained = location.explain("s3://bucket/store", error)
    assert isinstance(explained, StorageError) and str(explained) == f"s3://bucket/store: {said}"


def test_errors_inside_speaking_for_name_the_url_but_a_missing_object_stays_what_it_is():
    for kept in (FileNotFoundError("gone"), FileExistsError("there"), StorageError("said already")):
        with pytest.raises(type(kept)) as raised, location.speaking_for("s3://bucket/store"):
            raise kept
        assert raised.value is kept
    with pytest.raises(StorageError) as raised, location.speaking_for("s3://bucket/store"):
        raise PermissionError("denied")
    assert str(raised.value).startswith("s3://bucket/store: access refused (denied)")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # one line: no chained traceback


def test_parquet_files_and_objects_read_the_same_locally_and_by_url(tmp_path, url):
    import fsspec

    table = pa.table({"battle_id": ["1", "2", "3"], "rows": [1, 2, 3]})
    fs = fsspec.filesystem("memory")
    local = tmp_path / "part.parquet"
    pq.write_table(table, local, row_group_size=2)
    location.write_object(f"{url}/part.parquet", local.read_bytes())
    assert location.read_object(f"{url}/part.parquet") == local.read_bytes() == fs.cat_file(f"{url}/part.parquet")
    for where in (str(local), f"{url}/part.parquet"):
        assert location.read_table(where).equals(table)
        assert location.read_table(where, columns=["rows"]).column_names == ["rows"]
        assert location.read_schema(where).names == ["battle_id", "rows"]
        assert location.parquet_file(where).metadata.num_row_groups == 2
        assert pa.types.is_dictionary(location.parquet_file(where, read_dictionary=["battle_id"]).read().schema.field("battle_id").type)
    with pytest.raises(FileNotFoundError):
        location.read_object(f"{url}/none.parquet")


def test_log_files_of_a_url_are_its_logs_in_sorted_order_but_not_a_stores(url):
    import fsspec

    fs = fsspec.filesystem("memory")
    for key in ("logs/b.csv", "logs/a.JSONL", "logs/notes.txt", "logs/deep/c.csv", "logs/store/manifests/0000000001.json",
                "logs/store/quarantine/battles/x.csv", "logs/storefront/d.csv", "logs/manifests/e.csv"):
        fs.pipe_file(f"{url}/{key}", b"x")
    found = location.log_files(f"{url}/logs", [".csv", ".jsonl"])
    # a folder holding manifests/<n>.json is a store (left out); a folder of logs named `manifests` is not
    folder = fs._strip_protocol(f"{url}/logs")  # (the memory filesystem's keys start at its root: memory:///...)
    assert found == [f"memory://{folder}/{name}" for name in ("a.JSONL", "b.csv", "deep/c.csv", "manifests/e.csv", "storefront/d.csv")]
    assert location.log_files(f"{url}/logs/b.csv", [".csv"]) == [f"{url}/logs/b.csv"]  # an object: itself


def test_a_log_by_url_is_read_from_a_local_copy_under_its_name_removed_after(tmp_path, url):
    local = tmp_path / "log.csv"
    local.write_text("a,b\n")
    with location.fetched(local) as path:
        assert path == local
    assert local.exists()
    location.write_object(f"{url}/logs/battles.csv", b"model_a,model_b\nx,y\n")
    with location.fetched(f"{url}/logs/battles.csv") as copy:
        assert copy.name == "battles.csv" and copy.read_bytes() == b"model_a,model_b\nx,y\n"
        assert copy.parent.parent == Path(tempfile.gettempdir()) and copy.parent.name.startswith("vase-log-")
    assert not copy.parent.exists()
    with pytest.raises(FileNotFoundError), location.fetched(f"{url}/logs/none.csv"):
        pass


def test_what_the_object_store_refuses_names_the_url_of_the_object_or_folder(monkeypatch):
    import importlib

    from fsspec.implementations.memory import MemoryFileSystem

    class Refusing(MemoryFileSystem):  # a store whose every request is refused, as a bad key's would be
        protocol = "vase-refusing"

        def _refuse(self, *args, **kwargs):
            raise PermissionError("Access Denied")

        cat_file = pipe_file = isdir = find = info = _open = _refuse

    registry = importlib.import_module("fsspec.registry")
    monkeypatch.setitem(registry._registry, "vase-refusing", Refusing)
    url = "vase-refusing://bucket/logs"
    for call in (lambda: location.read_object(f"{url}/a.csv"), lambda: location.write_object(f"{url}/a.csv", b"x"),
                 lambda: location.log_files(url, [".csv"]), lambda: location.read_table(f"{url}/a.parquet")):
        with pytest.raises(StorageError) as refused:
            call()
        assert str(refused.value).startswith(f"{url}") and "access refused (Access Denied)" in str(refused.value)
