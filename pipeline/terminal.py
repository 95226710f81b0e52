"""What reaches a terminal from data: names with their control and format characters made visible.

A file, agent or category name is data. Printed raw, an escape sequence in it would drive the
terminal (colours, cursor moves, a rewritten title), a bidirectional override would reorder the
line, and a newline would split a one-line error in two. `visible` writes each such character as
its Python escape (`\\n`, `\\x1b`, `\\u202e`), so the name is shown whole, on the line it belongs to.
"""

from __future__ import annotations


def visible(text: object) -> str:
    """`text` as a string whose control, format and separator characters (all but the space) are
    written as escapes: what a terminal shows is what the name holds, on one line."""
    text = str(text)
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
