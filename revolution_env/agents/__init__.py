"""Agents: the common interface, ``random``, the heuristic bots, and trained checkpoints (``load_agent``)."""

from .base import Agent, RandomAgent
from .loading import load_agent

__all__ = ["Agent", "RandomAgent", "load_agent"]
