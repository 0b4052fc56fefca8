"""Proposers: who writes the candidate kernels of a search (see `tritonsmith.search.model`)."""

from __future__ import annotations

from .anthropic_proposer import AnthropicProposer
from .openai_proposer import OpenAICompatibleProposer

__all__ = ["AnthropicProposer", "OpenAICompatibleProposer"]
