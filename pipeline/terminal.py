"""What the command writes to a terminal: names made visible, and tables printed whole when piped.

A file, agent or category name is data. Printed raw, an escape sequence in it would drive the
terminal (colours, cursor moves, a rewritten title), a bidirectional override would reorder the
line, and a newline would split a one-line error in two. `visible` writes each such character as
its Python escape (`\\n`, `\\x1b`, `\\u202e`), so the name is shown whole, on the line it belongs to.

Piped or redirected, stdout has no width of its own; rich would fold tables at 80 columns (or at
the width of a terminal that stdin happens to be), cutting words such as `kernel_variance` in
two. `Output` prints them at the width they need instead.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

PIPED_WIDTH = 10_000  # as wide as any table needs: rich sizes a table to its content within this


def visible(text: object) -> str:
    """`text` as a string whose control, format and separator characters (all but the space) are
    written as escapes: what a terminal shows is what the name holds, on one line."""
    text = str(text)
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class Output(Console):
    """The command's stdout. On a terminal, as wide as the terminal (rich's own sizing); piped or
    redirected (`vase methods | less`, `> file`) with no `COLUMNS` asked for, as wide as each
    table needs, so a table is printed whole and never folded mid-word."""

    def _size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        if not self.is_terminal and "COLUMNS" not in os.environ:
            return ConsoleDimensions(PIPED_WIDTH, size.height)
        return size

    size = property(_size, Console.size.fset)
