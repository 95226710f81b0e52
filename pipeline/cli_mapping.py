"""The mapping options of `vase rate` and `vase ingest` (`pipeline.logs.mapping`), defined once.

Each command takes them as parameters typed `Columns`, `Values`, ... and turns them into a
`Mapping` with `mapping_of`, which refuses bad input in one line (exit 2) before any store is
written. Only typer is imported here; the mapping is imported when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from pipeline.board import Board
    from pipeline.logs import Mapping

_PANEL = "Reading your data (docs/guide.md)"
Columns = Annotated[str, typer.Option("--columns", rich_help_panel=_PANEL,
                                      help="canonical=file column, comma-separated, e.g. model_a=left,model_b=right,judge=worker")]
Values = Annotated[Optional[list[str]], typer.Option(
    "--values", rich_help_panel=_PANEL, help="COLUMN:value=mapped,... e.g. winner:left=model_a,right=model_b,draw=tie (* = any other; repeatable)")]
Constants = Annotated[str, typer.Option("--set", rich_help_panel=_PANEL, help="canonical=value on every row, e.g. winner=model_a")]
Names = Annotated[str, typer.Option("--names", rich_help_panel=_PANEL,
                                    help="agents named from a table: TABLE:ID_COLUMN=NAME_COLUMN[+NAME_COLUMN], e.g. players.csv:player_id=name")]
Where = Annotated[Optional[list[str]], typer.Option("--where", rich_help_panel=_PANEL,
                                                    help="read only the rows where COLUMN=VALUE, e.g. release=2024-08-31 (repeatable)")]
Seats = Annotated[str, typer.Option("--seats", rich_help_panel=_PANEL,
                                    help="a wide game table: SEAT,... (the column is the player, its cell the score) or PLAYER=VALUE,...; "
                                         "place: before them reads the cells as places")]
Preset = Annotated[str, typer.Option("--preset", rich_help_panel=_PANEL,
                                     help="a named mapping: arena, fastchat, winner-loser, home-away, preflib, nfg")]

MAX_QUARANTINED = 0.05  # = pipeline.board.MAX_QUARANTINED, not imported: the command starts without the library
MaxQuarantined = Annotated[float, typer.Option(
    "--max-quarantined", min=0.0, max=1.0, rich_help_panel=_PANEL,
    help="the share of the rows read that may be quarantined; above it the command exits 1 naming the top reasons")]


def mapping_of(columns: str = "", values: list[str] | None = None, constants: str = "", names: str = "",
               where: list[str] | None = None, seats: str = "", preset: str = "") -> Mapping:
    """The options as a `Mapping`; bad input is a usage error (exit 2)."""
    from pipeline.logs import MappingError
    from pipeline.logs.presets import with_preset

    try:
        return with_preset(preset, columns=columns, values=values or (), constants=constants, names=names, where=where or (),
                           seats=seats)
    except MappingError as exc:
        raise typer.BadParameter(str(exc)) from None


def check_board_files(board: Board) -> None:
    """Refuse (exit 2) a mapping that cannot apply to the board's files, before any store is written."""
    from pipeline.board import source_files
    from pipeline.logs import MappingError, log_kind

    if not board.mapping:
        return
    local = [f for f in source_files(board) if isinstance(f, Path)]  # objects in storage are checked as they are ingested
    try:
        board.mapping.check_files(local, log_kind(board.kind))
    except MappingError as exc:
        raise typer.BadParameter(str(exc)) from None
