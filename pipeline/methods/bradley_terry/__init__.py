"""The Bradley-Terry family: ratings from pairwise outcomes [BT52]; [AmElo]; [ArenaStyle].

Online Elo (`elo`, its compiled loop in `elo_update`) [Elo78]; the maximum-likelihood fits that
share one core (`core`: cells, likelihood, dense and sparse Newton fits; `newton`: the compiled
Newton-CG; `steps`: step control): m-Elo (`m_elo`, with the Poisson bootstrap of its cells), am-Elo
with annotator abilities (`am_elo`) and style control (`style_control`), each with its prior chosen
by cross-validation on request (`prior_choice`).
"""

from pipeline.methods.bradley_terry.am_elo import AnnotatorCells, stable_arena
from pipeline.methods.bradley_terry.core import Cells, fit_or_refuse
from pipeline.methods.bradley_terry.elo import shuffled_elo
from pipeline.methods.bradley_terry.prior_choice import AUTO, MIN_BATTLES

# what the stability experiments (`pipeline.backtest.stability`) fit outside the registry, and what a board
# checks of `prior=auto` before any work (`pipeline.board.early_refusals`)
__all__ = ["AUTO", "MIN_BATTLES", "AnnotatorCells", "Cells", "fit_or_refuse", "shuffled_elo", "stable_arena"]
