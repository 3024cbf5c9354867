"""Parallel readers for ``ragkit serve``: ``--workers N`` processes, each with its own IndexReader, caches,
DuckDB connections and one compute thread, answering the operations of ragkit/serve/ops.py.

The server's asyncio loop never computes: a request waits for an idle worker (first come, first served; of the
idle workers, the one that answered last, its caches warm), sends it ``("run", id, operation, arguments, caller)``
over the worker's pipe and awaits its reply in a thread, so the loop keeps accepting, authenticating and answering
health checks while every worker is busy. The index is
read-only and shared through the files; each worker reopens its reader between requests when a newer run has
been committed, so a run committed while serving is picked up without a request failing.

A client that hangs up while its answer is being written: the server sends ``("cancel", id)``; the worker looks
at its pipe at every token the model writes and stops there (logged with the token count). A worker that dies
is started again; the request it was answering gets a 500 error.

Processes are spawned (no fork of a process with threads), with OpenMP/BLAS at one thread each.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragkit.errors import Cancelled, RagkitError
from ragkit.serve import ops
from ragkit.serve.access import Caller
from ragkit.serve.client import rebuild_error

log = logging.getLogger("ragkit.serve")
SPAWN = multiprocessing.get_context("spawn")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
DISCONNECT_POLL = 0.25  # seconds between looks at whether the client of a running request is still there
STOP_WAIT = 10.0  # seconds a worker has to stop before it is killed


class Worker:
    """One worker process and the server's end of its pipe."""

    def __init__(self, number: int, index: str | None):
        self.number = number
        self.conn, child = SPAWN.Pipe()
        env = {k: os.environ.get(k) for k in ONE_THREAD}
        os.environ.update({k: os.environ.get(k) or v for k, v in ONE_THREAD.items()})
        try:
            self.process = SPAWN.Process(target=main, args=(index, child, number), name=f"ragkit-worker-{number}")
            self.process.daemon = True
            self.process.start()
        finally:
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
        child.close()
        self.lock = threading.Lock()  # the server's sends to this worker (requests and cancels)
        self.lost = False  # its process ended (another takes its place)

    def ready(self) -> None:
        """Wait until the worker has opened and warmed its reader; its error if it could not."""
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            raise RagkitError(f"worker {self.number} stopped while starting (see the log above)") from None
        if kind != "ready":
            raise rebuild_error(payload)

    def send(self, message: Any) -> None:
        with self.lock:
            self.conn.send(message)

    def stop(self) -> None:
        try:
            self.send(None)
        except OSError:
            pass
        self.process.join(STOP_WAIT)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_WAIT)


class WorkerPool:
    """The worker processes of one server (see the module)."""

    def __init__(self, index: str | None, workers: int = 2):
        if workers < 1:
            raise RagkitError("--workers must be at least 1")
        self.index, self.size = index, workers
        self.workers: list[Worker] = []
        self._idle: asyncio.LifoQueue[Worker] | None = None
        self._threads = ThreadPoolExecutor(max_workers=workers + 1, thread_name_prefix="ragkit-pipe")
        self._ids = itertools.count(1)
        self.closing = False

    def start(self) -> None:
        """Start every worker and wait until each is ready (they start side by side)."""
        self.workers = [Worker(n, self.index) for n in range(1, self.size + 1)]
        try:
            for w in self.workers:
                w.ready()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.closing = True
        for w in self.workers:
            w.stop()
        self._threads.shutdown(wait=False, cancel_futures=True)

    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers if w.process.pid]

    def _queue(self) -> asyncio.LifoQueue[Worker]:
        if self._idle is None:  # made in the server's loop
            self._idle = asyncio.LifoQueue()  # the worker that answered last: its caches are warm
            for w in self.workers:
                self._add(w, asyncio.get_running_loop())
        return self._idle

    def _add(self, worker: Worker, loop: asyncio.AbstractEventLoop) -> None:
        """An idle worker, watched: the loop hears at once when its process ends (idle or not)."""
        loop.add_reader(worker.process.sentinel, self._ended, worker, loop)
        self._queue().put_nowait(worker)

    def _ended(self, worker: Worker, loop: asyncio.AbstractEventLoop) -> None:
        loop.remove_reader(worker.process.sentinel)
        self._lost(worker, loop)

    async def run(self, op: str, args: dict[str, Any], caller: Caller, disconnected=None, on_text=None) -> Any:
        """The operation's result from the next idle worker; its error as the ragkit error it was.
        ``disconnected()``: awaitable, true once the client has gone (the worker is told to stop); ``on_text``
        receives the answer's text as the model writes it. Cancelling the call stops the worker's answer too.
        A request whose worker dies goes to the next one (once, if it died answering: the request may be why)."""
        retried = False
        while True:
            worker = await self._queue().get()
            if worker.lost:  # (ended while idle: another is starting)
                continue
            rid = next(self._ids)
            message = ("run", rid, op, {**args, "stream": on_text is not None}, caller)
            job = asyncio.ensure_future(self._exchange(worker, rid, message, on_text))
            watch = asyncio.ensure_future(self._watch(worker, rid, disconnected)) if disconnected else None
            try:
                kind, payload = await asyncio.shield(job)
            except asyncio.CancelledError:
                self._cancel(worker, rid)
                raise
            finally:
                if watch is not None:
                    watch.cancel()
            if kind == "done":
                return payload
            if kind == "died" and not retried:
                retried = True
            elif kind != "lost":
                raise rebuild_error(payload)

    async def _exchange(self, worker: Worker, rid: int, message: tuple, on_text=None) -> tuple[str, Any]:
        """Send one request and read the worker's replies until its own; the worker goes back to the idle
        queue only then. A worker that died is replaced: ``("lost", None)`` when it died before it got the
        request, ``("died", error)`` when it died answering."""
        loop = asyncio.get_running_loop()
        try:
            worker.send(message)
        except OSError:
            self._lost(worker, loop)
            return "lost", None
        try:
            while True:
                reply = await loop.run_in_executor(self._threads, worker.conn.recv)
                if reply[0] == "text":
                    if on_text is not None and reply[1] == rid:
                        on_text(reply[2])
                elif reply[1] == rid:
                    if not worker.lost:
                        self._queue().put_nowait(worker)
                    return reply[0], reply[2]
        except (EOFError, OSError):
            self._lost(worker, loop)
            return "died", {"code": 1, "type": "RagkitError", "message": "the worker answering stopped; ask again"}

    def _lost(self, worker: Worker, loop: asyncio.AbstractEventLoop) -> None:
        if worker.lost or self.closing:
            return
        worker.lost = True
        log.error("worker %d stopped; starting another", worker.number)
        loop.run_in_executor(None, self._replace, worker, loop)

    def _replace(self, dead: Worker, loop: asyncio.AbstractEventLoop) -> None:
        try:
            dead.process.join(1)
            fresh = Worker(dead.number, self.index)
            fresh.ready()
        except RagkitError as exc:
            log.error("worker %d could not start again: %s", dead.number, exc.message)
            return
        self.workers[self.workers.index(dead)] = fresh
        loop.call_soon_threadsafe(self._add, fresh, loop)

    async def _watch(self, worker: Worker, rid: int, disconnected) -> None:
        while True:
            await asyncio.sleep(DISCONNECT_POLL)
            if await disconnected():
                self._cancel(worker, rid)
                return

    @staticmethod
    def _cancel(worker: Worker, rid: int) -> None:
        try:
            worker.send(("cancel", rid))
        except OSError:
            pass


def main(index: str | None, conn, number: int) -> None:
    """A worker process: open and warm the index, then answer requests until told to stop (or the server is
    gone: its pipe closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the server stops us
    logging.basicConfig(level=logging.WARNING, format=f"ragkit serve worker {number}: %(message)s")
    log.setLevel(logging.INFO)
    try:
        state = ops.State(index)
        state.warm()
    except RagkitError as exc:
        conn.send(("failed", ops.error_fields(exc)))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if message is None:
            return
        if message[0] == "run":
            conn.send(reply(state, conn, *message[1:]))


def reply(state: ops.State, conn, rid: int, op: str, args: dict[str, Any], caller: Caller) -> tuple:
    """One request's reply: ``("done", id, result)`` or ``("error", id, error fields)``."""
    written = [0]

    def on_text(piece: str) -> None:  # every piece the model writes: has the client hung up?
        written[0] += 1
        if args.get("stream"):
            conn.send(("text", rid, piece))
        while conn.poll():
            message = conn.recv()
            if message is None:  # the server stops
                raise SystemExit(0)
            if message[0] == "cancel" and message[1] == rid:
                raise Cancelled(f"the client hung up: the answer stopped after {written[0] - 1} tokens")

    try:
        result = ops.run(state, op, args, caller, on_text)
    except RagkitError as exc:
        return "error", rid, ops.error_fields(exc)
    except Exception as exc:  # a bug: the request fails, the worker goes on
        log.exception("%s failed", op)
        return "error", rid, {"code": 1, "type": "RagkitError", "message": f"{op} failed: {type(exc).__name__}"}
    failed = result.get("answer_error") if isinstance(result, dict) else None
    if failed and failed.get("type") == "Cancelled":
        log.info("request %d: %s", rid, failed["message"])
    return "done", rid, result
