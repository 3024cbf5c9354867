"""Query router (seed 001): ``--strategy auto`` picks a strategy from the plan and the query's features.

Rules, first match wins, and only among strategies the index can serve:

1. corpus-wide overview words → ``global`` (community reports), else
   ``hierarchical``; summary words about a document or section →
   ``hierarchical`` (the summary tree), else ``global``;
2. identifiers or exact phrases: only identifiers → ``lexical``; else ``hybrid``
   with the lexical side boosted (alpha 0.3);
3. a named entity the entity graph knows (a bridge question starts from one,
   a comparison names two) → ``hippo``, the best graph strategy on multi-hop
   questions (scripts/README.md), relationship words noted in the reason;
4. otherwise ``hybrid``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragkit.embed import model_alpha, model_languages
from ragkit.extract.entities import extract
from ragkit.generate import load_generator
from ragkit.reader import IndexReader
from ragkit.retrieve.config import QueryConfig
from ragkit.retrieve.llm_planner import refine
from ragkit.retrieve.planner import QueryPlan, load_rules, plan_query
from ragkit.retrieve.spelling import Speller

LEXICAL_BOOST_ALPHA = 0.3


@dataclass
class Route:
    strategy: str
    reason: str
    alpha: float | None = None  # a fusion weight the route asks for (None: keep the configured one)


def _has_any(text: str, phrases: list[str]) -> list[str]:
    words = re.findall(r"[\w-]+", text.lower())
    low = " " + " ".join(words) + " "
    return [p for p in phrases if f" {p.lower()} " in low]


def route(
    plan: QueryPlan,
    known_entities: list[str],
    has_entities: bool,
    has_communities: bool,
    rules_path: str | None = None,
    has_tree: bool = False,
) -> Route:
    """``known_entities``: the query's entities found in the entity graph (longest names, not their words)."""
    rules = load_rules(rules_path).get("router", {})
    overview = _has_any(plan.text, rules.get("overview", []))
    summary = _has_any(plan.text, rules.get("summary", []))
    have = {"global": has_communities, "hierarchical": has_tree}
    missing = {"global": "community reports", "hierarchical": "summary tree"}
    for kind, cues, order in (
        ("overview", overview, ("global", "hierarchical")),
        ("summary", summary, ("hierarchical", "global")),
    ):
        usable = [s for s in order if have[s]] if cues else []
        if usable:
            note = "" if usable[0] == order[0] else f": the index has no {missing[order[0]]}"
            return Route(usable[0], f"{kind} question ({', '.join(cues)}){note}")
    if plan.identifiers or plan.constraints.must_include:
        rest = plan.text
        for ident in plan.identifiers:
            rest = rest.replace(ident, " ")
        if plan.identifiers and len(re.findall(r"\w{3,}", rest)) <= 1:
            return Route("lexical", f"identifier lookup ({', '.join(plan.identifiers)})")
        what = plan.identifiers or [f'"{p}"' for p in plan.constraints.must_include]
        return Route("hybrid", f"exact terms ({', '.join(what)}): lexical side boosted", LEXICAL_BOOST_ALPHA)
    related = _has_any(plan.text, rules.get("relationship", []))
    if has_entities and known_entities:
        why = f"{len(known_entities)} known entities ({', '.join(known_entities[:4])})"
        return Route("hippo", why + (f" and relationship words ({', '.join(related)})" if related else ""))
    return Route("hybrid", "default: no overview, identifier or multi-entity signal")


def plan_and_route(reader: IndexReader, text: str, cfg: QueryConfig) -> tuple[QueryPlan, QueryConfig]:
    """The plan of one query and the config to run it with (strategy, alpha, mode and filters resolved)."""
    from dataclasses import replace

    facts = reader.facts
    speller = reader.memo("speller", lambda: Speller(reader.vocabulary)) if cfg.spelling else None
    correct = None
    if speller is not None:  # a served token's query: only to words its collections hold (the vocabulary has all)
        allowed = (lambda word: reader.scopes.holds_word(word, cfg.readable)) if cfg.readable is not None else None

        def correct(text: str, language: str):
            return speller.correct(text, language, allowed)

    plan = plan_query(text, facts["doc_types"], cfg.planner_rules, syntax=cfg.syntax, correct=correct)
    if cfg.planner == "llm":
        refine(plan, lambda: reader.given_generator or load_generator(cfg.model, keys=cfg.api_keys))
    filters = {**cfg.filters, **plan.constraints.filters()}
    dated = {k: v for k, v in filters.items() if k in ("date_from", "date_to")}
    if dated and not reader.scopes.doc_ids_for(dated, cfg.readable):
        plan.notes.append(
            f"no document is dated {dated.get('date_from', '…')} – {dated.get('date_to', '…')}: date constraint ignored"
        )
        filters = {k: v for k, v in filters.items() if k not in dated}
    changes: dict = {"filters": filters}
    model = reader.manifest.embedder.name
    own = model_alpha(model, reader.language) if cfg.model_alpha else None
    if own is not None:
        changes["alpha"] = own
    if cfg.strategy == "auto":
        known = []
        if facts["entities"]:
            names = {m.key for m in extract(plan.text, language=plan.language).mentions if m.sentence >= 0}
            known = reader.scopes.known_entities(names, cfg.readable)
        plan.entities = known
        r = route(
            plan,
            known,
            bool(facts["entities"]),
            facts["communities"] > 0,
            cfg.planner_rules,
            has_tree=facts["tree"] > 0,
        )
        plan.strategy, plan.reason = r.strategy, f"auto: {r.reason}"
        changes["strategy"] = r.strategy
        if r.alpha is not None:
            changes["alpha"] = r.alpha
        if cfg.mode == "balanced":  # the planner's mode, unless one was asked for
            changes["mode"] = plan.retrieval_strategy
    else:
        plan.strategy = cfg.strategy
        plan.reason = "chosen by --strategy"
    languages = model_languages(model)
    if languages is not None and plan.language not in languages and cfg.foreign_alpha is not None:
        changes["alpha"] = min(changes.get("alpha", cfg.alpha), cfg.foreign_alpha)
        plan.notes.append(f"the embedding model does not know {plan.language!r}: dense weight {changes['alpha']}")
    if own is not None and changes["alpha"] == own:  # (not replaced by the route's own weight)
        plan.notes.append(f"dense weight {own}: {model}'s own")
    plan.retrieval_strategy = changes.get("mode", cfg.mode)
    return plan, replace(cfg, **changes)
