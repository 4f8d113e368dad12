"""Per-SM work spread over the machine's cores: the SMs split into chunks, one child process each.

Allocation, the dependency bits, the encoding and the rerolling each work on
one SM at a time, and an SM's result depends on no other SM's. So
:func:`run_in_children` runs a job on contiguous chunks of SMs, each in a
child made with ``fork``: the child sees the graph as it is (copy on write),
does its chunk and sends back, pickled, only the job's result (encoded
words, a few integers). This process is left as it was, and puts the
results together in SM order: the same bytes a single process gives.

Where anything goes wrong in a child (a located error of a stage, a
crash, an answer that cannot be read), nothing is reported from the child:
:func:`run_in_children` answers None and the caller does the whole work
itself, in this process, as it would without children, so an error keeps
its message, its location and its order (the lowest SM first).

The work is split only for a graph of at least :data:`MIN_SPLIT_NODES`
micro-ops (below it, starting processes costs about what they save), only
where ``os.fork`` exists and only while this process runs no other Python
thread (the child of a threaded process could find a lock held forever; the
native threads of a CUDA driver or a thread pool hold none the child needs:
it runs only vdir's Python and numpy code and leaves with ``os._exit``).
Where a process cannot be forked, the caller does the work. How many
processes: :func:`jobs_in_effect` (``VDIR_JOBS`` in the environment, by
default the CPUs this process may run on, at most :data:`MAX_DEFAULT_JOBS`).
"""

from __future__ import annotations

import os
import pickle
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from vdir.diagnostics import UserError

#: the fewest micro-ops for which work is split over processes
MIN_SPLIT_NODES = 50_000
#: the most processes used where ``VDIR_JOBS`` does not say: each child copies the pages of the graph it
#: writes to, so memory grows with their number
MAX_DEFAULT_JOBS = 4
#: the environment variable that sets the number of processes (1: everything in this process)
JOBS_VARIABLE = "VDIR_JOBS"

Item = TypeVar("Item")
Result = TypeVar("Result")


def jobs_in_effect() -> int:
    """The processes work may be split over: ``VDIR_JOBS`` if set (a positive integer), else the CPUs
    this process may run on, at most :data:`MAX_DEFAULT_JOBS`."""
    text = os.environ.get(JOBS_VARIABLE, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise UserError(f"{JOBS_VARIABLE} must be a positive integer, got '{text}'")
        return int(text)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, MAX_DEFAULT_JOBS))


def can_fork() -> bool:
    """Whether a child process may be forked here: ``os.fork`` exists and no other thread runs."""
    return hasattr(os, "fork") and threading.active_count() == 1


def run_in_children(items: Sequence[Item], job: Callable[[list[Item]], Result], weight: Callable[[Item], int],
                    total_weight: int) -> list[Result] | None:
    """``job`` on ``items`` split into chunks of about equal ``weight``, each chunk in a forked child;
    the chunks' results, in order. None where the work is not split (fewer than
    :data:`MIN_SPLIT_NODES` micro-ops in ``total_weight``, one job, fewer than two items, no fork)
    or a child did not answer: the caller then runs ``job`` itself (see the module).

    This process only waits meanwhile: work of its own on the graph would write to pages the
    children share with it (its reference counts), and the copies on write of both sides
    contend (measured: the children's system time doubles).
    """
    jobs = jobs_in_effect()  # read whatever the size, so that a bad value is refused alike
    if total_weight < MIN_SPLIT_NODES:
        jobs = 1
    if jobs < 2 or len(items) < 2 or not can_fork():
        return None
    children = _start_children(_split(list(items), weight, jobs), job)
    if children is None:
        return None
    try:
        results = [child.collect() for child in children]
    finally:
        for child in children:
            child.stop()
    return None if any(r is _FAILED for r in results) else cast("list[Result]", results)


def _start_children(chunks: list[list[Item]], job: Callable[[list[Item]], Result]) -> list[_Child] | None:
    """A child for each chunk, or None (none left running) where one cannot be made (``fork`` failed)."""
    children: list[_Child] = []
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns of a fork in a process with native threads (a CUDA driver's, a
            # thread pool's): the child only runs vdir's own Python and numpy code and leaves
            # with os._exit, needing no lock another thread may hold
            warnings.simplefilter("ignore", DeprecationWarning)
            for chunk in chunks:
                children.append(_Child.start(chunk, job))
    except Exception:  # no process to be had (memory, a limit): the caller does the work
        for child in children:
            child.stop()
        return None
    return children


def _split(items: list[Item], weight: Callable[[Item], int], jobs: int) -> list[list[Item]]:
    """``items`` in at most ``jobs`` contiguous non-empty chunks of about equal total ``weight``."""
    weights = [weight(i) for i in items]
    share = max(1, sum(weights)) / jobs
    chunks: list[list[Item]] = [[]]
    done = 0
    for item, w in zip(items, weights, strict=True):
        if chunks[-1] and done >= share * len(chunks) and len(chunks) < jobs:
            chunks.append([])
        chunks[-1].append(item)
        done += w
    return chunks


#: what :meth:`_Child.collect` gives for a child without an answer
_FAILED = object()
#: the first byte of a child's answer: its pickled result follows
_DONE = b"1"


@dataclass
class _Child:
    """A forked process running a job on one chunk; its answer comes through a pipe."""

    pid: int
    pipe: int

    @classmethod
    def start(cls, chunk: list, job: Callable) -> _Child:
        """Fork a child that runs ``job`` on ``chunk`` and writes the pickled result to a pipe."""
        read, write = os.pipe()
        try:
            pid = os.fork()
        except BaseException:
            os.close(read)
            os.close(write)
            raise
        if pid == 0:  # the child: never returns
            os.close(read)
            _answer(write, chunk, job)
        os.close(write)
        return cls(pid, read)

    def collect(self) -> object:
        """The child's result, or :data:`_FAILED` where it has none."""
        with os.fdopen(self.pipe, "rb") as stream:
            self.pipe = -1
            data = stream.read()
        self._reap()
        if not data.startswith(_DONE):
            return _FAILED
        try:
            return pickle.loads(data[len(_DONE):])
        except Exception:  # an answer cut short: as if none came
            return _FAILED

    def stop(self) -> None:
        """End the child if it still runs (this process stopped early) and reap it."""
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1
        if self.pid:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> None:
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0


def _answer(write: int, chunk: list, job: Callable) -> None:
    """In the child: run ``job`` on ``chunk``, write ``_DONE`` and the pickled result (nothing on any
    failure), and leave at once, without the cleanup of the parent's state that it holds a copy of."""
    status = 1
    try:
        data = _DONE + pickle.dumps(job(chunk), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as stream:
            stream.write(data)
        status = 0
    except BaseException:  # noqa: BLE001 - whatever failed, the parent does the work itself
        pass
    finally:
        os._exit(status)
