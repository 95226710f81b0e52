"""Text columns as the readers keep them: ASCII found from the bytes, everything else normalised."""

from __future__ import annotations

import pyarrow as pa

from pipeline.logs.records import ascii_only, nfc_text


def test_ascii_only_reads_the_data_buffer_of_plain_text_and_never_trusts_views():
    assert ascii_only(pa.array(["model-a", None, ""]))
    assert ascii_only(pa.array([None, None], pa.string())) and ascii_only(pa.array([], pa.large_string()))
    assert not ascii_only(pa.array(["model-a", "mod\u00e8le"]))
    assert not ascii_only(pa.array([b"\xff"], pa.binary()))
    assert not ascii_only(pa.array(["ok", "\u00e9"]).cast(pa.string_view()))  # short values sit in the views
    assert not ascii_only(pa.array(["ok"]).cast(pa.string_view()))


def test_nfc_text_composes_only_what_is_not_ascii():
    plain = pa.array(["a", "b"])
    assert nfc_text(plain) is plain
    assert nfc_text(pa.array(["e\u0301", None])).to_pylist() == ["\u00e9", None]
    assert nfc_text(pa.array(["e\u0301"]).cast(pa.string_view())).to_pylist() == ["\u00e9"]
