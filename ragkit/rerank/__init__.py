"""Reranking: structure-aware features (and, later, optional cross-encoder)."""
