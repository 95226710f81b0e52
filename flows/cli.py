"""The installed `vase` command: the library's commands (`pipeline.cli`) and `demo`, which runs the
nightly Prefect flow over data-samples/ in Prefect's local mode (offline; a Prefect server is
used instead when PREFECT_API_URL is set)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from pipeline.cli import SAMPLES, SchedulerOption, app, console
from pipeline.terminal import visible


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", file_okay=False, help="where the store and the published runs go")] = Path("vase-demo"),
    samples: Annotated[Path, typer.Option("--samples", help="folder with nightly.yaml and the sample logs")] = SAMPLES,
    workers: Annotated[int, typer.Option(min=0, help="local Dask worker processes when no scheduler is given")] = 2,
    scheduler: SchedulerOption = None,
) -> None:
    """Run the nightly flow over data-samples/ offline and print where the leaderboards are."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from flows.nightly import nightly

    config, out = samples / "nightly.yaml", out.resolve()
    console.print(f"nightly flow: boards from {visible(config)}, output in {visible(out)}")
    nightly(str(config), str(out), scheduler=scheduler, workers=workers)
    latest = (out / "latest").resolve()
    console.print(Text.assemble("\n", ("leaderboards", "bold green"), f" in {visible(latest)}:"))
    for board in sorted(latest.glob("*/leaderboard.md")):
        console.print(f"  {visible(board)}")
    console.print(f"report: {visible(latest / 'index.html')}", soft_wrap=True)


if __name__ == "__main__":
    app()
