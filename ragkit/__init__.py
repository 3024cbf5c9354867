"""ragkit: local retrieval toolkit over embedded storage."""

__version__ = "0.1.0"
