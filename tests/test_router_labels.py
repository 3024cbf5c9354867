"""The router against its labelled set (tests/data/router_labels.jsonl, made by
`scripts/bench_quality.py router-labels` over the shared datasets): each label is the set of strategies that reach
the best nDCG@10 on that query, measured; the router's accuracy per dataset is held at the floors in
tests/data/quality_floors.toml and must beat always choosing hybrid."""

from tests import quality

ROUTES = {"naive", "lexical", "hybrid", "hippo", "global", "hierarchical"}


def test_labelled_set_covers_three_datasets_and_every_route():
    recs = quality.router_records()
    counts = {}
    for r in recs:
        counts[r["dataset"]] = counts.get(r["dataset"], 0) + 1
    assert counts == {"scifact-train": 40, "hotpotqa-100": 40, "rust-book-queries": 26}
    assert all(r["best"] and set(r["best"]) <= set(r["scores"]) == ROUTES for r in recs)
    # the labels are measured: the best set is exactly the strategies with the top score
    assert all(set(r["best"]) == {s for s, v in r["scores"].items() if v == max(r["scores"].values())} for r in recs)
    assert {quality.routed(r) for r in recs} == {"hierarchical", "hippo", "hybrid"}  # every route the rules use


def test_router_accuracy_stays_at_its_floors():
    checks = quality.router_checks(quality.floors()["router"])
    assert len(checks) == 4 and all(c.ok for c in checks), [str(c) for c in checks if not c.ok]


def test_router_beats_always_hybrid_overall_and_never_loses_to_it():
    acc = quality.router_accuracy(quality.router_records())
    n, right, hybrid = acc["all"]
    assert right > hybrid, f"router {right} vs always-hybrid {hybrid} of {n}"
    assert all(right >= hybrid for _, right, hybrid in acc.values()), acc
