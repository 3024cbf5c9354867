#!/usr/bin/env python
"""ragkit fuzzed as attackers and careless clients would (tests/fuzz.py holds the generators and checks).

    python scripts/fuzz.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  parsers  hypothesis over the query syntax and planner (and whole lexical queries over an index), the
           legal-reference parser and the tokens file: cases and crashes per parser
  api      schemathesis over ``ragkit serve --tokens``'s OpenAPI schema (tests/team.py's two workspaces and a
           PDF): every route, valid and invalid requests, without a token, with team A's and team B's token, and
           over a second server without tokens: requests, statuses, 5xx, responses holding another team's data
           or the index's path, latency p50 / p99

Every subcommand also takes ``--json``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import harness
from harness import arg, print_table

cli = harness.CLI(__doc__)
fuzz = harness.tests_module("fuzz")
team = harness.tests_module("team")
web = harness.tests_module("web")


@cli.command("parsers", arg("--examples", type=int, default=10_000), arg("--work", type=Path, default=None))
def parsers(args) -> None:
    """``--examples`` cases per parser; the whole-query run over tests/team.py's index (lexical, no model)."""
    work = harness.workdir(args.work, "fuzz")
    index = work / "idx"
    if not (index / "manifest.json").is_file():
        team.build_index(work / "src", index)
    ix = harness.open_index(index)
    rows = []
    for name, run in (
        ("query syntax + planner", lambda: fuzz.fuzz_queries(args.examples)),
        ("whole queries (lexical) over an index", lambda: fuzz.fuzz_queries(args.examples // 5, ix)),
        ("legal references", lambda: fuzz.fuzz_legal(args.examples)),
        ("tokens file", lambda: fuzz.fuzz_tokens(args.examples, Path(tempfile.mkdtemp()))),
    ):
        t = time.perf_counter()
        tally = run()
        rows.append(
            (name, tally.cases, len(tally.failures), f"{time.perf_counter() - t:.0f}", "; ".join(tally.failures[:2]))
        )
    print_table(
        "hypothesis: cases and crashes per parser",
        ("parser", "cases", "crashes", "s", "first crashes"),
        rows,
        width=160,
    )


@cli.command("api", arg("--per-operation", type=int, default=80), arg("--work", type=Path, default=None))
def api_fuzz(args) -> None:
    """schemathesis against a real server with tokens (no token, team A, team B) and one without tokens."""
    work = harness.workdir(args.work, "fuzz-api")
    index = work / "idx"
    if not (index / "manifest.json").is_file():
        web.build(work)
    tokens, env = team.tokens_file(work / "tokens.toml", {"max_tokens": 64})
    b = team.MARKERS["team-b"] + team.ids_of(index, "team-b")
    a = team.MARKERS["team-a"] + team.ids_of(index, "team-a")
    rows = []
    with team.serve(index, work / "server.log", "--tokens", str(tokens), env=env) as srv:
        callers = {"no token": None, "team A": srv.token("a"), "team B": srv.token("b")}
        paths = [str(work.resolve()), str(index.resolve())]  # where the index lives: no answer may say it
        markers = {"no token": a + b + paths, "team A": b + paths, "team B": a + paths}
        t = time.perf_counter()
        tally = fuzz.fuzz_api(srv.url, callers, markers, args.per_operation)
        rows.append(("with tokens", *_figures(tally), f"{time.perf_counter() - t:.0f}"))
        failures = tally.server_errors[:3] + tally.leaks[:3]
    with team.serve(index, work / "open.log") as srv:
        t = time.perf_counter()
        tally = fuzz.fuzz_api(srv.url, {"loopback": None}, {"loopback": paths}, args.per_operation)
        rows.append(("without tokens (loopback)", *_figures(tally), f"{time.perf_counter() - t:.0f}"))
        failures += tally.server_errors[:3]
    cols = ("server", "requests", "statuses", "5xx", "another team's data or a path", "p50 ms", "p99 ms", "s")
    print_table("schemathesis over ragkit serve", cols, rows, width=170, notes=failures)


def _figures(tally) -> tuple:
    ms = sorted(s * 1000 for s in tally.seconds) or [0.0]
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(tally.by_status.items()))
    p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
    return (
        tally.requests,
        statuses,
        len(tally.server_errors),
        len(tally.leaks),
        f"{statistics.median(ms):.0f}",
        f"{p99:.0f}",
    )


if __name__ == "__main__":
    cli.main()
