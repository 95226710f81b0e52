"""Presets: named bundles of a `Mapping` for formats people already have (`--preset NAME`).

Each preset is the mapping a user would otherwise type; options given beside it add to it or
replace its entries (`--preset winner-loser --columns model_a=winner_id,model_b=loser_id`).
Formats a kind reads as they are (FastChat's battles, PrefLib order files, Gambit `.nfg`) are
presets of the empty mapping, so that every preset names its kind and `vase inspect` can say so.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.logs.mapping import Mapping, MappingError


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str
    says: str  # what files it reads
    mapping: Mapping


_ARENA_STYLE = tuple(
    (f"features_{side}.{name}", paths)
    for side in "ab"
    for name, paths in (
        ("len", (f"sum_assistant_{side}_tokens",)),
        ("header", tuple(f"header_count_{side}.h{i}" for i in range(1, 7))),
        ("list", (f"list_count_{side}.ordered", f"list_count_{side}.unordered")),
        ("bold", (f"bold_count_{side}.**", f"bold_count_{side}.__")),
    )
)

PRESETS = {p.name: p for p in (
    Preset("arena", "battles", "Chatbot Arena battle dumps (judge, question_id, tstamp; conv_metadata as style features "
           "len, header, list, bold)", Mapping(nested=tuple((c, "conv_metadata", paths) for c, paths in _ARENA_STYLE))),
    Preset("fastchat", "battles", "FastChat's clean battles (model_a, model_b, winner, judge, tstamp): read as they are",
           Mapping()),
    Preset("winner-loser", "battles", "sports tables with a winner column and a loser column (default names winner, loser)",
           Mapping(columns=(("model_a", "winner"), ("model_b", "loser")), constants=(("winner", "model_a"),))),
    Preset("home-away", "battles", "results with home and away sides and a result column home/away/draw",
           Mapping(columns=(("model_a", "home_team"), ("model_b", "away_team"), ("winner", "result")),
                   values=(("winner", (("home", "model_a"), ("away", "model_b"), ("draw", "tie"))),))),
    Preset("preflib", "ballots", "PrefLib order files (.soc, .soi, .toc, .toi): read as they are", Mapping()),
    Preset("nfg", "nfg", "Gambit strategic-form games (.nfg): rated directly", Mapping()),
)}


def preset(name: str) -> Preset:
    if name not in PRESETS:
        raise MappingError(f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
    return PRESETS[name]


def preset_mapping(name: str) -> Mapping:
    return preset(name).mapping


def with_preset(name: str, **texts: object) -> Mapping:
    """`Mapping.parse` of the options' texts, added to the mapping of the preset `name` ("": none)."""
    if not name:
        return Mapping.parse(**texts)
    chosen = preset(name)
    return Mapping.parse(preset=name, preset_kind=chosen.kind, start=chosen.mapping, **texts)
