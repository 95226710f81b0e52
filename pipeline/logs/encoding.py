"""Text encodings: logs are UTF-8, with or without a byte order mark; anything else is refused
in one line that says what the bytes look like and where the first bad one is."""

from __future__ import annotations

from pathlib import Path

from pipeline.logs.records import UnreadableFile

UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = {  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    b"\xff\xfe\x00\x00": "UTF-32 (little-endian)",
    b"\x00\x00\xfe\xff": "UTF-32 (big-endian)",
    b"\xff\xfe": "UTF-16 (little-endian)",
    b"\xfe\xff": "UTF-16 (big-endian)",
}
CONVERT = "vase reads UTF-8 (with or without a byte order mark); convert the file first"


def bom_length(head: bytes, path: Path | str) -> int:
    """Bytes of a UTF-8 byte order mark at the start of `head` (0 or 3); other marks are refused."""
    if head.startswith(UTF8_BOM):
        return len(UTF8_BOM)
    for mark, name in _OTHER_BOMS.items():
        if head.startswith(mark):
            raise UnreadableFile(path, f"{name} text (byte order mark {mark.hex(' ').upper()}): {CONVERT}", line=1)
    if b"\x00" in head[:2] and len(head) >= 2:
        raise UnreadableFile(path, f"NUL bytes at the start: UTF-16 or UTF-32 text without a byte order mark? {CONVERT}", line=1)
    return 0


def decode(data: bytes, path: Path | str, first_line: int, offset: int) -> str:
    """`data` (which starts at physical line `first_line`, byte `offset` of the file) as text."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, path, first_line, offset) from None


def not_utf8(data: bytes, exc: UnicodeDecodeError, path: Path | str, first_line: int, offset: int) -> UnreadableFile:
    line = first_line + data.count(b"\n", 0, exc.start)
    bad = data[exc.start:exc.start + 1].hex().upper()
    guess = " (Latin-1 or Windows-1252?)" if 0x80 <= data[exc.start] <= 0xFF and exc.reason != "unexpected end of data" else ""
    return UnreadableFile(path, f"not UTF-8 text: byte 0x{bad} at byte offset {offset + exc.start}{guess}; {CONVERT}", line=line)
