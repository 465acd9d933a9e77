"""Revolution!: a rules engine and a PettingZoo environment for the board game of secret bidding."""

from .engine import Game, Rules, run_scenario, state_dict

__version__ = "0.1.0"
__all__ = ["Game", "Rules", "__version__", "run_scenario", "state_dict"]
