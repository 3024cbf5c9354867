"""Ingestion: discover files, parse them into section trees, cut chunks."""
