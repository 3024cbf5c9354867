"""A real browser on the search page of a real ``ragkit serve`` (tests/test_web.py, scripts/bench_web.py):
Debian's headless chromium driven by selenium through Debian's chromedriver, nothing fetched from outside.

The index is tests/team.py's two workspaces with three more documents of team A: a PDF (a manual whose page the
page renders), a note holding markup (``<script>``, ``onerror=``) that must show as text, and ladder rules with
emoji before the sentence an answer quotes (marked where it stands).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HOSTILE = (
    "# Markup in a note\n\n## Tags\n\nThe Amberfield wiki once held <script>window.pwned=1</script> and "
    '<img src=x onerror="window.pwned=2"> in a page about the Zeppelin crate; both must show as text.\n'
)
MANUAL_QUOTE = "Forklifts at the Amberfield Depot must stop at the yellow line before the loading dock."
LADDER_QUOTE = "The Amberfield ladder 🪜 must be tied to the rack with two straps before anyone climbs it."
LADDERS = (  # emoji before the quote: a quote's offsets count code points, JavaScript's strings UTF-16 units
    "# Ladder rules 🪜\n\n## Ladders 🚧\n\n🚧🚧 Ladders at the depot are checked every morning 🌅 by the yard crew. "
    f"{LADDER_QUOTE} Broken ladders go to the red cage.\n"
)


def _tests_module(name: str):
    """tests/<name>.py, also where tests/ is no package on the path (scripts load this file by path)."""
    import importlib.util
    import sys

    key = f"tests.{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def available() -> bool:
    return Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()


def write_extra(src: Path) -> None:
    """Team A's manual (a PDF with a known sentence on page 2) and its note with markup."""
    documents = _tests_module("documents")
    Page, Spec, write_pdf = documents.Page, documents.Spec, documents.write_pdf

    folder = src / "alpha"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "markup-note.md").write_text(HOSTILE)
    (folder / "ladder-rules.md").write_text(LADDERS)
    spec = Spec(
        "Amberfield Depot Safety Manual",
        [
            Page("Depot safety", 1, ["Every worker at the Amberfield Depot wears a helmet in the yard."]),
            Page("Forklift rules", 1, [MANUAL_QUOTE, "A forklift may carry at most two Orion crates at once."]),
        ],
    )
    write_pdf(spec, folder / "safety-manual.pdf")


def build(root: Path) -> Path:
    """tests/team.py's index with the extra documents of team A."""
    from dataclasses import replace

    import ragkit
    from ragkit.config import IndexConfig

    team = _tests_module("team")
    COLLECTIONS, write_corpus = team.COLLECTIONS, team.write_corpus  # noqa: N806

    folders = write_corpus(root / "src")
    write_extra(root / "src")
    index_dir = root / "idx"
    for folder, collection in COLLECTIONS.items():
        cfg = IndexConfig() if collection is None else replace(IndexConfig(), collection=collection)
        ragkit.index([folders[folder]], index_dir, cfg=cfg)
    return index_dir


@contextmanager
def browser(profile: Path, language: str = "en-US", width: int = 1280, height: int = 900):
    """Headless chromium (no network beyond loopback: background services off), its console kept."""
    os.environ.setdefault("SE_OFFLINE", "true")
    os.environ.setdefault("SE_AVOID_STATS", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--lang={language}",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(flag)
    opts.add_experimental_option("prefs", {"intl.accept_languages": language})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_for(driver, css: str, seconds: float = 60.0, visible: bool = True):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    condition = ec.visibility_of_element_located if visible else ec.presence_of_element_located
    return WebDriverWait(driver, seconds).until(condition((By.CSS_SELECTOR, css)))


def sign_in(driver, url: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url)
    wait_for(driver, "#sign-in")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "sign-in-button").click()
    wait_for(driver, "#q")


def search(driver, text: str, seconds: float = 120.0) -> None:
    """Type ``text`` and press Enter; wait until the results (or "nothing found") are painted."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    before = driver.execute_script("return window.ragkitTimings.length")
    box = driver.find_element(By.ID, "q")
    box.clear()
    box.send_keys(text, Keys.ENTER)
    WebDriverWait(driver, seconds).until(lambda d: d.execute_script("return window.ragkitTimings.length") > before)
