"""Running the flows from the command line, in Prefect's local mode unless PREFECT_API_URL is set."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from flows.nightly import nightly


def run_nightly(config: Path, out: Path, workers: int = 2, scheduler: str | None = None, console: Console | None = None) -> Path:
    console = console or Console()
    console.print(f"nightly flow: boards from {config}, output in {out}")
    nightly(str(config), str(out), scheduler=scheduler, workers=workers)
    return (out / "latest").resolve()
