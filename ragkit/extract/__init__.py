"""Extraction: entities and relations from chunks (rules by default), communities."""
