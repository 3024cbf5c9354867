"""Writers of an index on object storage: one at a time (a lease), and a commit that is a compare-and-swap.

Runs on several machines may write one ``s3://`` index. A run first takes the lease, the object
``writer.lease``, written only if absent (S3's ``If-None-Match: *``) or, to take over from a holder that stopped
renewing it, only if unchanged since read (``If-Match: <ETag>``). The holder renews it every ``RENEW`` seconds
from a thread and deletes it at the end. Another writer waits for it (or raises ``IndexBusy`` naming the
holder), as runs on one machine wait for the flock. A holder is gone when its lease is older than ``TTL`` on
the store's own clock (``Last-Modified`` against the response's ``Date``: no trust in the machines' clocks),
or at once when it ran on this host and its process has ended (a killed run).

Before each LanceDB write and before the commit, the run checks that the lease is still its own
(``Lease.confirm``): a run that stalled past ``TTL`` and lost it stops before touching what the new holder
writes. The commit is the manifest upload with ``If-Match`` set to the ETag of the manifest the run started
from (``If-None-Match: *`` for the first run), so a run commits only on top of the run it read: if the
manifest was replaced meanwhile the upload fails and nothing is committed.

S3 does both atomically (as do stores with its conditional writes: MinIO, Cloudflare R2; moto in the tests).
Other URIs (``gs://``, ``az://``, … through Arrow's file systems) get the same steps as a read, a compare and a
write (``FsObjects``): a writer still waits for a live lease, but two runs that start within the same second
may both go on.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ragkit.errors import IndexBusy, RagkitError
from ragkit.extras import missing

NAME = "writer.lease"
TTL = 120.0  # seconds without renewal after which a lease is free
RENEW = 10.0  # seconds between renewals
POLL = 2.0  # seconds between looks at a held lease, while waiting
MARGIN = 10.0  # a lease renewed less than TTL - MARGIN seconds ago (timed from the request) is surely still held


class Conflict(Exception):
    """A conditional write found the object not as expected."""


@dataclass
class Stat:
    data: bytes
    etag: str
    age: float  # seconds since the object was written, on the store's clock


class Objects(Protocol):
    def get(self, name: str) -> Stat | None: ...

    def put(self, name: str, data: bytes, *, if_match: str | None = None, if_absent: bool = False) -> str: ...

    def delete(self, name: str) -> None: ...


class S3Objects:
    """Conditional reads and writes of single objects through boto3 (Arrow's S3 file system has none)."""

    def __init__(self, bucket: str, prefix: str, endpoint: str | None, region: str | None):
        try:
            import boto3
        except ImportError as exc:
            raise missing("s3", "writing an index on S3") from exc
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name=region)
        self.bucket, self.prefix = bucket, prefix.strip("/")

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def _fail(self, exc: Exception, name: str) -> None:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
            raise Conflict(name) from exc
        raise RagkitError(
            f"s3://{self.bucket}/{self._key(name)}: {exc}",
            hint="Check the AWS_* variables (credentials, AWS_ENDPOINT_URL) and the URI.",
        ) from exc

    def get(self, name: str) -> Stat | None:
        from botocore.exceptions import ClientError

        try:
            r = self.client.get_object(Bucket=self.bucket, Key=self._key(name))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            self._fail(exc, name)
        data = r["Body"].read()
        now = email.utils.parsedate_to_datetime(r["ResponseMetadata"]["HTTPHeaders"]["date"])
        return Stat(data, r["ETag"], (now - r["LastModified"]).total_seconds())

    def put(self, name: str, data: bytes, *, if_match: str | None = None, if_absent: bool = False) -> str:
        from botocore.exceptions import ClientError

        extra = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"} if if_absent else {}
        try:
            return self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data, **extra)["ETag"]
        except ClientError as exc:
            self._fail(exc, name)
            raise  # (not reached)

    def delete(self, name: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(name))


class FsObjects:
    """The same through an Arrow file system: read, compare, write (not atomic; see the module's text)."""

    def __init__(self, fs, root: str):
        self.fs, self.root = fs, root

    def get(self, name: str) -> Stat | None:
        path = f"{self.root}/{name}"
        try:
            with self.fs.open_input_stream(path) as fh:
                data = fh.read()
            mtime = self.fs.get_file_info(path).mtime
        except (FileNotFoundError, OSError):
            return None
        age = time.time() - mtime.timestamp() if mtime else 0.0
        return Stat(data, hashlib.sha256(data).hexdigest(), age)

    def put(self, name: str, data: bytes, *, if_match: str | None = None, if_absent: bool = False) -> str:
        if if_match or if_absent:
            now = self.get(name)
            if (if_absent and now is not None) or (if_match and (now is None or now.etag != if_match)):
                raise Conflict(name)
        with self.fs.open_output_stream(f"{self.root}/{name}") as fh:
            fh.write(data)
        return hashlib.sha256(data).hexdigest()

    def delete(self, name: str) -> None:
        try:
            self.fs.delete_file(f"{self.root}/{name}")
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lease:
    """This run's turn at writing the index at ``uri`` (see the module's text)."""

    def __init__(self, objects: Objects, uri: str):
        self.objects, self.uri = objects, uri
        self.token = os.urandom(8).hex()
        self.body = json.dumps(
            {"token": self.token, "host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
        ).encode()
        self.etag: str | None = None
        self.renewed = -1e18  # time.monotonic() when the request of the last successful write was sent
        self.lost: str | None = None  # why this run no longer holds it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _free(self, now: Stat) -> bool:
        """Whether the holder of ``now`` is gone."""
        holder = self.holder(now)
        if now.age > TTL or not holder:
            return True
        return holder.get("host") == socket.gethostname() and not _alive(int(holder.get("pid", 0)))

    @staticmethod
    def holder(now: Stat) -> dict:
        try:
            return json.loads(now.data)
        except ValueError:
            return {}

    @staticmethod
    def describe(now: Stat) -> str:
        holder = Lease.holder(now)
        return f"pid {holder.get('pid')} on {holder.get('host')}, renewed {now.age:.0f} s ago"

    def acquire(self, wait: bool, on_wait: Callable[[str], None] | None = None) -> None:
        told = False
        while True:
            now = self.objects.get(NAME)
            sent = time.monotonic()
            try:
                if now is None:
                    self.etag = self.objects.put(NAME, self.body, if_absent=True)
                elif self._free(now):
                    self.etag = self.objects.put(NAME, self.body, if_match=now.etag)
                else:
                    if not wait:
                        raise IndexBusy(f"{self.uri} is being indexed by another writer ({self.describe(now)})")
                    if on_wait and not told:
                        on_wait(
                            f"{self.uri} is being indexed by another writer ({self.describe(now)}); waiting "
                            f"for it to finish (Ctrl-C stops)"
                        )
                        told = True
                    time.sleep(POLL)
                    continue
            except Conflict:  # another writer took it between the read and the write
                continue
            self.renewed = sent
            break
        self._thread = threading.Thread(target=self._renew, name="ragkit-lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(RENEW):
            sent = time.monotonic()
            try:
                self.etag = self.objects.put(NAME, self.body, if_match=self.etag)
                self.renewed = sent
            except Conflict:
                self.lost = "another writer took over its lease"
                return
            except Exception:  # a passing network fault: the next renewal tries again; confirm() decides
                continue

    def confirm(self) -> None:
        """``IndexBusy`` unless this run still holds the lease. Renewed less than ``TTL - MARGIN`` seconds
        before (timed from when the renewal was sent, which is before the store wrote it, so never less than the
        age the store sees) nobody can have taken it over; otherwise the store is asked."""
        if self.lost is None and time.monotonic() - self.renewed < TTL - MARGIN:
            return
        now = self.objects.get(NAME)
        if self.lost is None and (now is None or self.holder(now).get("token") != self.token):
            self.lost = "another writer took over its lease" + ("" if now else " (and has given it back)")
        if self.lost is None and now.age > TTL:
            self.lost = f"its lease was not renewed for {now.age:.0f} s"
        if self.lost:
            raise IndexBusy(
                f"{self.uri}: this run stopped, {self.lost}; nothing of it is committed",
                hint="Run ragkit index again: it starts from the newest committed run.",
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.lost is None:
            now = self.objects.get(NAME)
            if now is not None and self.holder(now).get("token") == self.token:
                self.objects.delete(NAME)
