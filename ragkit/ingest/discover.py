"""Walk the given paths, apply include/exclude globs, read and hash files."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

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
