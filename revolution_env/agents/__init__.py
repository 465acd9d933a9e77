"""Agents: the common interface, ``random``, the heuristic bots, and trained checkpoints (``load_agent``)."""

from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.agents.loading import load_agent

__all__ = ["Agent", "RandomAgent", "load_agent"]
