"""Retrieval: query syntax, filters, fusion and the strategy registry."""
