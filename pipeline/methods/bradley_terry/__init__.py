"""The Bradley-Terry family: ratings from pairwise outcomes [BT52]; [AmElo]; [ArenaStyle].

Online Elo (`elo`, its compiled loop in `elo_update`) [Elo78]; the maximum-likelihood fits that
share one core (`core`: cells, likelihood, dense and sparse Newton fits; `newton`: the compiled
Newton-CG; `steps`: step control): m-Elo (`m_elo`, with the Poisson bootstrap of its cells),
am-Elo with annotator abilities (`am_elo`) and style control (`style_control`); `prior_choice`
chooses m-Elo's prior by held-out log-likelihood (`m-elo:prior=auto`).
"""

from pipeline.methods.bradley_terry.am_elo import AnnotatorCells, stable_arena
from pipeline.methods.bradley_terry.core import Cells, fit_or_refuse
from pipeline.methods.bradley_terry.elo import shuffled_elo

# what the stability experiments (`pipeline.backtest.stability`) fit outside the registry
__all__ = ["AnnotatorCells", "Cells", "fit_or_refuse", "shuffled_elo", "stable_arena"]
