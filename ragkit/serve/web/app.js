// ragkit's search page: plain DOM, no framework, nothing fetched but from this server. Every text from the index
// goes into the page as text (textContent), never as markup. The bearer token lives in this tab's sessionStorage
// and travels only in the Authorization header.
"use strict";

const STRINGS = {
  en: {
    go: "Search", q: "Question or words to search", strategy: "Strategy", collection: "Collection", docType: "Type",
    all: "all", answer: "Answer questions", answerTitle: "Answer", silent: "The documents do not say.",
    confidence: "confidence", good: "Helpful", bad: "Not helpful", open: "Open", close: "Close",
    signIn: "Sign in", signInHint: "This server needs a token. It is kept in this tab only.", token: "Token",
    signOut: "Sign out", wrongToken: "That token was not accepted.", searching: "Searching…",
    found: (n, ms) => `${n} passages · ${ms} ms`, none: "Nothing found.", thanks: "Thank you: noted.",
    lines: "lines", page: "p.", ocr: "scan, OCR confidence", failed: "The request failed:", quoteFrom: "from passage",
  },
  de: {
    go: "Suchen", q: "Frage oder Suchwörter", strategy: "Strategie", collection: "Sammlung", docType: "Typ",
    all: "alle", answer: "Fragen beantworten", answerTitle: "Antwort", silent: "Die Dokumente sagen nichts dazu.",
    confidence: "Sicherheit", good: "Hilfreich", bad: "Nicht hilfreich", open: "Öffnen", close: "Schließen",
    signIn: "Anmelden", signInHint: "Dieser Server verlangt ein Token. Es bleibt nur in diesem Tab.", token: "Token",
    signOut: "Abmelden", wrongToken: "Dieses Token wurde nicht angenommen.", searching: "Suche läuft…",
    found: (n, ms) => `${n} Stellen · ${ms} ms`, none: "Nichts gefunden.", thanks: "Danke, vermerkt.",
    lines: "Zeilen", page: "S.", ocr: "Scan, OCR-Konfidenz", failed: "Die Anfrage ist fehlgeschlagen:", quoteFrom: "aus Stelle",
  },
  sv: {
    go: "Sök", q: "Fråga eller sökord", strategy: "Strategi", collection: "Samling", docType: "Typ",
    all: "alla", answer: "Besvara frågor", answerTitle: "Svar", silent: "Dokumenten säger inget om detta.",
    confidence: "säkerhet", good: "Till hjälp", bad: "Inte till hjälp", open: "Öppna", close: "Stäng",
    signIn: "Logga in", signInHint: "Servern kräver en token. Den sparas bara i den här fliken.", token: "Token",
    signOut: "Logga ut", wrongToken: "Token godtogs inte.", searching: "Söker…",
    found: (n, ms) => `${n} avsnitt · ${ms} ms`, none: "Inget hittades.", thanks: "Tack, noterat.",
    lines: "rader", page: "s.", ocr: "skanning, OCR-säkerhet", failed: "Förfrågan misslyckades:", quoteFrom: "ur avsnitt",
  },
};
const STRATEGIES = ["auto", "hybrid", "lexical", "naive", "local", "global", "light", "hippo", "hierarchical"];
const QUESTION = /\?\s*$|^(who|what|when|where|which|why|how|is|are|can|does|do|may|must|wer|was|wann|wo|welche\w*|warum|wie|darf|muss|kann|ist|sind|gibt|vem|vad|när|var|vilk\w*|varför|hur|får|måste|kan|är|finns)\b/i;
const STOP = new Set("the and for with that this from what when where which how does are was were der die das und für mit ist sind wie was wann wer wo den dem des ein eine och att det som för med är hur vad när vem var".split(" "));

const lang = (navigator.languages || [navigator.language || "en"]).map((l) => l.slice(0, 2)).find((l) => STRINGS[l]) || "en";
const T = STRINGS[lang];
const $ = (id) => document.getElementById(id);
const KEY = "ragkit.token";
let last = null; // the last ragkit.query/1 result
window.ragkitTimings = []; // milliseconds from Enter to the first result painted, per search

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else if (k.startsWith("aria") || k === "role" || k === "tabindex" || k === "type") node.setAttribute(k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase()), v);
    else node[k] = v;
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

async function call(path, options = {}) {
  const headers = { ...(options.body ? { "Content-Type": "application/json" } : {}) };
  const token = sessionStorage.getItem(KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { ...options, headers, credentials: "omit", cache: "no-store" });
  if (response.status === 401) {
    sessionStorage.removeItem(KEY);
    showSignIn(T.wrongToken);
    throw new Error("401");
  }
  return response;
}

async function json(path, options) {
  const response = await call(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error((body && body.error && body.error.message) || response.statusText);
  return body;
}

function say(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "dim";
}

function labels() {
  document.documentElement.lang = lang;
  for (const [id, key] of [["go", "go"], ["q-label", "q"], ["strategy-label", "strategy"], ["collection-label", "collection"],
    ["doc-type-label", "docType"], ["answer-text", "answer"], ["answer-title", "answerTitle"], ["answer-good", "good"],
    ["answer-bad", "bad"], ["viewer-close", "close"], ["sign-in-title", "signIn"], ["sign-in-hint", "signInHint"],
    ["token-label", "token"], ["sign-in-button", "signIn"], ["sign-out", "signOut"]]) $(id).textContent = T[key];
  $("q").placeholder = T.q;
  for (const s of STRATEGIES) $("strategy").append(el("option", { value: s, text: s }));
}

function showSignIn(message = "") {
  $("search").hidden = true;
  $("answer").hidden = true;
  $("results").replaceChildren();
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  $("token").focus();
}

async function start() {
  labels();
  const health = await (await fetch("/healthz", { credentials: "omit", cache: "no-store" })).json();
  $("index-name").textContent = health.index || "";
  if (health.auth && !sessionStorage.getItem(KEY)) showSignIn();
  else await ready(health.auth);
}

async function ready(auth) {
  const stats = await json("/v1/stats");
  fill($("collection"), Object.keys(stats.collections || {}));
  fill($("doc-type"), Object.keys(stats.doc_types || {}));
  $("sign-in").hidden = true;
  $("search").hidden = false;
  $("sign-out").hidden = !auth;
  $("q").focus();
}

function fill(select, values) {
  select.replaceChildren(el("option", { value: "", text: T.all }), ...values.sort().map((v) => el("option", { value: v, text: v })));
}

function words(query) {
  return [...new Set((query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || []).filter((w) => !STOP.has(w)))];
}

// text with the query's words marked (a word of the passage starting with one of them) and [start, end) as the quote
function marked(text, query, quote) {
  const parts = quote ? [[text.slice(0, quote[0]), false], [text.slice(quote[0], quote[1]), true], [text.slice(quote[1]), false]] : [[text, false]];
  const ws = words(query).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = ws.length ? new RegExp(`(?<![\\p{L}\\p{N}])(${ws.join("|")})[\\p{L}\\p{N}]*`, "giu") : null;
  const out = document.createDocumentFragment();
  for (const [chunk, isQuote] of parts) {
    if (!chunk) continue;
    const holder = isQuote ? el("mark", { class: "quote" }) : out;
    let at = 0;
    for (const m of pattern ? chunk.matchAll(pattern) : []) {
      holder.append(chunk.slice(at, m.index), el("mark", { text: m[0] }));
      at = m.index + m[0].length;
    }
    holder.append(chunk.slice(at));
    if (isQuote) out.append(holder);
  }
  return out;
}

function place(p) {
  const scanned = p.ocr ? ` · ${T.ocr} ${Math.round(p.ocr.confidence)}` : "";  // read by OCR from a scan
  if (p.pages) return `${T.page} ${p.pages[0]}${p.pages[1] !== p.pages[0] ? "–" + p.pages[1] : ""}${scanned}`;
  return `${T.lines} ${p.lines[0]}–${p.lines[1]}`;
}

async function search(event) {
  event.preventDefault();
  const query = $("q").value.trim();
  if (!query) return;
  const t0 = performance.now();
  say(T.searching);
  const filters = {};
  if ($("collection").value) filters.collection = $("collection").value;
  if ($("doc-type").value) filters.doc_type = $("doc-type").value;
  const answer = $("with-answer").checked && QUESTION.test(query);
  const body = { query, strategy: $("strategy").value, k: 10, filters, answer, answer_mode: "extract" };
  let painted = false;
  const paint = (out) => {
    last = out;
    render(out);
    if (painted) return;
    painted = true;
    requestAnimationFrame(() => {
      const ms = Math.round(performance.now() - t0);
      window.ragkitTimings.push(ms);
      performance.mark("ragkit-first-result");
      say(out.passages.length ? T.found(out.passages.length, ms) : T.none);
    });
  };
  try {
    if (!answer) {
      paint(await json("/v1/query", { method: "POST", body: JSON.stringify(body) }));
      return;
    }
    // the passages as soon as they are found, the answer when it is written (JSON lines)
    const response = await call("/v1/query", { method: "POST", body: JSON.stringify({ ...body, stream: true, early: true }) });
    if (!response.ok) throw new Error((await response.json()).error?.message || response.statusText);
    for await (const line of lines(response)) {
      if (line.early) paint(line.early);
      else if (line.schema) paint(line);
      else if (line.error) throw new Error(line.error.message);
    }
  } catch (err) {
    if (err.message !== "401") say(`${T.failed} ${err.message}`, true);
  }
}

async function* lines(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).trim();
      buffer = buffer.slice(cut + 1);
      if (line) yield JSON.parse(line);
    }
    if (done) return;
  }
}

// a quote's offsets count code points (as Python does); JavaScript strings count UTF-16 units: an emoji is one of
// the first and two of the second, so the offsets are converted before slicing
function units(text, points) {
  let at = 0;
  for (let n = 0; n < points && at < text.length; n++) at += text.codePointAt(at) > 0xffff ? 2 : 1;
  return at;
}

function quoteRanges(out) {
  const ranges = {};
  const a = out.answer;
  const texts = Object.fromEntries(out.passages.map((p) => [p.rank, p.text]));
  if (a && !a.abstained) {
    for (const q of a.quotes || []) {
      if (q.end > q.start && texts[q.rank] !== undefined) ranges[q.rank] = [units(texts[q.rank], q.start), units(texts[q.rank], q.end)];
    }
  }
  return ranges;
}

function render(out) {
  const ranges = quoteRanges(out);
  renderAnswer(out);
  const items = out.passages.map((p) => passageItem(p, out, ranges[p.rank]));
  $("results").replaceChildren(...items);
}

function renderAnswer(out) {
  const a = out.answer;
  const box = $("answer");
  box.hidden = !a;
  if (!a) return;
  box.classList.toggle("abstained", !!a.abstained);
  const body = $("answer-body");
  if (a.abstained) body.replaceChildren(el("p", { text: T.silent }));
  else body.replaceChildren(...(a.quotes || []).map((q) => el("blockquote", {}, el("p", { text: q.text }), el("p", { class: "dim", text: `${T.quoteFrom} ${q.rank} · ${q.path}` }))));
  $("answer-meta").textContent = a.confidence != null ? `${T.confidence} ${Math.round(a.confidence * 100)} %` : "";
  for (const id of ["answer-good", "answer-bad"]) $(id).setAttribute("aria-pressed", "false");
}

function passageItem(p, out, quote) {
  const item = el("li", { tabindex: "0", ariaLabel: `${p.rank}. ${p.document.title || p.document.path}` });
  item.dataset.rank = p.rank;
  const head = el("div", { class: "head" },
    el("span", { class: "rank", text: `[${p.rank}]` }),
    el("span", { class: "doc-title", text: p.document.title || p.document.path }),
    el("span", { class: "dim", text: `${p.document.path} · ${place(p)}` }));
  const crumb = el("div", { class: "crumb", text: p.section });
  const text = el("div", { class: "text" }, marked(p.text, out.query, quote));
  const good = el("button", { type: "button", class: "good", text: T.good, ariaPressed: "false" });
  const bad = el("button", { type: "button", class: "bad", text: T.bad, ariaPressed: "false" });
  const open = el("button", { type: "button", class: "open", text: T.open });
  good.addEventListener("click", () => rate(out.query_id, p.rank, true, good, bad));
  bad.addEventListener("click", () => rate(out.query_id, p.rank, false, bad, good));
  open.addEventListener("click", () => show(p, out, quote));
  item.append(head, crumb, text, el("div", { class: "rate" }, good, bad, open));
  return item;
}

async function rate(queryId, rank, good, pressed, other) {
  try {
    await json("/v1/feedback", { method: "POST", body: JSON.stringify({ query_id: queryId, rank, good }) });
    pressed.setAttribute("aria-pressed", "true");
    if (other) other.setAttribute("aria-pressed", "false");
    say(T.thanks);
  } catch (err) {
    if (err.message !== "401") say(`${T.failed} ${err.message}`, true);
  }
}

async function show(p, out, quote) {
  const viewer = $("viewer");
  const body = $("viewer-body");
  $("viewer-title").textContent = `${p.document.title || p.document.path} · ${p.section}`;
  body.replaceChildren();
  viewer.hidden = false;
  $("viewer-close").focus();
  const click = `query_id=${encodeURIComponent(out.query_id)}&rank=${p.rank}`;
  try {
    if (p.pages) {
      const mark = quote ? p.text.slice(quote[0], quote[1]) : "";
      const path = p.document.path.split("/").map(encodeURIComponent).join("/");
      const response = await call(`/v1/documents/${path}/pages/${p.pages[0]}.png?${click}&mark=${encodeURIComponent(mark)}`);
      if (!response.ok) throw new Error(response.statusText);
      const image = el("img", { alt: `${p.document.path} ${T.page} ${p.pages[0]}` });
      image.src = URL.createObjectURL(await response.blob());
      body.append(image);
    } else {
      const section = await json(`/v1/sections/${encodeURIComponent(p.section_id)}?${click}`);
      const at = quote ? section.text.indexOf(p.text.slice(quote[0], quote[1])) : -1;
      const range = at >= 0 ? [at, at + quote[1] - quote[0]] : null;
      body.append(el("div", { class: "section-text" }, marked(section.text, out.query, range)));
    }
  } catch (err) {
    if (err.message !== "401") body.append(el("p", { class: "error", text: `${T.failed} ${err.message}` }));
  }
}

function closeViewer() {
  $("viewer").hidden = true;
  const back = document.querySelector(`#results > li[data-rank="${document.activeElement?.dataset?.rank || 1}"]`) || $("q");
  back.focus();
}

function keys(event) {
  const items = [...document.querySelectorAll("#results > li")];
  const at = items.indexOf(document.activeElement.closest("#results > li"));
  if (event.key === "Escape" && !$("viewer").hidden) closeViewer();
  else if (event.key === "ArrowDown" && (at >= 0 || document.activeElement === $("q")) && items.length) {
    event.preventDefault();
    items[Math.min(at + 1, items.length - 1)].focus();
  } else if (event.key === "ArrowUp" && at >= 0) {
    event.preventDefault();
    (at === 0 ? $("q") : items[at - 1]).focus();
  } else if (event.key === "Enter" && at >= 0 && document.activeElement === items[at] && last) {
    event.preventDefault();
    items[at].querySelector("button.open").click();
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("search").addEventListener("submit", search);
  $("sign-in").addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value.trim());
    $("token").value = "";
    try {
      await ready(true);
    } catch (err) {
      if (err.message !== "401") $("sign-in-error").textContent = err.message;
    }
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    showSignIn();
  });
  $("viewer-close").addEventListener("click", closeViewer);
  $("answer-good").addEventListener("click", () => last && rate(last.query_id, null, true, $("answer-good"), $("answer-bad")));
  $("answer-bad").addEventListener("click", () => last && rate(last.query_id, null, false, $("answer-bad"), $("answer-good")));
  document.addEventListener("keydown", keys);
  start().catch((err) => say(`${T.failed} ${err.message}`, true));
});
