"""The report's figures: names are drawn as the text they are, whatever characters they hold."""

from __future__ import annotations

import re
import warnings
from html import unescape

import numpy as np

from pipeline.report import plots

NAMES = ["$\\frac{$", "cost $5 to $10", "\u901a\u4e49\u5343\u95ee", "<b>&amp;</b>"]


def drawn_text(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r">([^<>]*)</text>", svg)]


def test_names_are_text_not_mathtext_and_missing_glyphs_are_quiet():
    # `$\frac{$` stopped the whole report with a mathtext parse error; `cost $5 to $10` was drawn as
    # math; a Chinese name warned once per missing glyph on every plot (the SVG keeps it as text,
    # drawn by the viewer's fonts).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svg = plots.interval_plot(NAMES, [1.0, 2.0, 3.0, 4.0], None, None, xlabel="score of $x$")
        matrix = plots.matrix_plot(NAMES, np.full((4, 4), 0.5), colourbar="win rate", vmin=0.0, vmax=1.0)
    assert not [str(w.message) for w in caught]
    for figure in (svg, matrix):
        assert set(NAMES) <= set(drawn_text(figure))
    assert "score of $x$" in drawn_text(svg)
