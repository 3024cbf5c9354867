#!/usr/bin/env python
"""The search page of ``ragkit serve`` in a real browser (headless chromium): how fast it paints, what it weighs,
what its console says, and how it looks.

    python scripts/bench_web.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  page   on a warm server: the milliseconds from Enter to the first result painted (the page's own
         ``performance.now()``, p50 and p95 over N questions after one warm-up), the bytes the page loads before
         any result (HTML, script, style: the Resource Timing API's transfer sizes), and the console's errors
  shots  screenshots: the search page with an answer, and an opened PDF page with its quote marked (PNG files)

Every subcommand also takes ``--json``.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import harness
from harness import arg, print_table

web = harness.tests_module("web")
team = harness.tests_module("team")
quality = harness.tests_module("quality")
QUESTIONS = [q["query"] for q in quality.german_questions()[:21]]


def _server(index: Path, work: Path):
    return team.serve(index, work / "server.log")


cli = harness.CLI(__doc__)


@cli.command(
    "page",
    arg("--index", type=Path, default=None, help="an index of the German laws (default: built in --work)"),
    arg("--work", type=Path, default=Path("/tmp/ragkit-bench-web")),
    arg("--n", type=int, default=20),
)
def page(args) -> None:
    """Enter → first result painted on the German laws (p50 / p95 of ``--n`` questions), the page's weight, its
    console errors."""
    args.work.mkdir(parents=True, exist_ok=True)
    index = args.index or harness.indexed(quality.GERMAN_LAWS, args.work / "laws")[0].path
    with _server(index, args.work) as srv, web.browser(args.work / "profile") as driver:
        driver.get(srv.url + "/")
        web.wait_for(driver, "#q")
        weight = driver.execute_script(
            "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
            ".map(e => [e.name, e.transferSize || e.encodedBodySize])"
        )
        web.search(driver, "Wie lange darf ich am Tag arbeiten?")  # warm-up
        for q in QUESTIONS[: args.n]:
            web.search(driver, q)
        times = driver.execute_script("return window.ragkitTimings")[1:]
        errors = web.console_errors(driver)
    total = sum(size for _, size in weight)
    rows = [
        ("questions", len(times)),
        ("Enter → first result painted, p50 ms", f"{statistics.median(times):.0f}"),
        ("p95 ms", f"{sorted(times)[int(0.95 * (len(times) - 1))]:.0f}"),
        ("bytes before results", f"{total:,} ({', '.join(f'{Path(n).name or n}: {s:,}' for n, s in weight)})"),
        ("console errors", len(errors)),
    ]
    print_table(f"the search page, warm server ({index})", ("", "value"), rows, width=160, notes=errors[:5])


@cli.command(
    "shots",
    arg("--laws", type=Path, required=True, help="an index of the German laws"),
    arg("--regulations", type=Path, required=True, help="an index of the Swedish regulations (PDF)"),
    arg("--out", type=Path, default=harness.REPO / "scripts" / "screenshots"),
    arg("--work", type=Path, default=Path("/tmp/ragkit-bench-web")),
)
def shots(args) -> None:
    """The search page answering a German question, and an opened page of a Swedish regulation, as PNG files."""
    from selenium.webdriver.common.by import By

    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    written = []
    with _server(args.laws, args.work) as srv, web.browser(args.work / "p1", language="de-DE", height=1100) as driver:
        driver.get(srv.url + "/")
        web.wait_for(driver, "#q")
        web.search(driver, "Wie lange muss meine Mittagspause mindestens sein?")
        path = args.out / "search-page.png"
        driver.save_screenshot(str(path))
        written.append(path)
    with (
        _server(args.regulations, args.work) as srv,
        web.browser(args.work / "p2", language="sv-SE", height=1100) as driver,
    ):
        driver.get(srv.url + "/")
        web.wait_for(driver, "#q")
        web.search(driver, "Hur tjocka måste stålrören vara i en rörställning?")
        first = driver.find_elements(By.CSS_SELECTOR, "#results > li")[0]
        first.find_element(By.CSS_SELECTOR, "button.open").click()
        web.wait_for(driver, "#viewer img")
        driver.execute_script("document.querySelector('#viewer img').scrollIntoView()")
        path = args.out / "pdf-page.png"
        driver.save_screenshot(str(path))
        written.append(path)
    print_table("screenshots", ("file", "bytes"), [(str(p), p.stat().st_size) for p in written])


if __name__ == "__main__":
    cli.main()
