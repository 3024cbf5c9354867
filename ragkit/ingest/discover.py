"""Walk the given paths, apply include/exclude globs, read and hash files."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragkit.errors import BadInput


@dataclass
class SourceFile:
    path: Path  # absolute
    rel: str  # display path: relative to the root it was found under
    size: int
    mtime_ns: int


def _matches(rel: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p) for p in patterns)


def discover(
    paths: list[Path],
    include: list[str],
    exclude: list[str],
    include_hidden: bool = False,
    skipped: list[tuple[str, str]] | None = None,
) -> list[SourceFile]:
    """Return the files under ``paths`` that the globs select, sorted by path.

    A missing path is an error. Hidden files and folders (``.git``, ``.venv``…)
    are skipped unless ``include_hidden``. Links to folders are not followed (a
    link back up the tree would loop) and links to files outside the folder are
    not read; both go to ``skipped`` as (display path, reason).
    """
    skipped = skipped if skipped is not None else []
    found: dict[Path, SourceFile] = {}
    for raw in paths:
        root = Path(raw).expanduser()
        if not root.exists():
            raise BadInput(f"path not found: {raw}", hint="Check the spelling, or give an existing folder or file.")
        root = root.resolve()
        if root.is_file():
            st = root.stat()
            found[root] = SourceFile(root, root.name, st.st_size, st.st_mtime_ns)
            continue
        base = root.name or str(root)
        for dirpath, dirnames, filenames in os.walk(root):
            if not include_hidden:
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for d in dirnames:
                if os.path.islink(os.path.join(dirpath, d)):
                    rel = d if rel_dir == "." else f"{rel_dir}/{d}"
                    skipped.append((f"{base}/{rel}", "a link to a folder (not followed)"))
            for name in sorted(filenames):
                if not include_hidden and name.startswith("."):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if not _matches(rel, name, include) or _matches(rel, name, exclude):
                    continue
                full = Path(dirpath) / name
                try:
                    st = full.stat()
                except OSError:
                    continue  # vanished or dangling link: nothing to index
                if not full.is_file():
                    continue
                if full.is_symlink() and root not in full.resolve().parents:
                    skipped.append((f"{base}/{rel}", f"a link out of the folder (to {full.resolve()})"))
                    continue
                found[full] = SourceFile(full, f"{base}/{rel}", st.st_size, st.st_mtime_ns)
    return sorted(found.values(), key=lambda f: f.rel)


class Unreadable(Exception):
    """A file the run cannot read (permission, vanished, never still); the pipeline skips it with the reason."""

    def __init__(self, reason: str, vanished: bool = False):
        super().__init__(reason)
        self.vanished = vanished


def _may_read(st: os.stat_result) -> bool:
    """Do the file's permission bits let this user read it? Root reads anything, so for root a file that no
    one may read (no r bit at all, e.g. ``chmod 000``) counts as unreadable too: its owner meant it so."""
    uid = os.geteuid()
    if uid == 0:
        return bool(st.st_mode & 0o444)
    if st.st_uid == uid:
        return bool(st.st_mode & 0o400)
    if st.st_gid in os.getgroups() or st.st_gid == os.getegid():
        return bool(st.st_mode & 0o040)
    return bool(st.st_mode & 0o004)


def read_source(f: SourceFile, attempts: int = 3) -> bytes:
    """The bytes of ``f``, read whole while the file stood still; ``f.size``/``f.mtime_ns`` become those of
    the bytes read (a file written to while read is read again; one deleted since it was found is
    ``Unreadable(vanished=True)``)."""
    for _ in range(attempts):
        try:
            st = f.path.stat()
            if not _may_read(st):
                raise Unreadable("unreadable (no read permission)")
            data = f.path.read_bytes()
            after = f.path.stat()
        except FileNotFoundError as exc:
            raise Unreadable("deleted while the run read the folder", vanished=True) from exc
        except OSError as exc:
            raise Unreadable(f"unreadable ({exc.strerror or exc})") from exc
        if (st.st_size, st.st_mtime_ns) == (after.st_size, after.st_mtime_ns) and len(data) == after.st_size:
            f.size, f.mtime_ns = after.st_size, after.st_mtime_ns
            return data
        time.sleep(0.05)
    raise Unreadable(f"changing while read ({attempts} reads differed); indexed by a later run")


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def stable_id(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


class Undecodable(Exception):
    """Raised for binary or undecodable bytes; the pipeline skips the file."""


def decode(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise Undecodable("binary file")
    for enc in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            continue
        controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\n\r\t\f")
        if controls > 8:
            raise Undecodable("binary file")
        return text.replace("\r\n", "\n").replace("\r", "\n")
    raise Undecodable("not valid UTF-8 or Windows-1252 text")


@dataclass
class SourceDiff:
    """What changed under the indexed paths since the committed run: the files to parse (with their bytes and
    hash, and whether they replace an older version), the sources whose bytes are the same under a new mtime,
    the sources gone, and the counts of unchanged and skipped files."""

    todo: list[tuple[SourceFile, bytes, str, bool]] = field(default_factory=list)
    unchanged_sources: list[dict[str, Any]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    unchanged: int = 0
    skipped: int = 0

    def nothing_changed(self) -> bool:
        return not self.todo and not self.gone and not self.unchanged_sources

    def drop_bytes(self) -> None:
        """Forget the files' bytes once they are parsed (all of federal law: 166 MB held to the commit)."""
        self.todo = [(f, b"", h, is_changed) for f, _, h, is_changed in self.todo]


def _under(path: str, roots: list[Path]) -> bool:
    return any(path == str(r) or path.startswith(str(r) + os.sep) for r in roots)


def diff_sources(
    files: list[SourceFile],
    states: dict[str, dict[str, Any]],
    roots: list[Path],
    max_file_size_mb: float,
    warn: Callable[[str], None],
) -> SourceDiff:
    """Compare the files found with the committed sources (``states``: source path → size, mtime, hash): a
    file of the same size and mtime is unchanged without being read; a file over ``max_file_size_mb`` is
    skipped unread (what it held stays); a file that cannot be read is skipped (one that vanished counts as
    gone); a file whose hash matches is unchanged. Sources under ``roots`` that were not found are gone."""
    diff = SourceDiff()
    for f in files:
        key = str(f.path)
        diff.seen.add(key)
        old = states.get(key)
        if old and old["size"] == f.size and old["mtime_ns"] == f.mtime_ns:
            diff.unchanged += 1
            continue
        if f.size > max_file_size_mb * 1e6:  # not read at all (what it held before stays)
            warn(f"skipped {f.rel}: {f.size / 1e6:,.1f} MB is over --max-file-size {max_file_size_mb:g} MB")
            diff.skipped += 1
            continue
        try:
            data = read_source(f)
        except Unreadable as exc:
            warn(f"skipped {f.rel}: {exc}")
            diff.skipped += 1
            if exc.vanished:  # as if the run had not found it: what it held goes
                diff.seen.discard(key)
            continue
        h = content_hash(data)
        if old and old["hash"] == h:
            diff.unchanged += 1
            diff.unchanged_sources.append(source_row(f, h))
            continue
        diff.todo.append((f, data, h, old is not None))
    diff.gone = [p for p in states if p not in diff.seen and _under(p, roots)]
    return diff


def source_row(f: SourceFile, content_hash: str) -> dict[str, Any]:
    """A source's row in the store: where it is, its hash, size and mtime."""
    return {"source_path": str(f.path), "rel": f.rel, "hash": content_hash, "size": f.size, "mtime_ns": f.mtime_ns}
