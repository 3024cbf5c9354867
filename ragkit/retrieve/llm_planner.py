"""``--planner llm``: a GGUF model rewrites the query and splits it into sub-questions (seed 002).

The rule-based plan is made first and stays the fallback: the model's
output only adds to it. The default model is a small base model without a
chat template, so the prompt is a plain few-shot completion. The output is
checked before use: the rewrite must be one line of reasonable length that
keeps 60 % of the query's content words and does not repeat an example of the
prompt, each sub-question likewise with 30 % (a model that drifts off the
query is not followed; small models do: measured in scripts/README.md); at most
``MAX_SUB_QUERIES``. Anything unusable, a missing model or a generation error
leaves the rule plan as it is, with a note saying why.
"""

from __future__ import annotations

from collections.abc import Callable

from ragkit.errors import ExtraMissing, RagkitError
from ragkit.text import content_words

MAX_SUB_QUERIES = 4
REWRITE_KEEPS = 0.6  # share of the query's content words a rewrite must keep
SUB_QUERY_KEEPS = 0.3  # … and a sub-question
MAX_TOKENS = 96
PROMPT = """Rewrite each search query as one clear question. If it asks about several things, list simpler sub-questions.

Query: were scott derrickson and ed wood of the same nationality
Rewritten: What nationality were Scott Derrickson and Ed Wood?
Sub-questions:
- What nationality was Scott Derrickson?
- What nationality was Ed Wood?

Query: sort list python
Rewritten: How do I sort a list in Python?
Sub-questions:

Query: {query}
Rewritten:"""


_EXAMPLES = [
    set(content_words(line))
    for line in PROMPT.split("\n")
    if line.startswith(("Rewritten: ", "- ")) and "{" not in line
]


def _copied(words: set[str]) -> bool:
    """Mostly the words of an example line of the prompt (a small model likes to repeat them)."""
    return any(len(words & ex) / (len(words | ex) or 1) > 0.6 for ex in _EXAMPLES)


def parse(output: str, query: str) -> tuple[str | None, list[str]]:
    """The rewrite and the sub-questions the completion holds, each kept only if it stays on the query."""
    words = set(content_words(query))

    def on_topic(line: str, keep: float) -> bool:
        own = set(content_words(line))
        return (
            len(words & own) >= max(1.0, keep * len(words))
            and not (_copied(own) and not _copied(words))
            and 3 <= len(line) <= max(200, 3 * len(query))
        )

    lines = [ln.strip() for ln in output.split("\n")]
    rewrite = lines[0] if lines and on_topic(lines[0], REWRITE_KEEPS) else None
    subs: list[str] = []
    for line in lines[1:]:
        if line.lower().startswith(("query:", "rewritten:")):
            break
        if line.startswith(("-", "*")):
            sub = line.lstrip("-* ").strip()
            if on_topic(sub, SUB_QUERY_KEEPS) and sub not in subs and sub != rewrite:
                subs.append(sub)
    return rewrite, subs[:MAX_SUB_QUERIES] if len(subs) >= 2 else []


def refine(plan, generator_factory: Callable[[], object]) -> None:
    """Add the model's rewrite (an expanded query) and sub-questions (replacing the rule ones, retrieved with
    ``--decompose`` like those) to ``plan``."""
    plan.planner = "llm"
    try:
        generator = generator_factory()
        output = generator.complete(
            PROMPT.format(query=" ".join(plan.text.split())), max_tokens=MAX_TOKENS, stop=["\n\n", "Query:"]
        )
    except ExtraMissing:  # asked for without its extra: the user's to fix, not a degraded plan
        raise
    except (RagkitError, ValueError, RuntimeError, OSError) as exc:
        plan.planner = "rules"
        plan.notes.append(f"llm planner unavailable ({exc}): rule plan used")
        return
    rewrite, subs = parse(output, plan.text)
    if rewrite is None and not subs:
        plan.planner = "rules"
        plan.notes.append("llm planner gave no usable rewrite: rule plan used")
        return
    plan.rewritten = rewrite
    if rewrite and set(content_words(rewrite)) != set(content_words(plan.text)):  # a copy adds nothing
        plan.expanded_queries.append(rewrite)
    if subs:
        plan.sub_queries = subs
