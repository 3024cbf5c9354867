"""ragkit learns from the people who use it: every result has a query_id, feedback on its passages and answer is
kept in the index (surviving re-indexing), ``ragkit learn`` fits a ranker and adopts it only when held-out
queries rank better, and a loud user moves nobody else's results. Unit tests with the fake embedder; the CLI
through a subprocess."""

import json
import multiprocessing
import subprocess
import sys

import numpy as np
import pytest

import ragkit
from ragkit.answer.records import Answer
from ragkit.config import QueryConfig
from ragkit.errors import BadQuery, Forbidden, UnknownId
from ragkit.evaluate import ndcg_at
from ragkit.fitted import Trees
from ragkit.learn import abstain as abstaining
from ragkit.learn import ranker as ranking
from ragkit.learn.feedback import Feedback, Judged
from ragkit.rerank.ranker import RANK_FEATURES, Ranker, Rankers, scope_of, write_current
from ragkit.serve.access import Token
from ragkit.store.events import EventLog
from tests.conftest import write

TOPICS = {  # 24 small documents, each answering one question in its own words
    f"topic{i:02d}.md": (f"# Rule {i}\n\n## Scope\n\nThis rule concerns the {w} desk in building {i}.\n\n"
                         f"## Limit\n\nThe {w} desk may hold at most {i + 2} folders.\n")
    for i, w in enumerate(
        "amber basil cedar dahlia ember fennel garnet hazel indigo juniper kelp lilac "
        "mango nutmeg olive pepper quartz rosemary saffron thyme umber violet walnut yarrow".split()
    )
}  # fmt: skip
QUESTIONS = [f"How many folders may the {w} desk hold?" for w in (
    "amber basil cedar dahlia ember fennel garnet hazel indigo juniper kelp lilac "
    "mango nutmeg olive pepper quartz rosemary saffron thyme umber violet walnut yarrow").split()]  # fmt: skip


@pytest.fixture
def ix(tmp_path, index_with):
    root = tmp_path / "rules"
    for name, text in TOPICS.items():
        write(root, name, text)
    return index_with(root)[1]


def reopen(ix):
    return ragkit.open(ix.path, embedder=ix.reader.embedder)


def asked(ix, text: str, **cfg):
    cfg = QueryConfig(**{"k": 5, **cfg})
    result = ix.query(text, cfg)
    if cfg.answer:
        ix.answer_for(result, cfg)
    assert ix.log(result, cfg)
    return result


def test_every_result_has_a_query_id_and_its_passages_are_kept_by_path_section_and_content(ix):
    result = asked(ix, QUESTIONS[3])
    assert len(result.query_id) == 16 and result.query_id != asked(ix, QUESTIONS[3]).query_id
    logged = Feedback(ix.path).asked(result.query_id)
    assert logged["query"] == QUESTIONS[3] and logged["scope"] == "all"
    first = logged["passages"][0]
    assert {"rank", "path", "section", "hash", "collection", "section_id"} <= set(first)
    assert first["path"] == result.passages[0].path and len(first["hash"]) == 16


def test_feedback_is_checked_before_it_is_kept(ix):
    result = asked(ix, QUESTIONS[0])
    event = ix.feedback(result.query_id, rank=1, grade="good")
    assert event["grade"] == 3 and event["target"] == "passage" and event["path"] == result.passages[0].path
    with pytest.raises(BadQuery, match="showed no answer"):  # asked without one
        ix.feedback(result.query_id, rank=None, grade=0)
    answered = asked(ix, QUESTIONS[0], answer=True, answer_mode="extract")
    assert ix.feedback(answered.query_id, rank=None, grade=0)["target"] == "answer"
    with pytest.raises(UnknownId):
        ix.feedback("0" * 16, rank=1, grade="good")
    with pytest.raises(BadQuery):
        ix.feedback(result.query_id, rank=99, grade="good")
    with pytest.raises(BadQuery):
        ix.feedback(result.query_id, rank=1, grade=7)
    with pytest.raises(Forbidden):  # a token rates only what it asked
        ix.feedback(result.query_id, rank=1, grade="good", token="team-a", readable=("default",))
    kinds = [e["type"] for e in EventLog(ix.path).read()]
    assert kinds == ["query", "feedback", "query", "feedback"]  # the refused ones left nothing


def test_a_token_rates_only_its_own_queries_and_what_it_may_read(ix):
    cfg = QueryConfig(k=5, readable=("default",))
    result = ix.query(QUESTIONS[1], cfg)
    ix.log(result, cfg, token="team-a")
    event = ix.feedback(result.query_id, rank=1, grade="good", token="team-a", readable=("default",))
    assert event["scope"] == scope_of(("default",)) == "collections:default" and event["token"] == "team-a"
    with pytest.raises(Forbidden):  # the passage's collection is not this token's
        ix.feedback(result.query_id, rank=1, grade="good", token="team-a", readable=("other",))
    assert [j.id for j in Feedback(ix.path).judged("collections:default")] == [result.query_id]
    assert Feedback(ix.path).judged("all") == []  # it trains its scope's model only


def _append(args):
    path, n = args
    log = EventLog(path)
    for i in range(n):
        log.append([{"type": "feedback", "n": i, "pad": "x" * 3000}])


def test_processes_appending_at_once_never_interleave_lines(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_append, [(tmp_path, 50)] * 4)
    events = list(EventLog(tmp_path).read())
    assert len(events) == 200 and all(len(e["pad"]) == 3000 for e in events)


def test_feedback_survives_reindexing_and_export_and_bulk_files_round_trip(ix, tmp_path, index_with):
    result = asked(ix, QUESTIONS[2])
    ix.feedback(result.query_id, rank=1, grade="good")
    (tmp_path / "rules" / "topic23.md").write_text("# Rule 23\n\n## Scope\n\nChanged text about the yarrow desk.\n")
    index_with(tmp_path / "rules")  # a new run
    assert [j.id for j in Feedback(ix.path).judged()] == [result.query_id]
    out = tmp_path / "events.jsonl"
    assert ix.export_feedback(out) == 2
    rows = tmp_path / "labels.jsonl"
    rows.write_text(json.dumps({"query_id": result.query_id, "rank": 2, "good": False}) + "\n")
    assert ix.feedback_file(rows) == 1
    rows.write_text(json.dumps({"query_id": result.query_id, "rank": 42}) + "\n")
    with pytest.raises(BadQuery, match="line 1"):
        ix.feedback_file(rows)


def _groups(n: int, flip: bool, seed: int) -> list[ranking.Group]:
    """Synthetic judged queries: the relevant candidate has feature ``dense`` high (or low when ``flip``)."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        X = rng.random((12, len(RANK_FEATURES)))
        labels = np.ones(12, dtype=np.int32)
        best = int(np.argmax(X[:, RANK_FEATURES.index("dense")] * (-1 if flip else 1)))
        labels[best] = 4
        out.append(ranking.Group(f"q{seed}-{q}", "all", X, labels, np.arange(12)))
    return out


def test_the_guard_measures_with_the_one_ndcg_at_exponential_gain():
    """``ragkit learn``'s held-out nDCG@10 is ``evaluate.ndcg_at`` with 2^label − 1 gain (what LambdaRank optimises),
    not a second function of the same name: on graded labels it differs from ``ragkit eval``'s linear gain."""
    labels = np.asarray([1, 4, 0, 2], dtype=np.int32)
    group = ranking.Group("q", "all", np.zeros((4, len(RANK_FEATURES))), labels, np.arange(4))
    nd, top = ranking.per_query([group], lambda g: -g.default.astype(float))  # the order in use: 0, 1, 2, 3
    graded = dict(enumerate(labels.tolist()))
    assert nd == [pytest.approx(ndcg_at([0, 1, 2, 3], graded, gain="exponential"))] and top == [0.0]
    assert nd[0] != pytest.approx(ndcg_at([0, 1, 2, 3], graded))
    assert ranking.measure([group], lambda g: g.labels.astype(float)) == {"ndcg@10": 1.0, "top1": 1.0}


def test_the_guard_adopts_a_better_model_and_refuses_a_worse_one():
    good, model = ranking.fit_if_better("all", _groups(60, False, 1), None, min_queries=20)
    assert good.adopted and good.after["top1"] > good.before["top1"] and model is not None
    # fitted on queries where high "dense" wins, held out on queries where it loses: refused
    mixed = _groups(60, False, 2)
    fit_part, held = ranking.split(mixed)
    flipped = {g.query for g in held}
    mixed = [g if g.query not in flipped else _groups(1, True, hash(g.query) % 1000)[0].__class__(
        g.query, g.scope, g.X, np.where(np.arange(12) == np.argmin(g.X[:, RANK_FEATURES.index("dense")]), 4, 1),
        g.default) for g in mixed]  # fmt: skip
    worse, _ = ranking.fit_if_better("all", mixed, None, min_queries=20)
    assert not worse.adopted and worse.after["ndcg@10"] <= worse.before["ndcg@10"]
    few, _ = ranking.fit_if_better("all", _groups(8, False, 3), None, min_queries=20)
    assert not few.adopted and "needed" in few.reason


def _noise(n: int, seed: int) -> list[ranking.Group]:
    """Judged queries whose best candidate is drawn at random: nothing in the features says which it is."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        X = rng.random((12, len(RANK_FEATURES)))
        labels = np.ones(12, dtype=np.int32)
        labels[rng.integers(12)] = 4
        out.append(ranking.Group(f"n{seed}-{q}", "all", X, labels, np.arange(12)))
    return out


@pytest.mark.parametrize("seed", [5, 17, 22, 29])
def test_the_guard_refuses_a_held_out_gain_that_is_chance(seed):
    # on these draws the model fitted on noise scores a higher held-out nDCG@10 and no lower top-1 (the rule before
    # issue 51 adopted it); the paired bootstrap says twenty held-out queries cannot tell that from chance
    outcome, _ = ranking.fit_if_better("all", _noise(60, seed), None, min_queries=20)
    assert outcome.after["ndcg@10"] > outcome.before["ndcg@10"] and outcome.after["top1"] >= outcome.before["top1"]
    assert not outcome.adopted and "beyond chance" in outcome.reason and outcome.after["p"] >= 0.05


def test_an_adopted_ranker_is_used_explained_shown_and_reset(ix):
    before = [p.path for p in asked(ix, QUESTIONS[5]).passages]
    groups = [g for g in _groups(40, False, 4)]
    outcome, model = ranking.fit_if_better("all", groups, None, min_queries=20)
    assert outcome.adopted
    ranking.adopt(ix.path, "all", model, outcome)
    ix = reopen(ix)
    result = ix.query(QUESTIONS[5], QueryConfig(k=5))
    assert result.plan.rerank["learned"]["scope"] == "all" and result.plan.rerank["learned"]["version"] == 1
    assert "learned" in result.passages[0].features and "default" in result.passages[0].features
    stats = ix.stats()["learned"]["scopes"]["all"]
    assert stats["version"] == 1 and stats["queries"] == 40 and stats["after"]["top1"] >= stats["before"]["top1"]
    assert ix.unlearn() == 1
    ix = reopen(ix)
    assert [p.path for p in ix.query(QUESTIONS[5], QueryConfig(k=5)).passages] == before
    assert "learned" not in ix.query(QUESTIONS[5], QueryConfig(k=5)).plan.rerank


def test_a_ranker_file_from_another_version_or_of_other_features_is_refused(tmp_path):
    from ragkit.fitted import ModelFileError
    from ragkit.rerank.ranker import load

    trees = Trees(("a",), *(np.zeros(1, dtype=t) for t in (np.int32, float, np.int32, np.int32, bool, float)),
                  np.zeros(1, dtype=np.int32), 0)  # fmt: skip
    ranker = Ranker(trees, np.zeros(1), np.ones(1))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(ranker.to_json()))
    with pytest.raises(ModelFileError, match="features"):
        load(path)


DESKS = (  # enough that the held-out part tells a gain from chance (ragkit/learn/guard.py: p < 0.05)
    "amber basil cedar dahlia ember fennel garnet hazel indigo juniper kelp lilac mango nutmeg olive pepper "
    "quartz rosemary saffron tulip umber violet walnut yarrow zinnia almond birch clover daisy elm fig ginger"
).split()
CAPACITY = {  # each desk's own words stand in its "About" section; what it holds, in "Limit", says none of them
    f"desk{i:02d}.md": f"# Desk {w}\n\n## About\n\nThe {w} desk, the {w} desk alone, stands in the {w} room.\n\n"
    f"## Limit\n\nIt may hold at most {i + 2} folders and {i + 5} binders.\n"
    for i, w in enumerate(DESKS)
}
CAPACITY_QUESTIONS = [f"What is the capacity of the {w} desk?" for w in DESKS]


def test_a_loud_user_moves_nobody_elses_results(tmp_path, index_with):
    """Every question asked once and its "Limit" passage clicked good, the "About" above it bad: the guard adopts
    what that teaches (the hand-set ranking puts "About" first). Then one question clicked "good" 100 times on an
    unrelated passage: the model learned with those clicks shows every other question what the model learned
    without them shows first (the passage its asker marked good), and never puts the loud user's passage first.
    (Behind the first passage every desk's passages but its own are alike unrelated: which of them fill places 2
    and 3 moves with any new query learned, loud or not.)"""
    root = tmp_path / "desks"
    for name, text in CAPACITY.items():
        write(root, name, text)
    ix = index_with(root, name="desks")[1]
    for text in CAPACITY_QUESTIONS[1:]:
        result = asked(ix, text, learned=False)
        limit = next(p for p in result.passages if p.section.endswith("Limit") and text.split()[6] in p.section)
        about = next(p for p in result.passages if p.section.endswith("About") and text.split()[6] in p.section)
        ix.feedback(result.query_id, rank=limit.rank, grade="good")
        ix.feedback(result.query_id, rank=about.rank, grade="bad")

    def learned_tops() -> dict[str, list[tuple[str, str]]]:
        outcomes = reopen(ix).learn(min_queries=5)
        assert outcomes and outcomes[0].adopted, outcomes and outcomes[0].reason  # a model in use: it is checked
        fresh = reopen(ix)
        tops = {t: fresh.query(t, QueryConfig(k=3, log=False)).passages for t in CAPACITY_QUESTIONS[1:]}
        fresh.unlearn()
        return {t: [(p.path, p.section) for p in top] for t, top in tops.items()}

    quiet = learned_tops()
    loud = asked(ix, CAPACITY_QUESTIONS[0], learned=False)
    victim = loud.passages[-1]
    for _ in range(100):
        ix.feedback(loud.query_id, rank=victim.rank, grade="good")
    judged = Feedback(ix.path).judged()
    assert sum(len(j.passages) for j in judged) >= 100 + 2 * (len(CAPACITY_QUESTIONS) - 1)
    assert ix.learn(min_queries=5, dry_run=True)[0].queries == len(judged)  # the loud question counts once
    noisy = learned_tops()
    assert all(quiet[t][0][1].endswith("Limit") for t in quiet)  # (what was learned: the good passage first)
    assert {t: top[0] for t, top in noisy.items()} == {t: top[0] for t, top in quiet.items()}
    assert all(top[0] != (victim.path, victim.section) for top in noisy.values())


def _rated(confidences_wanted: list[tuple[float, bool]]) -> list[abstaining.Rated]:
    return [abstaining.Rated(f"q{i}", "all", "en", c, False, w) for i, (c, w) in enumerate(confidences_wanted)]


def test_the_answer_guard_adopts_a_threshold_that_decides_better_and_keeps_a_good_one():
    # wanted exactly from 0.6 up; in use 0.2: every answer between 0.2 and 0.6 was rated bad
    rated = _rated([(0.05 + 0.9 * i / 59, 0.05 + 0.9 * i / 59 >= 0.6) for i in range(60)])
    outcome, threshold = abstaining.fit_if_better("all", "en", rated, current=0.2)
    assert outcome.adopted and 0.55 < threshold < 0.65 and outcome.after["right"] == 1.0 > outcome.before["right"]
    kept, _ = abstaining.fit_if_better("all", "en", rated, current=0.6)  # already right: nothing to gain
    assert not kept.adopted and "beyond chance" in kept.reason
    few, _ = abstaining.fit_if_better("all", "en", rated[:10], current=0.2)
    assert not few.adopted and few.reason == "10 questions with rated answers, 20 needed"
    # an abstention rated bad wanted an answer; an abstention rated good did not
    assert abstaining.Rated("q", "all", "en", 0.1, True, False).wanted
    assert not abstaining.Rated("q", "all", "en", 0.1, True, True).wanted


def test_a_set_of_mostly_wrong_quotes_does_not_learn_to_say_nothing():
    # every third answer rated good, the rest bad (wrong quotes), at the same confidences: silence would decide
    # most of them "right", but a bad quote does not say the documents are silent
    rated = _rated([(0.2 + 0.7 * i / 89, i % 3 == 0) for i in range(90)])
    threshold = abstaining.fit_threshold(rated, current=0.2)
    assert abstaining.silenced(rated, threshold) <= abstaining.MAX_SILENCED < abstaining.silenced(rated, 0.8)
    outcome, _ = abstaining.fit_if_better("all", "en", rated, current=0.2)
    assert not outcome.adopted or outcome.after["silenced"] <= abstaining.MAX_SILENCED
    # every answer rated bad: nothing says what share is silenced, so the threshold may not rise
    wrong = _rated([(0.2 + 0.7 * i / 29, False) for i in range(30)])
    assert abstaining.fit_threshold(wrong, current=0.21) <= 0.21
    assert not abstaining.fit_if_better("all", "en", wrong, current=0.21)[0].adopted


def test_only_quoted_answers_the_threshold_decided_are_learned_from():
    def judged(n: int, shown: dict | None, grade: int = 0) -> Judged:
        query = {"id": f"q{n}", "query": f"How many folders may desk {n} hold?", "scope": "all"}
        return Judged(query | ({"answer": shown} if shown else {}), answers=[{"grade": grade}])

    quoted = {"mode": "extract", "abstained": False, "confidence": 0.5}
    log = [
        judged(0, quoted),
        judged(1, {"mode": "generate", "abstained": False, "confidence": 0.5}),  # not held back by the threshold
        judged(2, None),  # the query showed no answer: nothing was rated
        judged(3, quoted),  # quotes the section the question cites, whatever its confidence
        judged(4, quoted),  # nothing to quote
        judged(5, quoted),  # asked again it fails
    ]
    decided = {"0": "confidence", "3": "cited", "4": "nothing"}

    def ask(reader, text, cfg):
        n = text.split()[-2]
        if n == "5":
            raise BadQuery("unknown filter key")
        return Answer("", [], 0, "extractive", 0, 0, 0.0, None, mode="extract", confidence=0.4, decided=decided.get(n))

    rated = abstaining.rated_answers(None, log, ask)
    assert [(r.query, r.confidence, r.wanted) for r in rated] == [("How many folders may desk 0 hold?", 0.4, False)]


def test_a_scopes_learned_threshold_leaves_its_other_languages_to_the_index(tmp_path):
    write_current(tmp_path, {"scopes": {}, "answers": {"all": {"en": {"threshold": 0.6}}}})
    rankers = Rankers(tmp_path)
    assert rankers.abstain_thresholds("collections:a") == {"en": 0.6}
    write_current(
        tmp_path,
        {"scopes": {}, "answers": {"all": {"en": {"threshold": 0.6}}, "collections:a": {"de": {"threshold": 0.3}}}},
    )
    assert rankers.abstain_thresholds("collections:a") == {"en": 0.6, "de": 0.3}  # a new file: read again
    assert rankers.abstain_thresholds("collections:b") == {"en": 0.6}


NEAR_MISSES = [q.replace("desk", "cabinet") for q in QUESTIONS]  # the rules say nothing of cabinets


def _rate_answers(ix, token=None, readable=None) -> None:
    """Each desk question's answer rated good, each cabinet question's (answered from a desk rule) bad."""
    cfg = QueryConfig(k=5, answer=True, answer_mode="extract", readable=readable)
    for text in QUESTIONS + NEAR_MISSES:
        result = ix.query(text, cfg)
        ix.answer_for(result, cfg)
        assert ix.log(result, cfg, token=token)
        shown = Feedback(ix.path).asked(result.query_id)["answer"]
        assert shown["abstained"] is False and shown["confidence"] == result.answer.confidence
        grade = "good" if "desk" in text else "bad"
        ix.feedback(result.query_id, rank=None, grade=grade, token=token, readable=readable)


def _abstains(ix, text: str, readable=None) -> bool:
    cfg = QueryConfig(k=5, answer=True, answer_mode="extract", readable=readable, log=False)
    answered = ix.answer_for(ix.query(text, cfg), cfg)
    assert answered.error is None, answered.error
    return answered.answer.abstained


def test_rated_answers_teach_when_to_abstain(ix):
    unrated = "How many folders may the amber drawer hold?"
    assert not _abstains(ix, unrated) and not _abstains(ix, QUESTIONS[0])  # the shipped threshold
    _rate_answers(ix)
    outcomes = [o for o in ix.learn() if o.kind == "abstain"]
    assert [(o.scope, o.adopted) for o in outcomes] == [("all · en", True)], outcomes
    assert outcomes[0].after["right"] > outcomes[0].before["right"]
    ix = reopen(ix)
    assert _abstains(ix, unrated) and not _abstains(ix, QUESTIONS[0])
    assert ix.learned()["answers"]["all"]["en"]["threshold"] == outcomes[0].after["threshold"]
    assert ix.unlearn() == 1
    assert not _abstains(reopen(ix), unrated)


def test_a_tokens_rated_answers_change_only_its_own_scope(ix):
    _rate_answers(ix, token="team-a", readable=("default",))
    outcomes = [o for o in ix.learn() if o.kind == "abstain"]
    assert [(o.scope, o.adopted) for o in outcomes] == [("collections:default · en", True)], outcomes
    ix = reopen(ix)
    unrated = "How many folders may the amber drawer hold?"
    assert _abstains(ix, unrated, readable=("default",))
    assert not _abstains(ix, unrated)  # the index's own queries ("all") keep the shipped threshold


@pytest.mark.integration
def test_the_cli_logs_rates_opens_learns_and_shows(tmp_path):
    root = tmp_path / "rules"
    for name, text in list(TOPICS.items())[:6]:
        write(root, name, text)
    idx = str(tmp_path / "idx")
    run = [sys.executable, "-m", "ragkit"]
    subprocess.run([*run, "index", str(root), "--index", idx], check=True, capture_output=True)
    out = subprocess.run(
        [*run, "query", "--json", QUESTIONS[2], "--index", idx], check=True, capture_output=True, text=True
    )
    qid = json.loads(out.stdout)["query_id"]
    lines = subprocess.run(
        [*run, "query", "--jsonl", QUESTIONS[2], "--index", idx], check=True, capture_output=True, text=True
    )
    assert all(json.loads(line)["query_id"] for line in lines.stdout.splitlines())
    done = subprocess.run([*run, "feedback", qid, "-p", "1", "--good", "--index", idx], capture_output=True, text=True)
    assert done.returncode == 0 and "graded 3" in done.stdout
    bad = subprocess.run([*run, "feedback", qid, "-p", "1", "--index", idx], capture_output=True, text=True)
    assert bad.returncode == 6 and "--good" in bad.stderr  # one of --good, --bad, --grade
    opened = subprocess.run([*run, "show", "passage", qid, "2", "--index", idx], capture_output=True, text=True)
    assert opened.returncode == 0 and "folders" in opened.stdout
    learned = subprocess.run([*run, "learn", "--index", idx, "--json"], capture_output=True, text=True)
    assert learned.returncode == 0 and json.loads(learned.stdout)[0]["reason"] == "1 judged queries, 20 needed"
    answered = subprocess.run(
        [*run, "query", "--answer", "--json", QUESTIONS[3], "--index", idx], check=True, capture_output=True, text=True
    )
    aid = json.loads(answered.stdout)["query_id"]
    rated = subprocess.run([*run, "feedback", aid, "--answer", "--bad", "--index", idx], capture_output=True, text=True)
    assert rated.returncode == 0 and "the answer" in rated.stdout
    export = tmp_path / "out.jsonl"
    subprocess.run([*run, "feedback", "--export", str(export), "--index", idx], check=True, capture_output=True)
    events = [json.loads(line) for line in export.read_text().splitlines()]
    kinds = [e.get("kind") for e in events if e["type"] == "feedback"]
    assert kinds == ["explicit", "open", "explicit"]
    shown = next(e for e in events if e.get("id") == aid)["answer"]  # logged after the answer was written
    assert shown["abstained"] is False and shown["mode"] == "extract" and 0 < shown["confidence"] <= 1


# ---- ragkit serve: feedback over HTTP and MCP, scoped like reads


def _flipping_ranker() -> Ranker:
    """A ranker that puts the candidates the fusion ranked low first (one split on ``fused_rank``)."""
    f = RANK_FEATURES.index("fused_rank")
    trees = Trees(
        RANK_FEATURES,
        np.array([f, -1, -1], dtype=np.int32),
        np.array([0.3, 0.0, 0.0]),
        np.array([1, 1, 2], dtype=np.int32),
        np.array([2, 1, 2], dtype=np.int32),
        np.array([True, False, False]),
        np.array([0.0, 10.0, -10.0]),
        np.array([0], dtype=np.int32),
        1,
    )
    return Ranker(trees, np.full(len(RANK_FEATURES), -1e9), np.full(len(RANK_FEATURES), 1e9))


@pytest.mark.integration
def test_feedback_through_a_real_server_is_scoped_like_reads(tmp_path):
    from tests.team import QUESTIONS as TEAM_QUESTIONS
    from tests.team import build_index, serve, tokens_file

    index = build_index(tmp_path / "src", tmp_path / "idx")
    tokens, env = tokens_file(tmp_path / "tokens.toml")
    with serve(index, tmp_path / "server.log", "--tokens", str(tokens), env=env) as srv:
        a, b = srv.token("a"), srv.token("b")
        question = TEAM_QUESTIONS[0]
        _, out_a = srv.call("/v1/query", {"query": question, "k": 5, "strategy": "hybrid"}, token=a)
        _, b_before = srv.call("/v1/query", {"query": question, "k": 5, "strategy": "hybrid"}, token=b)
        qid = out_a["query_id"]
        status, kept = srv.call("/v1/feedback", {"query_id": qid, "rank": 1, "good": True}, token=a)
        assert status == 200 and kept["event"]["grade"] == 3
        assert srv.call("/v1/feedback", {"query_id": qid, "rank": 1, "grade": 0}, token=b)[0] == 403  # not B's
        assert srv.call("/v1/feedback", {"query_id": qid, "rank": 1}, token=None)[0] == 401
        assert srv.call("/v1/feedback", {"query_id": qid, "rank": 99, "good": True}, token=a)[0] == 400
        assert srv.call("/v1/feedback", {"query_id": "f" * 16, "rank": 1, "good": True}, token=a)[0] == 404
        assert srv.call("/v1/feedback", {"query_id": qid, "rank": 1}, token=a)[0] == 422  # good or bad: say which
        path = out_a["passages"][1]["document"]["path"]
        assert srv.call(f"/v1/documents/{path}?query_id={qid}&rank=2", token=a)[0] == 200  # a click
        events = [e for e in EventLog(index).read() if e["type"] == "feedback"]
        asker = Token("team-a", env["RAGKIT_TOKEN_A"], ()).pseudonym  # the log never holds a token's name
        assert [(e["token"], e["kind"], e["rank"]) for e in events] == [(asker, "explicit", 1), (asker, "open", 2)]
        assert {e["token"] for e in EventLog(index).read()} == {asker, Token("b", env["RAGKIT_TOKEN_B"], ()).pseudonym}
        scope_a = events[0]["scope"]
        assert scope_a == "collections:" + ",".join(sorted(["default", "laws", "team-a"]))
        # a model learned from A's feedback is A's scope's: A's ranking moves, B's does not
        outcome = ranking.Outcome(scope_a, 20, before={"ndcg@10": 0, "top1": 0}, after={"ndcg@10": 1, "top1": 1})
        ranking.adopt(index, scope_a, _flipping_ranker(), outcome)
        _, a_after = srv.call("/v1/query", {"query": question, "k": 5, "strategy": "hybrid"}, token=a)
        _, b_after = srv.call("/v1/query", {"query": question, "k": 5, "strategy": "hybrid"}, token=b)
        ids = lambda out: [p["chunk_ids"] for p in out["passages"]]  # noqa: E731
        assert ids(a_after) != ids(out_a) and a_after["plan"]["rerank"]["learned"]["scope"] == scope_a
        assert ids(b_after) == ids(b_before) and "learned" not in b_after["plan"]["rerank"]
