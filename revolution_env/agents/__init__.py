"""Agents: the common interface, ``random``, the heuristic bots, and trained checkpoints (``load_agent``)."""

from .base import Agent, RandomAgent

__all__ = ["Agent", "RandomAgent"]
