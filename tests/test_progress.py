"""Progress bars: labels are shown as they are."""

from __future__ import annotations

import io

from pipeline.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_label_is_text_never_markup(monkeypatch):
    # A file or board named like rich markup ('[/dim]' closes a tag that is not open) raised MarkupError on a terminal.
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress_bar("ingest", 2) as advance:
        advance(label="[link=https://example.com]x[/link]")
        advance(label="[/dim]logs[bold].csv")  # the label drawn last
    assert "[/dim]logs[bold].csv" in terminal.getvalue()
