"""A published run copied to object storage, where a team reads it without the worker's disk.

```
<target>/runs/<run id>/...   the run folder as published locally: every board, index.html, run.json
<target>/latest.json         {"run": <run id>, "index": "runs/<run id>/index.html"}, written last
```
Each file of a run is uploaded under the run's own id (never overwritten), and `latest.json` is
written after the last of them, so it never names a run that is still arriving. The target is
a URL (`s3://bucket/vase`, `gs://`, `az://`: `pipeline.store.location`, credentials from the
cloud's standard chain) or a local folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.paths import is_url
from pipeline.store.location import address, filesystem, speaking_for
from pipeline.store.files import write_text

LATEST = "latest.json"
TOP = 5  # agents per method in a board's table


def upload_run(folder: Path, target: str, run_id: str) -> str:
    """Copy the run `folder` to `<target>/runs/<run id>/`, then point `<target>/latest.json` at it;
    the path of its index.html relative to `target`."""
    run = address(target, f"runs/{run_id}")
    index = f"runs/{run_id}/index.html"
    latest = json.dumps({"run": run_id, "index": index}, indent=2) + "\n"
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    if is_url(target):
        fs, key = filesystem(run)
        with speaking_for(target):
            fs.put([str(p) for p in files], [f"{key}/{p.relative_to(folder).as_posix()}" for p in files])
            fs.pipe_file(filesystem(address(target, LATEST))[1], latest.encode())
    else:
        shutil.copytree(folder, run, dirs_exist_ok=True)
        write_text(Path(target) / LATEST, latest)
    return index


def board_tops(folder: Path, top: int = TOP) -> dict[str, list[dict]]:
    """Per board of a run folder, its top agents by method (rank, agent, score), from ratings.json."""
    tops: dict[str, list[dict]] = {}
    for ratings in sorted(Path(folder).glob("*/ratings.json")):
        rows = [{"method": r["method"], "rank": r["rank"], "agent": r["agent"], "score": r["score"]}
                for r in json.loads(ratings.read_text(encoding="utf-8")) if r["rank"] <= top]
        tops[ratings.parent.name] = sorted(rows, key=lambda r: (r["method"], r["rank"], r["agent"]))
    return tops
