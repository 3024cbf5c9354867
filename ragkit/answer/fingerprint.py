"""What the answer scorer's features are computed by, as a hash (``feature_code``): the answer model records
the one it was fitted with, and a test fails when the code has moved on without a refit."""

from __future__ import annotations

import ast
import hashlib
import inspect

from ragkit.answer import evidence as evidence_module
from ragkit.answer import features, scorer
from ragkit.answer.features import FEATURE_CODE


def feature_code() -> str:
    """A hash of the code that computes the scorer's features (its syntax tree, comments and docstrings left
    out; ``_tree``, so that every supported Python computes the same): a model records the one it was fitted with, and a test fails when the code has moved on without a
    refit (``scripts/fit_answers.py``)."""
    digest = hashlib.sha256()
    # all of evidence.py; the scorer's constants (the model file's name and format, which stood beside the features
    # when the shipped model was fitted: hashed in this order, the hash is the one that model recorded); then the
    # features' constants and code
    for module, names in ((evidence_module, None), (scorer, ()), (features, FEATURE_CODE)):
        for node in ast.parse(inspect.getsource(module)).body:
            named = getattr(node, "name", None)
            if names is not None and not (isinstance(node, ast.Assign) or named in names):
                continue
            if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
                continue  # the module's docstring
            for inner in ast.walk(node):
                body = getattr(inner, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                    if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                        inner.body = body[1:] or [ast.Pass()]
            digest.update(_tree(node).encode())
    return digest.hexdigest()[:16]


def _tree(node: object) -> str:
    """A syntax tree as text, the same on Python 3.11 to 3.13: fields left empty (None, []) are left out
    (``ast.dump`` shows them by version: 3.12 added ``type_params``, 3.13 hides empty fields)."""
    if isinstance(node, ast.AST):
        fields = [_tree(v) for f in node._fields if (v := getattr(node, f, None)) is not None and v != []]
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(_tree(v) for v in node)}]"
    return repr(node)
