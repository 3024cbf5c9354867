"""The search page ``ragkit serve`` answers ``GET /`` with: three static files (``web/``: HTML, CSS, a script),
no build step, nothing fetched from elsewhere. The page itself needs no token and holds no data; everything it
shows comes from the API with the bearer token the person signs in with (kept in the tab's session storage), so
it is scoped exactly as the API is.

Every response of the page carries a strict Content-Security-Policy: scripts, styles, fetches and pictures from this
server only (pictures also as ``blob:``, the PDF pages it fetches with the token), no inline script or style, no
frames, no plugins; and ``nosniff``, no referrer, no framing.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).with_name("web")
FILES = {"/": ("index.html", "text/html; charset=utf-8"), "/web/app.js": ("app.js", "text/javascript; charset=utf-8")}
FILES["/web/app.css"] = ("app.css", "text/css; charset=utf-8")
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def page(path: str) -> tuple[bytes, str] | None:
    """The bytes and media type of the page's file at ``path`` (None: not one of them)."""
    found = FILES.get(path)
    if found is None:
        return None
    name, media = found
    return (FOLDER / name).read_bytes(), media
