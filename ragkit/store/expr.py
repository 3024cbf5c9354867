"""Filter expressions for Lance scans and searches, as SQL text: a quoted string, an IN list. Kept apart from
ragkit/store/lance.py (which loads pyarrow) so that planning a filter loads nothing heavy."""

from __future__ import annotations


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"
