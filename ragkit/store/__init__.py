"""Storage: only this package touches LanceDB, DuckDB and graph files."""
