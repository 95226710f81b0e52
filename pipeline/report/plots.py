"""The report's figures, drawn with matplotlib as SVG and returned as text.

Same inputs, same bytes: ids inside the SVG are hashed with a fixed salt and the date and creator
are left out of its metadata. Figures are built on `matplotlib.figure.Figure` (no pyplot state),
so nothing here touches a global figure or a display.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ACCENT = "#2f5d9e"
GOOD, BAD, NEUTRAL, REFERENCE = "#2e7d32", "#c62828", "#2f5d9e", "#222222"
MISSING = "#e6e6e6"
LABEL_CHARS = 34  # longer agent names are cut (with an ellipsis) on axes; tables keep them whole
STYLE = {
    "svg.hashsalt": "vase-report",
    # Text stays text (smaller, selectable): laid out with DejaVu Sans, matplotlib's own font, and
    # written with a list of sans-serif fallbacks, all narrower, so labels fit wherever it is viewed.
    "svg.fonttype": "none",
    "text.parse_math": False,  # names are text: `$5 to $10` is not mathtext, and `$\frac{$` no parse error
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelcolor": "#333333",
    "axes.edgecolor": "#999999",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": "#444444",
    "ytick.color": "#222222",
    "grid.color": "#e3e3e3",
    "grid.linewidth": 0.8,
    "legend.frameon": False,
}
# Win rates: red below one half, white at one half, blue above (colour-blind safe ends).
WIN_RATE = ("#b2182b", "#f4a582", "#f7f7f7", "#92c5de", "#2166ac")


def short(label: str, limit: int = LABEL_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def svg(fig: Figure) -> str:
    import matplotlib  # imported on first use only: ~1 s that only drawing needs

    buffer = io.StringIO()
    keys = ("svg.hashsalt", "svg.fonttype", "text.parse_math")
    with matplotlib.rc_context({key: STYLE[key] for key in keys}), warnings.catch_warnings():
        # A name in a script DejaVu Sans lacks (Chinese, say) is only measured with it: the SVG keeps
        # it as text, which the viewer's fonts draw, so the warning of each missing glyph is noise.
        warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def text_width(labels: Sequence[str], size: float = STYLE["font.size"]) -> float:
    """Inches taken by the longest label: DejaVu Sans averages about 0.6 em a character (a slight over-estimate)."""
    return max((len(label) for label in labels), default=0) * 0.56 * size / 72


def figure(width: float, height: float, *, left: float, right: float = 0.25, top: float = 0.35, bottom: float = 0.5) -> Figure:
    """A figure whose axes leave these margins (inches). Margins are set, not computed by a layout
    engine: measuring every label's extent was most of a report's time."""
    import matplotlib  # imported on first use only: ~1 s that only drawing needs
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height))
        fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height, bottom=bottom / height)
        return fig


def _finite(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def interval_plot(labels: Sequence[str], values: Sequence[float | None], low: Sequence[float | None] | None = None,
                  high: Sequence[float | None] | None = None, *, xlabel: str, title: str = "",
                  colours: Sequence[str] | None = None, zero_line: bool = False) -> str:
    """One row per label (first on top): a dot at the value, whiskers from low to high where given."""
    import matplotlib  # imported on first use only: ~1 s that only drawing needs

    with matplotlib.rc_context(STYLE):
        n = len(labels)
        ticks = [short(str(label)) for label in labels]
        fig = figure(6.4, 0.95 + 0.24 * max(n, 3), left=text_width(ticks) + 0.2, top=0.4 if title else 0.15, bottom=0.55)
        ax = fig.add_subplot()
        y = np.arange(n)
        x = _finite(values)
        colour = list(colours) if colours is not None else [ACCENT] * n
        if low is not None and high is not None:
            lo, hi = _finite(low), _finite(high)
            has = np.isfinite(lo) & np.isfinite(hi)
            tint = [c for c, h in zip(colour, has) if h]
            ax.hlines(y[has], lo[has], hi[has], colors=tint, alpha=0.55, linewidth=2.2)
            ax.vlines(np.r_[lo[has], hi[has]], np.r_[y[has], y[has]] - 0.22, np.r_[y[has], y[has]] + 0.22, colors=tint * 2,
                      alpha=0.55, linewidth=1.2)
        ax.scatter(x, y, s=26, c=colour, zorder=3, edgecolors="white", linewidths=0.6)
        if zero_line:
            ax.axvline(0.0, color="#555555", linewidth=1.0, linestyle="--", zorder=1)
        ax.set_yticks(y, ticks)
        ax.set_ylim(n - 0.5, -0.5)
        ax.grid(axis="x")
        ax.grid(axis="y", color="#f1f1f1", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", length=0)
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
        return svg(fig)


def matrix_plot(labels: Sequence[str], values: np.ndarray, *, title: str = "", colourbar: str, vmin: float, vmax: float,
                cmap: str | Sequence[str] = WIN_RATE, annotate: bool | None = None, xlabel: str = "", ylabel: str = "") -> str:
    """A square heat map of `values` (NaN cells grey), rows and columns in the order of `labels`;
    `cmap` names a matplotlib colour map or lists the colours of one."""
    import matplotlib  # imported on first use only: ~1 s that only drawing needs
    from matplotlib.colors import LinearSegmentedColormap

    with matplotlib.rc_context(STYLE):
        n = len(labels)
        ticks = [short(str(label), 26) for label in labels]
        margin = text_width(ticks) + 0.15
        annotate = n <= 16 if annotate is None else annotate
        cells = max(2.4, (0.5 if annotate else 0.3) * n)
        # rotated column labels take sin(60) of their length below the axes
        fig = figure(margin + cells + 1.3, 0.45 * bool(title) + 0.15 + cells + 0.87 * margin + (0.3 if xlabel else 0), left=margin,
                     right=1.3, top=0.45 * bool(title) + 0.15, bottom=0.87 * margin + (0.3 if xlabel else 0))
        ax = fig.add_subplot()
        shown = np.ma.masked_invalid(np.asarray(values, dtype=np.float64))
        colours = matplotlib.colormaps[cmap] if isinstance(cmap, str) else LinearSegmentedColormap.from_list("colours", cmap)
        colours = colours.with_extremes(bad=MISSING)
        image = ax.imshow(shown, cmap=colours, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="equal")
        ax.set_xticks(np.arange(n), ticks, rotation=60, ha="right", rotation_mode="anchor")
        ax.set_yticks(np.arange(n), ticks)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        if annotate:
            for i in range(n):
                for j in range(n):
                    v = values[i, j]
                    if np.isfinite(v):
                        dark = abs((v - vmin) / (vmax - vmin) - 0.5) > 0.3
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if dark else "#222222")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        bar = fig.colorbar(image, cax=ax.inset_axes((1.04, 0.2, 0.04, 0.6)))
        bar.set_label(colourbar)
        bar.outline.set_visible(False)
        return svg(fig)


def lines_plot(x_labels: Sequence[str], series: dict[str, Sequence[float | None]], *, ylabel: str, title: str = "") -> str:
    """One line per series over the runs (x), with a legend on the right."""
    import matplotlib  # imported on first use only: ~1 s that only drawing needs

    with matplotlib.rc_context(STYLE):
        legend = text_width([short(name, 28) for name in series], 8) + 0.6
        fig = figure(5.6 + legend, 3.6, left=0.8, right=legend, top=0.4 if title else 0.15, bottom=0.95)
        ax = fig.add_subplot()
        x = np.arange(len(x_labels))
        palette = matplotlib.colormaps["tab10"].colors
        for k, (name, values) in enumerate(series.items()):
            ax.plot(x, _finite(values), marker="o", markersize=4, linewidth=1.6, color=palette[k % len(palette)], label=short(name, 28))
        step = max(1, math.ceil(len(x_labels) / 8))
        ax.set_xticks(x[::step], [x_labels[i] for i in range(0, len(x_labels), step)], rotation=30, ha="right", rotation_mode="anchor")
        ax.grid(axis="y")
        ax.set_axisbelow(True)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
        return svg(fig)


def scatter_panels(reference: str, x: Sequence[float], panels: dict[str, Sequence[float]], *, label: str) -> str:
    """One small scatter per method: its error against the reference's, per split, with the diagonal;
    points below the diagonal are splits where the method did better."""
    import matplotlib  # imported on first use only: ~1 s that only drawing needs

    with matplotlib.rc_context(STYLE):
        columns = min(3, max(1, len(panels)))
        rows = max(1, math.ceil(len(panels) / columns))
        fig = figure(2.8 * columns + 0.3, 2.8 * rows + 0.2, left=0.6, right=0.2, top=0.35, bottom=0.55)
        xs = _finite(x)
        values = [xs, *(_finite(v) for v in panels.values())]
        finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.array([])
        lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
        pad = 0.05 * (hi - lo or 1.0)
        for k, (name, ys) in enumerate(panels.items()):
            ax = fig.add_subplot(rows, columns, k + 1)
            fig.subplots_adjust(wspace=0.45, hspace=0.55)
            y = _finite(ys)
            ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="#888888", linewidth=1.0, linestyle="--")
            better = y < xs
            ax.scatter(xs[better], y[better], s=14, color=GOOD, alpha=0.8, label="better")
            ax.scatter(xs[~better], y[~better], s=14, color=BAD, alpha=0.8, label="worse or equal")
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_ylim(lo - pad, hi + pad)
            ax.set_aspect("equal")
            ax.set_title(short(name, 30), fontsize=9)
            ax.set_xlabel(f"{short(reference, 24)} ({label})", fontsize=8)
            ax.set_ylabel(label, fontsize=8)
            ax.grid(True)
            ax.set_axisbelow(True)
        return svg(fig)
