"""Scripted agents (no model) and the agent demo: what the verifier's rewards pay for."""

from .scripted import AGENTS, Step

__all__ = ["AGENTS", "Step"]
