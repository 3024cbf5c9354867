"""Indexes on object storage (``--index s3://bucket/prefix``, or any URI Lance and Arrow's filesystems take).

An index at a URI has the layout of a local one (ragkit/store/layout.py). The LanceDB tables live at
``<uri>/lance`` and are read and written there by LanceDB and pylance. The other files (the manifest, the
committed run's DuckDB store and graph folder) are small; a process works on them in a local mirror,
``$RAGKIT_CACHE/remote/<hash>/`` (marked by ``remote.json``), which every ragkit component already reads as an
index folder:

- a reader downloads the manifest and, once per run, the run's store and graph files (they never change: a
  run writes new ones), and looks for a newer manifest at most once a second;
- a writer takes the index's lease (one writer at a time, across machines: ragkit/store/lease.py), downloads
  the same, writes its run into the mirror as it would locally, uploads the run's store and graph files, and
  commits by uploading the manifest (one PUT, conditional on the manifest it started from), then removes the
  replaced run's objects. A reader never sees LanceDB and DuckDB from different runs: it reads the run the
  manifest names, whose files were uploaded before it.

Credentials and endpoint come from the standard variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``; an ``http://`` endpoint, e.g. a local MinIO or moto,
sets ``AWS_ALLOW_HTTP``), never the command line.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ragkit.errors import IndexBusy, IndexNotFound, RagkitError
from ragkit.names import checked_name
from ragkit.store import layout
from ragkit.store.layout import LANCE_DIR
from ragkit.store.layout import LEARNED_CURRENT as CURRENT
from ragkit.store.layout import LEARNED_DIR as LEARNED
from ragkit.store.layout import MANIFEST as NAME
from ragkit.store.lease import Conflict, FsObjects, Lease, S3Objects
from ragkit.store.mirror import MARKER


class RunFiles(Protocol):
    """What a ``Manifest`` (ragkit/store/manifest.py, which reads through this module) names of its run."""

    store: str
    graph: str


_RUN_OBJECT = re.compile(r"^(store\.\d+(?:-[0-9a-f]+)?\.duckdb|graph\.\d+(?:-[0-9a-f]+)?)$")
_checked: dict[str, float] = {}  # mirror → when the remote manifest was last looked at


def uri_of(index_dir: Path) -> str | None:
    """The URI a mirror stands for; None for a local index."""
    try:
        return json.loads((Path(index_dir) / MARKER).read_text())["uri"]
    except (OSError, ValueError, KeyError):
        return None


def name_of(index_dir: Path) -> str:
    """What a server calls the index at ``index_dir`` to anyone: its folder's name, or the last part of its URI
    (never where it lives)."""
    where = uri_of(index_dir) or str(Path(index_dir).resolve())
    return where.rstrip("/").rsplit("/", 1)[-1] or "index"


def display(index_dir: Path) -> str:
    """How to name the index at ``index_dir`` to a person: its URI for a mirror, else the folder."""
    return uri_of(index_dir) or str(index_dir)


def _endpoint() -> tuple[str | None, str | None]:
    """The S3 endpoint and region from the standard variables."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and endpoint.startswith("http://"):
        os.environ.setdefault("AWS_ALLOW_HTTP", "true")  # Lance's object store refuses plain http without it
    return endpoint or None, os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


def _filesystem(uri: str):
    import pyarrow.fs as pafs

    endpoint, region = _endpoint()
    if uri.lower().startswith("s3://"):
        return pafs.S3FileSystem(endpoint_override=endpoint, region=region), uri[len("s3://") :].rstrip("/")
    return pafs.FileSystem.from_uri(uri)


class Remote:
    """The object-store side of one mirror."""

    def __init__(self, index_dir: Path):
        self.mirror = Path(index_dir)
        uri = uri_of(self.mirror)
        if uri is None:
            raise RagkitError(f"{index_dir} is not the mirror of a remote index")
        self.uri = uri
        self.fs, self.root = _filesystem(uri)
        self._objects = None
        self.lease = None  # this writer's turn (ragkit/store/lease.py), while it writes
        self.manifest_etag: str | None = None  # of the manifest a writer started from (None: no index yet)

    @property
    def objects(self):
        """Conditional single-object reads and writes (the lease, the manifest commit)."""
        if self._objects is None:
            if self.uri.lower().startswith("s3://"):
                bucket, _, prefix = self.uri[len("s3://") :].partition("/")
                self._objects = S3Objects(bucket, prefix, *_endpoint())
            else:
                self._objects = FsObjects(self.fs, self.root)
        return self._objects

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def read(self, name: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self._path(name)) as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if "NoSuchKey" in str(exc) or "not found" in str(exc).lower():
                return None
            raise RagkitError(
                f"cannot read {self.uri}/{name}: {exc}",
                hint="Check the AWS_* variables (credentials, AWS_ENDPOINT_URL) and the URI.",
            ) from exc

    def write(self, name: str, data: bytes) -> None:
        with self.fs.open_output_stream(self._path(name)) as fh:
            fh.write(data)

    def names(self) -> list[str]:
        """The top-level names under the index URI (objects and "folders")."""
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        except OSError:
            return []
        return [i.path.rsplit("/", 1)[-1] for i in infos]

    def names_under(self, folder: str) -> list[str]:
        """The names of the objects in ``folder`` under the index URI (the feedback log's batches)."""
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self._path(folder), allow_not_found=True))
        except OSError:
            return []
        return [i.path.rsplit("/", 1)[-1] for i in infos if i.type == pafs.FileType.File]

    def bytes(self, name: str = "") -> int:
        """Bytes of the objects below ``name`` (the whole index when empty)."""
        import pyarrow.fs as pafs

        path = self._path(name) if name else self.root
        try:
            info = self.fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                return info.size
            return sum(
                i.size
                for i in self.fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
                if i.type == pafs.FileType.File
            )
        except OSError:
            return 0

    def download(self, name: str) -> None:
        """``name`` (a file or a folder of files) into the mirror, whole or not at all: written under a
        temporary name, then renamed (a folder once all its files are in)."""
        import shutil

        import pyarrow.fs as pafs

        info = self.fs.get_file_info(self._path(name))
        folder = info.type == pafs.FileType.Directory
        files = (
            [
                i.path
                for i in self.fs.get_file_info(pafs.FileSelector(self._path(name), recursive=True))
                if i.type == pafs.FileType.File
            ]
            if folder
            else [self._path(name)]
        )
        tmp = (self.mirror / name).with_name(f".{Path(name).name}.{os.getpid()}.part")
        shutil.rmtree(tmp, ignore_errors=True)
        for remote in files:
            dest = tmp / remote[len(self._path(name)) + 1 :] if folder else tmp
            dest.parent.mkdir(parents=True, exist_ok=True)
            with self.fs.open_input_stream(remote) as src, open(dest, "wb") as out:
                while chunk := src.read(1 << 22):
                    out.write(chunk)
        try:
            os.replace(tmp, self.mirror / name)
        except OSError:  # another process of this machine brought the same run's folder first
            shutil.rmtree(tmp, ignore_errors=True)

    def upload(self, name: str) -> None:
        """``name`` (a file or folder of the mirror) to the index URI."""
        local = self.mirror / name
        files = sorted(p for p in local.rglob("*") if p.is_file()) if local.is_dir() else [local]
        for path in files:
            with (
                open(path, "rb") as src,
                self.fs.open_output_stream(self._path(str(path.relative_to(self.mirror)))) as out,
            ):
                while chunk := src.read(1 << 22):
                    out.write(chunk)

    def delete(self, names: list[str]) -> None:
        import pyarrow.fs as pafs

        for name in names:
            try:
                if self.fs.get_file_info(self._path(name)).type == pafs.FileType.Directory:
                    self.fs.delete_dir(self._path(name))
                else:
                    self.fs.delete_file(self._path(name))
            except OSError:
                pass  # gone already

    # ------------------------------------------------------------------ what readers and writers call

    def pull(self, writing: bool = False) -> dict[str, Any] | None:
        """The committed manifest into the mirror and the files of its run (those not there yet); the manifest,
        or None when the URI holds no index. ``writing``: also keep the manifest's ETag, which the commit
        must still find (``commit_manifest``)."""
        if writing:
            stat = self.objects.get(NAME)
            data, self.manifest_etag = (stat.data, stat.etag) if stat else (None, None)
        else:
            data = self.read(NAME)
        _checked[str(self.mirror)] = time.monotonic()
        if data is None:
            (self.mirror / NAME).unlink(missing_ok=True)
            return None
        try:
            manifest = json.loads(data)
        except ValueError:  # the mirror gets it as it is: reading it says it is corrupt
            manifest = {}
        if not isinstance(manifest, dict):
            manifest = {}
        for key in ("store", "graph"):
            name = manifest.get(key)
            if name and not (self.mirror / checked_name(key, name, f"{self.uri}/{NAME}")).exists():
                self.download(name)
        self.pull_learned()
        if (self.mirror / NAME).is_file() and (self.mirror / NAME).read_bytes() == data:
            return manifest
        tmp = self.mirror / f".{NAME}.{os.getpid()}.part"
        tmp.write_bytes(data)
        os.replace(tmp, self.mirror / NAME)
        return manifest

    def pull_learned(self) -> None:
        """The models ``ragkit learn`` adopted (on any machine): ``learned/current.json`` and the files it names
        that the mirror lacks (each name checked), the list last, so a reader never finds a name without its
        file."""
        data = self.read(f"{LEARNED}/{CURRENT}")
        local = self.mirror / LEARNED / CURRENT
        if data is None or (local.is_file() and local.read_bytes() == data):
            return
        try:
            names = json.loads(data).get("scopes", {}).values()
            for name in names:
                name = checked_name("ranker", name, f"{self.uri}/{LEARNED}/{CURRENT}")
                if not (self.mirror / LEARNED / name).is_file():
                    (self.mirror / LEARNED).mkdir(parents=True, exist_ok=True)
                    self.download(f"{LEARNED}/{name}")
        except (ValueError, AttributeError):
            return  # not a list of ragkit's: the mirror keeps what it had
        tmp = local.with_name(f".{CURRENT}.{os.getpid()}.part")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, local)

    def push_learned(self) -> None:
        """The mirror's adopted models up to the URI: the files ``learned/current.json`` names, then the list."""
        local = self.mirror / LEARNED / CURRENT
        if not local.is_file():
            return
        current = json.loads(local.read_text())
        have = set(self.names_under(LEARNED))
        for name in current.get("scopes", {}).values():
            if name not in have:
                self.upload(f"{LEARNED}/{checked_name('ranker', name)}")
        self.upload(f"{LEARNED}/{CURRENT}")

    def guard(self) -> None:
        """Before a write: ``IndexBusy`` unless this writer still holds the index's lease."""
        if self.lease is not None:
            self.lease.confirm()

    def commit_manifest(self, data: bytes) -> None:
        """The commit: upload the manifest only if the one this writer started from is still there (a first
        run: only if there is none); else ``IndexBusy`` and nothing is committed."""
        self.guard()
        try:
            if self.manifest_etag is None:
                self.manifest_etag = self.objects.put(NAME, data, if_absent=True)
            else:
                self.manifest_etag = self.objects.put(NAME, data, if_match=self.manifest_etag)
        except Conflict:
            raise IndexBusy(
                f"{self.uri}: another writer committed a run while this one worked; this run is not committed",
                hint="Run ragkit index again: it starts from the newest run.",
            ) from None

    def push_run(self, manifest: RunFiles) -> None:
        """Upload the run's store and graph folder (before its manifest: a reader reads only what is there)."""
        for name in (manifest.store, manifest.graph):
            self.upload(name)

    def leftovers(self, manifest: RunFiles | None) -> list[str]:
        """Run objects the manifest does not name (a replaced run's, or an unfinished run's)."""
        keep = set() if manifest is None else {manifest.store, manifest.graph}
        return sorted(n for n in self.names() if _RUN_OBJECT.match(n) and n not in keep)

    def remove_leftovers(self, manifest: RunFiles | None) -> None:
        self.delete(self.leftovers(manifest))


@contextmanager
def writing(
    index_dir: Path, wait: bool = False, on_wait: Callable[[str], None] | None = None
) -> Iterator[Remote | None]:
    """One writer at a time: the flock on the index folder (the mirror, for a remote index) and, for an index
    on object storage, its lease; a remote index's committed files are pulled into the mirror. Yields the
    ``Remote`` the writer commits through (None for a local index)."""
    with layout.write_lock(index_dir, wait, on_wait):
        if uri_of(index_dir) is None:
            yield None
            return
        bucket = Remote(index_dir)
        bucket.lease = Lease(bucket.objects, bucket.uri)
        bucket.lease.acquire(wait, on_wait)
        try:
            bucket.pull(writing=True)
            yield bucket
        finally:
            bucket.lease.release()


def pull(index_dir: Path, required: bool = True) -> None:
    """For a mirror: bring the committed manifest and run files from the URI (``IndexNotFound`` when there is
    no index there and ``required``); a local index: nothing."""
    if uri_of(index_dir) is None:
        return
    remote = Remote(index_dir)
    if remote.pull() is None and required:
        raise IndexNotFound(f"no index at {remote.uri}")


def refresh(index_dir: Path, max_age: float = 1.0) -> None:
    """For a mirror: look for a newer committed manifest, at most once per ``max_age`` seconds."""
    if uri_of(index_dir) is None or time.monotonic() - _checked.get(str(index_dir), -1e9) < max_age:
        return
    Remote(index_dir).pull()


def lance_location(index_dir: Path) -> Path | str:
    """Where the LanceDB tables of the index at ``index_dir`` live: ``<uri>/lance`` for a mirror."""
    uri = uri_of(index_dir)
    return f"{uri}/{LANCE_DIR}" if uri else Path(index_dir) / LANCE_DIR


def push_learned(index_dir: Path) -> None:
    """For a mirror: what ``ragkit learn`` adopted (or reset) here, up to the URI for every reader; else nothing."""
    if uri_of(index_dir) is not None:
        Remote(index_dir).push_learned()
