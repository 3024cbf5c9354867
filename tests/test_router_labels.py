"""The router's labelled set (tests/data/router_labels.jsonl, made by scripts/label_router.py over the shared
datasets): the rules reproduce the recorded routes, and they beat always choosing hybrid."""

import json

from ragkit.retrieve.planner import plan_query
from ragkit.retrieve.router import route
from tests.conftest import REPO

LABELS = REPO / "tests" / "data" / "router_labels.jsonl"


def records():
    return [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]


def test_labelled_set_is_big_enough_and_covers_two_datasets():
    recs = records()
    assert len(recs) >= 60 and len({r["dataset"] for r in recs}) >= 3
    assert {"hierarchical", "hippo", "hybrid"} <= {r["routed"] for r in recs}  # every route is exercised
    assert all(r["best"] and set(r["best"]) <= set(r["scores"]) for r in recs)


def test_rules_reproduce_the_recorded_routes_and_beat_always_hybrid():
    recs = records()
    right = hybrid = 0
    for r in recs:
        plan = plan_query(r["planned"], syntax=False)  # the text after spelling correction
        chosen = route(plan, r["known_entities"], True, r.get("has_communities", True),
                       has_tree=r.get("has_tree", True)).strategy
        assert chosen == r["routed"], r["query"]
        right += chosen in r["best"]
        hybrid += "hybrid" in r["best"]
    assert right >= hybrid, f"router {right} vs always-hybrid {hybrid} of {len(recs)}"
