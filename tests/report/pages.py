"""Reading the report's HTML back in tests: tables as rows of (text, class) cells, images, links."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path


@dataclass
class ParsedTable:
    css: str
    header: list[str] = field(default_factory=list)
    rows: list[list[tuple[str, str]]] = field(default_factory=list)  # (text, class) per cell

    def column(self, name: str) -> int:
        return self.header.index(name)

    def row_of(self, agent: str) -> dict[str, tuple[str, str]]:
        i = self.column("agent")
        row = next(r for r in self.rows if r[i][0] == agent)
        return dict(zip(self.header, row))


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[ParsedTable] = []
        self.images: list[dict[str, str]] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._cell_class = ""
        self._in_head = False
        self._stack: list[ParsedTable] = []
        self.feed(text)

    @classmethod
    def read(cls, path: Path) -> Page:
        return cls(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._stack.append(ParsedTable(a.get("class") or ""))
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._stack and not self._in_head:
            self._stack[-1].rows.append([])
        elif tag in ("td", "th"):
            self._cell, self._cell_class = [], a.get("class") or ""
        elif tag == "img":
            self.images.append({k: v or "" for k, v in attrs})
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])

    def handle_endtag(self, tag):
        if tag == "table" and self._stack:
            self.tables.append(self._stack.pop())
        elif tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._stack:
            text = "".join(self._cell).strip()
            if self._in_head:
                self._stack[-1].header.append(text)
            elif self._stack[-1].rows:
                self._stack[-1].rows[-1].append((text, self._cell_class))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        self.text.append(data)

    def tables_of(self, css: str) -> list[ParsedTable]:
        return [t for t in self.tables if css in t.css.split()]

    def images_of(self, css: str) -> list[dict[str, str]]:
        return [i for i in self.images if css in i.get("class", "").split()]

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


class Injections(HTMLParser):
    """What markup written unescaped into a page leaves behind: a second or external script, an event
    handler, a `javascript:` link, an image not embedded in the page, an element no template writes."""

    FOREIGN = frozenset({"blink"})  # the hostile names' own tags

    def __init__(self, text: str) -> None:
        super().__init__()
        self.found: list[str] = []
        self.scripts = 0
        self.feed(text)
        if self.scripts != 1:
            self.found.append(f"{self.scripts} <script> elements (the page's own is the one)")

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "script":
            self.scripts += 1
            if "src" in a:
                self.found.append(f"<script src={a['src']!r}>")
        if tag in self.FOREIGN:
            self.found.append(f"<{tag}>")
        if tag == "img" and not a.get("src", "").startswith("data:"):
            self.found.append(f"<img src={a.get('src')!r}>")
        for name, value in a.items():
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action") and value.strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")


def injected(text: str) -> list[str]:
    return Injections(text).found
