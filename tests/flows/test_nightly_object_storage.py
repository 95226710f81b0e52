"""The nightly with its stores in object storage and its run published there, against a real S3
server process (moto's: `tests.s3server`), in Prefect's local mode: the same bytes as a nightly
with local stores, the run's files and `latest.json` in the bucket, a link artifact to its report
and a table artifact with the top of each board."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from tests.conftest import SAMPLES
from tests.s3server import s3  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow


@pytest.fixture
def aws(s3, monkeypatch):  # noqa: F811
    from s3fs import S3FileSystem

    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    S3FileSystem.clear_instance_cache()
    yield s3.bucket()
    S3FileSystem.clear_instance_cache()


def artifacts() -> dict[str, object]:
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return {a.key: a for a in await client.read_artifacts()}

    return asyncio.run(read())


def test_nightly_with_stores_and_report_in_object_storage(tmp_path, aws, s3):  # noqa: F811
    from flows.nightly import nightly

    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [
        {"name": "arena", "kind": "battles", "sources": [str(SAMPLES / "arena_bench" / "arena_hard_battles.csv")],
         "methods": ["elo", "copeland"]},
        {"name": "f1", "kind": "games", "sources": [str(SAMPLES / "f1")], "methods": ["borda"]}]}))
    final = nightly(str(config), str(tmp_path / "out"), workers=0, stores=f"s3://{aws}/stores", publish=f"s3://{aws}/reports",
                    publish_link="https://reports.example/vase")
    run_id = final.rsplit("/", 1)[-1]
    nightly(str(config), str(tmp_path / "local"), workers=0)  # the same boards with local stores, compared below

    assert not (tmp_path / "out" / "stores").exists()  # the stores are in the bucket only
    keys = s3.objects(aws)
    assert {"stores/arena/manifests/0000000001.json", "stores/f1/manifests/0000000001.json"} <= set(keys)
    client = s3.client()
    read = lambda key: client.get_object(Bucket=aws, Key=key)["Body"].read()  # noqa: E731
    assert json.loads(read("reports/latest.json")) == {"run": run_id, "index": f"runs/{run_id}/index.html"}
    published = {k.removeprefix(f"reports/runs/{run_id}/") for k in keys if k.startswith(f"reports/runs/{run_id}/")}
    assert published == {str(p.relative_to(final)) for p in (tmp_path / "out" / "latest").resolve().rglob("*") if p.is_file()}
    for board in ("arena", "f1"):
        for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
            expected = (tmp_path / "local" / "latest" / board / name).read_bytes()
            assert read(f"reports/runs/{run_id}/{board}/{name}") == expected, (board, name)

    found = artifacts()
    assert found["nightly-report"].data == f"[vase nightly {run_id}](https://reports.example/vase/runs/{run_id}/index.html)"
    top = json.loads(found["arena-top"].data)
    ratings = json.loads((tmp_path / "local" / "latest" / "arena" / "ratings.json").read_text())
    assert top == sorted(({k: r[k] for k in ("method", "rank", "agent", "score")} for r in ratings if r["rank"] <= 5),
                         key=lambda r: (r["method"], r["rank"], r["agent"]))
    assert {r["method"].split(":")[0] for r in top} == {"elo", "copeland"} and len(top) >= 10
