#!/usr/bin/env python
"""A real MCP client session against `ragkit serve --mcp` (the SDK's stdio client), timed.

    python scripts/bench_mcp.py --index <index> [--queries ../shared/data/scifact-train/queries.jsonl] [--n 20]

Starts the server as the client's subprocess, then times: process start to initialised session (the server
loads the index and warms up before it answers), `list_tools`, and `search` calls (k 8) over the first
``--n`` queries of the set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_Q = ROOT.parent / "shared/data/scifact-train/queries.jsonl"


async def session(index: str, queries: list[str]) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragkit", "serve", "--mcp", "--index", index],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        cwd=str(ROOT),
    )
    t = time.perf_counter()
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as s:
            await s.initialize()
            started = time.perf_counter() - t
            t = time.perf_counter()
            tools = (await s.list_tools()).tools
            listed = time.perf_counter() - t
            searches = []
            for q in queries:
                t = time.perf_counter()
                result = await s.call_tool("search", {"query": q, "k": 8})
                searches.append(time.perf_counter() - t)
                if result.is_error:
                    raise SystemExit(f"search failed: {result.content[0].text}")
    return {"started": started, "listed": listed, "tools": [x.name for x in tools], "searches": searches}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=Path, default=DEFAULT_Q)
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    import anyio

    queries = [json.loads(line)["text"] for line in args.queries.open() if line.strip()][: args.n]
    out = anyio.run(session, args.index, queries)
    tab = Table(title=f"MCP over stdio: ragkit serve --mcp --index {args.index}")
    tab.add_column("step", justify="left")
    tab.add_column("time", justify="right")
    tab.add_row("start the server process → session initialised", f"{out['started']:.2f} s")
    tab.add_row(f"list_tools ({', '.join(out['tools'])})", f"{out['listed'] * 1000:.1f} ms")
    tab.add_row("first search", f"{out['searches'][0] * 1000:.1f} ms")
    s = sorted(out["searches"][1:]) or [0.0]
    tab.add_row(f"search, the next {len(s)}: p50 / max", f"{statistics.median(s) * 1000:.1f} / {s[-1] * 1000:.1f} ms")
    Console(width=160).print(tab)


if __name__ == "__main__":
    main()
