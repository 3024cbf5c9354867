"""The search page of ``ragkit serve``, tested as a person would use it: headless chromium against a real server
on loopback with two tokens (tests/web.py). Search, the answer and its quote marked in its passage, a PDF page
opened, feedback given and stored, team A never seeing team B's documents, markup in a document shown as text,
keyboard use, the page's language, its security headers and an empty console."""

from __future__ import annotations

import json
import urllib.request

import pytest

from ragkit.serve.access import Token
from ragkit.store.events import EventLog
from tests import web
from tests.team import MARKERS, leaks, serve, tokens_file

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not web.available(), reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("web")
    index = web.build(root)
    tokens, env = tokens_file(root / "tokens.toml")
    with serve(index, root / "server.log", "--tokens", str(tokens), env=env) as srv:
        srv.index = index
        yield srv


@pytest.fixture
def browser(tmp_path):
    with web.browser(tmp_path / "profile") as driver:
        yield driver


def by(driver, css):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def test_without_a_token_the_page_asks_for_one_and_shows_no_data(server, browser):
    browser.get(server.url + "/")
    web.wait_for(browser, "#sign-in")
    assert by(browser, "#search")[0].get_attribute("hidden") is not None
    assert not by(browser, "#results > li") and "Amberfield" not in browser.page_source
    assert web.console_errors(browser) == []


def test_search_answer_quote_feedback_and_a_pdf_page_as_team_a(server, browser):
    web.sign_in(browser, server.url + "/", server.token("a"))
    web.search(browser, "Where must forklifts stop at the Amberfield Depot?")
    answer = web.wait_for(browser, "#answer")  # (the passages are painted first, the answer when written)
    assert answer.is_displayed() and "yellow line" in answer.text
    quoted = by(browser, "#results mark.quote")  # the quote, marked inside its passage
    assert quoted and "yellow line" in quoted[0].text
    first = by(browser, "#results > li")[0]
    assert "safety-manual.pdf" in first.text and "p. 2" in first.text  # title, path and page
    assert by(first, "mark") and by(first, ".crumb")[0].text  # the query's words marked; its breadcrumb
    by(first, "button.good")[0].click()
    web.wait_for(browser, '#results > li button.good[aria-pressed="true"]')
    events = [e for e in EventLog(server.index).read() if e["type"] == "feedback"]
    asker = Token("team-a", server.env["RAGKIT_TOKEN_A"], ()).pseudonym  # the log keeps no token's name
    assert events[-1]["token"] == asker and events[-1]["rank"] == 1 and events[-1]["grade"] == 3
    by(first, "button.open")[0].click()
    image = web.wait_for(browser, "#viewer img")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) > 800
    clicks = [e for e in EventLog(server.index).read() if e.get("kind") == "open"]
    assert clicks and clicks[-1]["rank"] == 1  # opening it counted as a click
    assert web.console_errors(browser) == []


def test_a_quote_after_emoji_is_marked_where_it_stands_and_the_header_names_the_index(server, browser):
    web.sign_in(browser, server.url + "/", server.token("a"))
    assert by(browser, "#index-name")[0].text == server.index.name  # its name, never its path
    web.search(browser, "How do I secure the Amberfield ladder before climbing it?")
    quoted = web.wait_for(browser, "#results mark.quote")
    quote = by(browser, "#answer blockquote p")[0].text  # the answer's quote, as the answer box shows it
    assert web.LADDER_QUOTE in quote and quoted.text == quote  # marked exactly where it stands
    assert web.console_errors(browser) == []


def test_team_a_never_sees_a_title_text_or_count_of_team_b(server, browser):
    web.sign_in(browser, server.url + "/", server.token("a"))
    b_markers = MARKERS["team-b"]
    collections = [o.text for o in by(browser, "#collection option")]
    assert "team-b" not in collections and "team-a" in collections
    for question in ("Zebraquill Bluequartz", "Who leads Project Orion?", "What does Helena Varga decide?"):
        web.search(browser, question)
        text = browser.find_element("tag name", "body").text
        assert leaks(text, b_markers) == [], (question, leaks(text, b_markers))
    assert web.console_errors(browser) == []


def test_markup_in_a_document_shows_as_text_and_runs_nothing(server, browser):
    web.sign_in(browser, server.url + "/", server.token("a"))
    web.search(browser, "Zeppelin crate markup wiki page")
    text = browser.find_element("tag name", "body").text
    assert "<script>window.pwned=1</script>" in text and 'onerror="window.pwned=2"' in text
    assert browser.execute_script("return window.pwned === undefined")
    assert not by(browser, "#results script") and not by(browser, "#results img")


def test_keyboard_alone_searches_moves_through_results_and_opens_one(server, browser):
    from selenium.webdriver.common.keys import Keys

    web.sign_in(browser, server.url + "/", server.token("a"))
    web.search(browser, "night shift rules at the depot")
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert browser.switch_to.active_element.get_attribute("data-rank") == "1"
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert browser.switch_to.active_element.get_attribute("data-rank") == "2"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    web.wait_for(browser, "#viewer .section-text")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert not by(browser, "#viewer")[0].is_displayed()
    labels = {e.get_attribute("for") for e in by(browser, "label")}
    assert {"q", "strategy", "collection", "doc-type"} <= labels  # every field has its label


@pytest.mark.parametrize(("language", "button"), [("de-DE", "Suchen"), ("sv-SE", "Sök"), ("en-GB", "Search")])
def test_the_page_speaks_the_browsers_language(server, tmp_path, language, button):
    with web.browser(tmp_path / "profile", language=language) as driver:
        driver.get(server.url + "/")
        web.wait_for(driver, "#sign-in")
        assert by(driver, "#go")[0].get_attribute("textContent") == button


def test_the_page_has_a_strict_policy_no_cookies_and_takes_the_token_only_as_a_header(server):
    with urllib.request.urlopen(server.url + "/") as resp:
        policy = resp.headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert resp.headers["X-Content-Type-Options"] == "nosniff" and "Set-Cookie" not in resp.headers
        html = resp.read().decode()
    assert "<script>" not in html and "style=" not in html and "http" not in html.split("<body>")[1]
    status, _ = server.call(f"/v1/stats?token={server.token('a')}")  # a token in the URL is no token
    assert status == 401
    js = urllib.request.urlopen(server.url + "/web/app.js").read().decode()
    assert "innerHTML" not in js and "sessionStorage" in js and "document.cookie" not in js
    body = json.loads(urllib.request.urlopen(server.url + "/healthz").read())
    assert body["auth"] is True
