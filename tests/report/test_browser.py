"""The report in a real browser: headless Chromium (the distribution's package) driven by Playwright.

The set-up (`make system-packages`, which `make test` runs) installs Chromium; a test never does.
Without it the test fails saying so, it is never skipped. Playwright's own browser download
is not used: its Python package carries the driver, and `executable_path` points at Chromium.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.report.conftest import HOSTILE_CATEGORIES

pytestmark = pytest.mark.slow

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def installed_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("the browser test needs Chromium (Debian's `chromium` package): `make system-packages` installs it")
    return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    executable = installed_chromium()
    with sync_playwright() as playwright:
        # Playwright gives the browser a fresh temporary profile (its --user-data-dir) per launch.
        launched = playwright.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
        yield launched
        launched.close()


def open_page(browser, path: Path):
    """A page with everything it logs, every dialog it opens (from the first script on) and every
    request it makes recorded."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.problems, page.requests = [], []
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("request", lambda r: page.requests.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    return page


def column(page, table, index: int) -> list[str]:
    return table.evaluate(f"t => Array.from(t.tBodies[0].rows, r => r.cells[{index}].textContent.trim())")


def test_report_in_chromium(browser, demo_nightly, tmp_path):
    latest = (demo_nightly / "latest").resolve()
    index = open_page(browser, latest / "index.html")
    boards = sorted(p.parent.name for p in latest.glob("*/run.json"))
    assert index.locator("a.card").count() == len(boards)
    assert index.problems == []
    index.screenshot(path=str(tmp_path / "index.png"))

    page = open_page(browser, latest / "llmfao" / "index.html")
    run = json.loads((latest / "llmfao" / "run.json").read_text())
    methods = len(run["methods"])
    assert page.problems == []
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests  # nothing from the network
    # Every image decoded (hidden panels' too) and each kind counted against run.json.
    images = page.evaluate("Array.from(document.images, i => [i.className, i.complete && i.naturalWidth > 0])")
    assert images and all(ok for _, ok in images), images
    kinds = [cls for cls, _ in images]
    assert kinds.count("ratings-plot") == methods and kinds.count("heatmap") == ("pairwise.parquet" in run["outputs"])
    assert kinds.count("agreement") == 1 and kinds.count("history") == 1
    assert page.locator("table.leaderboard").count() == methods
    assert page.locator("table.inputs").count() == 1

    # Tabs: one method panel shows at a time; a click on a tab shows its panel.
    assert page.locator("article.panel:visible").count() == 1
    page.locator(".tabs button").nth(1).click()
    visible = page.locator("article.panel:visible")
    second = pl.read_parquet(latest / "llmfao" / "ratings.parquet").get_column("method").unique(maintain_order=True)[1]
    assert visible.count() == 1 and visible.get_attribute("data-method") == second
    assert visible.locator("table.leaderboard").is_visible()

    # Sorting: by agent (text), then by score (numbers, not text), both ways.
    table = visible.locator("table.leaderboard")
    headers = table.locator("thead th")
    names = [headers.nth(i).inner_text().strip(" \u2195\u2191\u2193") for i in range(headers.count())]
    agent, score = names.index("agent"), names.index("score")
    before = column(page, table, agent)
    headers.nth(agent).click()
    assert column(page, table, agent) == sorted(before, key=str.lower) != before
    assert headers.nth(agent).get_attribute("aria-sort") == "ascending"
    headers.nth(score).click()
    headers.nth(score).click()
    scores = [float(v) for v in column(page, table, score)]
    assert scores == sorted(scores, reverse=True) and headers.nth(score).get_attribute("aria-sort") == "descending"
    assert page.problems == []
    page.screenshot(path=str(tmp_path / "board.png"), full_page=True)
    assert (tmp_path / "board.png").stat().st_size > 10_000 and (tmp_path / "index.png").stat().st_size > 10_000


HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "javascript:alert(3)", "</style><b>x</b>",
           "=HYPERLINK(\"http://e\",\"x\")", "$\\frac{$", "\u901a\u4e49\u5343\u95ee", "10", "9", "1e3", "NaN", "-0",
           "w" * 256]


def test_hostile_names_run_no_script_and_sort_as_text(browser, tmp_path):
    # Every name is rated against every other by several methods; the page must run none of them
    # as markup or script, fetch nothing, keep its tabs working, and sort names as text: "10",
    # "1e3", "9" (names that look like numbers sorted as 10, 1000 and 9 before).
    import csv

    from pipeline.board import Board, run_board
    from pipeline.store import Store

    source = tmp_path / "battles.csv"
    with source.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model_a", "model_b", "winner"])
        writer.writerows([a, b, "model_a" if (i + j) % 3 else "tie"] for i, a in enumerate(HOSTILE) for j, b in enumerate(HOSTILE) if a != b)
    out = tmp_path / "out"
    run_board(Board("hostile", "battles", (str(source),), ("copeland", "m-elo:bootstrap=20", "schulze"), min_records=0),
              Store(tmp_path / "store"), out)
    page = open_page(browser, out / "index.html")
    for i in range(page.locator(".tabs button").count()):
        page.locator(".tabs button").nth(i).click()
    assert page.problems == []
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    assert page.locator("a[href^='javascript']").count() == 0 and page.locator("img[src='x']").count() == 0
    table = page.locator("article.panel:visible table.leaderboard")
    headers = table.locator("thead th")
    agent = [headers.nth(i).inner_text().strip(" \u2195\u2191\u2193") for i in range(headers.count())].index("agent")
    headers.nth(agent).click()
    names = column(page, table, agent)
    assert sorted(names) == sorted(HOSTILE)
    assert [n for n in names if n in ("10", "9", "1e3")] == ["10", "1e3", "9"]
    assert page.problems == []


def test_every_page_with_hostile_names_runs_no_script_of_theirs(browser, hostile_nightly):
    # The run's index, the board (with its history), its categories and the backtest, each opened,
    # every tab clicked and every link followed from the index: no dialog, no error, nothing fetched.
    latest = (hostile_nightly / "latest").resolve()
    pages = sorted(latest.rglob("index.html"))
    assert len(pages) == 3 + len(HOSTILE_CATEGORIES)
    for path in pages:
        page = open_page(browser, path)
        for i in range(page.locator(".tabs button").count()):
            page.locator(".tabs button").nth(i).click()
        links = page.evaluate("Array.from(document.links, a => a.href)")
        assert all(link.startswith("file:") for link in links), (path, links)
        assert page.problems == [] and page.locator("blink").count() == 0, (path, page.problems)
        assert all(url.startswith(("file:", "data:")) for url in page.requests), (path, page.requests)
        assert page.evaluate("document.scripts.length") == 1, path
        page.close()


# Every panel shown and every <details> open, so that hidden tables are measured too.
SHOW_ALL = ".js .panel:not(.active) { display: block !important; }"
MEASURE = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const sideways = Array.from(document.querySelectorAll('.table-wrap')).filter(w => w.scrollWidth > w.clientWidth + 1)
    .map(w => `${w.querySelector('table').className} ${w.querySelector('th') ? w.querySelector('th').textContent : ''}: ${w.scrollWidth} > ${w.clientWidth}`);
  const tables = Array.from(document.querySelectorAll('.table-wrap table'))
    .map(t => [t.className, Array.from(t.querySelectorAll('thead th'), th => th.textContent.trim())]);
  return {page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth, sideways, tables};
}"""


@pytest.fixture(scope="module")
def provisional_board(tmp_path_factory) -> Path:
    """The widest board table the report draws: m-elo with its intervals, rank (UB), tier and records,
    and long-named agents with too few records for a rank, shown apart in a provisional table; and
    the longest unbroken words, a refused method's canonical spec in the notes (without a prior m-elo
    has no estimate: the newcomers never lose)."""
    from pipeline.board import Board, run_board
    from pipeline.store import Store

    folder = tmp_path_factory.mktemp("provisional")
    regulars = [f"claude-3-5-sonnet-20240620-variant-{i}" for i in range(6)]
    rows = [(a, b, ("model_a", "model_b", "tie")[(i + j) % 3]) for i, a in enumerate(regulars) for j, b in enumerate(regulars) if a != b]
    rows += [(f"newcomer-with-a-long-name-{k}-1b", regulars[k], "model_a") for k in range(2)]  # one record each
    (folder / "battles.csv").write_text("model_a,model_b,winner\n" + "".join(f"{a},{b},{w}\n" for a, b, w in rows * 3))
    run_board(Board("wide", "battles", (str(folder / "battles.csv"),), ("m-elo:bootstrap=20,prior=1", "m-elo:bootstrap=20"), min_records=10),
              Store(folder / "store"), folder / "out")
    return folder / "out" / "index.html"


@pytest.mark.parametrize("width", [390, 1366])
def test_no_page_overflows_sideways_and_no_table_scrolls_on_a_laptop(browser, demo_nightly, provisional_board, width):
    # At 1366 px the m-elo table hid tier, rank (UB) and records behind a horizontal scroll; on a
    # 390 px phone the page overflowed sideways (444 px). On a phone a table wider than the screen
    # scrolls inside its own frame; the page never does.
    latest = (demo_nightly / "latest").resolve()
    pages = sorted(latest.rglob("index.html"))
    assert len(pages) >= 5
    pages.append(provisional_board)
    headers: set[str] = set()
    classes: set[str] = set()
    for path in pages:
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(path.as_uri(), wait_until="load")
        page.add_style_tag(content=SHOW_ALL)
        measured = page.evaluate(MEASURE)
        page.close()
        for css, names in measured.pop("tables"):
            classes.update(css.split())
            if "leaderboard" in css.split():
                headers.update(name.strip(" \u2195\u2191\u2193") for name in names)
        assert measured["page"] <= measured["view"] == width, (path, measured)
        if width >= 1366:
            assert measured["sideways"] == [], (path, measured)
    # The widest tables were among those measured: m-elo's leaderboard with its intervals, rank (UB),
    # tier and records, and a provisional agents' table.
    assert {"95% interval", "rank (UB)", "tier", "records"} <= headers, headers
    assert "provisional" in classes, classes
