"""The batched engine: N games of one variant as arrays, the batch first, stepped together (engine layer: no RL
library here). See :class:`BatchedGame`; the scalar :class:`revolution_env.engine.game.Game` stays the reference."""

from .engine import BatchedGame, GameRecords, clean_bids_batch, priority_by_rule_batch
from .kernels import COMPILED

__all__ = ["COMPILED", "BatchedGame", "GameRecords", "clean_bids_batch", "priority_by_rule_batch"]
