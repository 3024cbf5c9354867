"""Settings records that check themselves when they are built.

A settings dataclass calls ``validate(self, error)`` from its ``__post_init__``: every field annotated with a
``Literal`` must hold one of its values, every field with ``range`` metadata (``field(metadata=between(0, 1))``)
must lie inside it, every field with ``pattern`` metadata (``matches(r"…")``) must match it whole. A bad value is
one error naming the setting and what it may be, wherever the value came
from (a flag, ``ragkit.toml``, an HTTP request, an MCP call).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from functools import cache
from typing import Any, Literal

from ragkit.errors import RagkitError


def between(low: float | None = None, high: float | None = None) -> dict[str, Any]:
    """Field metadata: the value must lie within ``low``..``high`` (either end may be open)."""
    return {"range": (low, high)}


def matches(pattern: str) -> dict[str, Any]:
    """Field metadata: the (text) value must match ``pattern`` whole."""
    return {"pattern": pattern}


def choices(cls: type, name: str) -> tuple[Any, ...]:
    """The values a ``Literal`` field of a settings dataclass may take."""
    return _rules(cls)[name][0]


@cache
def _rules(cls: type) -> dict[str, tuple[tuple[Any, ...] | None, tuple[float | None, float | None] | None, str | None]]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        allowed = None
        if typing.get_origin(hint) is Literal:
            allowed = typing.get_args(hint)
        elif typing.get_origin(hint) in (typing.Union, types.UnionType):
            literal = [a for a in typing.get_args(hint) if typing.get_origin(a) is Literal]
            if literal:  # Literal[...] | None
                allowed = (*typing.get_args(literal[0]), None)
        if allowed is not None or "range" in f.metadata or "pattern" in f.metadata:
            out[f.name] = (allowed, f.metadata.get("range"), f.metadata.get("pattern"))
    return out


def validate(obj: Any, error: type[RagkitError], where: str = "") -> None:
    """Raise ``error`` for the first field of ``obj`` outside its choices or range."""
    for name, (allowed, bounds, pattern) in _rules(type(obj)).items():
        value = getattr(obj, name)
        label = f"{where}{name}"
        if pattern is not None and not (isinstance(value, str) and re.fullmatch(pattern, value)):
            raise error(f"{label} = {value!r} is not of the form {pattern}")
        if allowed is not None and value not in allowed:
            shown = ", ".join(repr(a) if a is not None else "none" for a in allowed)
            raise error(f"{label} = {value!r} is not one of its choices", hint=f"Choose {shown}.")
        if bounds is not None and value is not None:
            low, high = bounds
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise error(f"{label} = {value!r} is not a number")
            if (low is not None and value < low) or (high is not None and value > high):
                span = f"{low if low is not None else '…'}..{high if high is not None else '…'}"
                raise error(f"{label} = {value!r} is outside {span}")
