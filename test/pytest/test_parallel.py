"""Per-SM work split over child processes (``vdir.analysis.parallel``) gives what one process gives.

The pipeline splits allocation, the dependency bits, the encoding and the
rerolling over forked children for large graphs; here the split is forced
on small programs (``MIN_SPLIT_NODES`` 0) and the encodings compared byte
for byte with a single process's, on each path the pipeline takes: rings,
liveness left to the per-SM stages, the layer loop's trips kept alike. A
child that fails leaves the work to this process, so an error is the one a
single process reports, the lowest SM's first.
"""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np
import pytest
from test_alloc_liveness import _phased_program  # a program the liveness allocator needs

from vdir import isa
from vdir.analysis import parallel
from vdir.diagnostics import PassFailure, UserError
from vdir.frontend.examples import build_mlp_stack
from vdir.frontend.llama import LlamaConfig, build_decode_step
from vdir.transforms import pipeline
from vdir.transforms.pipeline import compile_to_encoded


@pytest.fixture
def split(monkeypatch):
    """Split every graph, however small, over ``VDIR_JOBS`` processes (set by the test)."""
    monkeypatch.setattr(parallel, "MIN_SPLIT_NODES", 0)
    return lambda jobs: monkeypatch.setenv(parallel.JOBS_VARIABLE, str(jobs))


def _same(a: isa.EncodedProgram, b: isa.EncodedProgram) -> None:
    assert np.array_equal(a.instrs, b.instrs)
    assert (a.queues, a.smem_bytes, a.num_counters, a.uop_names) == (b.queues, b.smem_bytes, b.num_counters,
                                                                      b.uop_names)


TINY = LlamaConfig(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512, vocab=512,
                   max_context=64)


@pytest.mark.parametrize("case", ["liveness", "rings", "trips kept", "decode step"])
@pytest.mark.parametrize("jobs", [2, 3])
def test_a_split_compile_gives_the_bytes_of_one_process(case, jobs, split, monkeypatch):
    build, options = {
        "liveness": (lambda: _phased_program()[0], {"num_sms": 3}),
        "rings": (lambda: build_mlp_stack(4, 256, 1024), {"num_sms": 6}),
        "trips kept": (lambda: build_mlp_stack(4, 256, 1024), {"num_sms": 4, "keep_trips": True,
                                                              "stamp_trips": False}),
        "decode step": (lambda: build_decode_step(TINY), {"num_sms": 8}),
    }[case]
    deferred = []
    real = pipeline.schedule_for_allocation
    monkeypatch.setattr(pipeline, "schedule_for_allocation", lambda *a: deferred.append(r := real(*a)) or r)
    split(1)
    alone = compile_to_encoded(build(), **options)
    split(jobs)
    forked = []
    real_start = parallel._Child.start
    monkeypatch.setattr(parallel._Child, "start", lambda chunk, job: forked.append(chunk) or real_start(chunk, job))
    _same(alone, compile_to_encoded(build(), **options))
    assert forked, "nothing was split: the test compares one process with itself"
    assert deferred[0][1] == (case == "liveness"), "the case does not take the pipeline path it names"


def test_an_error_in_a_child_is_the_one_a_single_process_reports(split, monkeypatch):
    refused = {2, 5}
    real = pipeline.assign_bits

    def assign_bits(graph, sm, clocks):
        if sm in refused:
            raise PassFailure(f"SM {sm} refused", loc="here:1:1")
        real(graph, sm, clocks)

    monkeypatch.setattr(pipeline, "assign_bits", assign_bits)
    messages = []
    for jobs in (1, 3):
        split(jobs)
        with pytest.raises(PassFailure) as e:
            compile_to_encoded(build_mlp_stack(4, 256, 1024), num_sms=6)
        messages.append((str(e.value), e.value.loc))
    assert messages[0] == messages[1] == ("SM 2 refused", "here:1:1")


def _sum_chunk(chunk: list[int]) -> int:
    return sum(chunk)


def test_children_answer_in_chunk_order(split):
    split(3)
    parts = parallel.run_in_children(list(range(10)), _sum_chunk, lambda i: 1, 10)
    assert parts is not None and len(parts) == 3 and sum(parts) == 45


@pytest.mark.parametrize("failure", ["raises", "exits"])
def test_a_child_without_an_answer_leaves_the_work_to_the_caller(failure, split):
    split(2)

    def job(chunk: list[int]) -> int:
        if 9 in chunk:
            if failure == "exits":
                os._exit(3)
            raise ValueError("no")
        return sum(chunk)

    assert parallel.run_in_children(list(range(10)), job, lambda i: 1, 10) is None


def test_small_graphs_and_threaded_processes_are_not_split(monkeypatch):
    monkeypatch.setenv(parallel.JOBS_VARIABLE, "2")
    assert parallel.run_in_children([1, 2], _sum_chunk, lambda i: 1, parallel.MIN_SPLIT_NODES - 1) is None
    monkeypatch.setattr(parallel, "MIN_SPLIT_NODES", 0)
    assert parallel.run_in_children([1, 2], _sum_chunk, lambda i: 1, 2) == [1, 2]
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert parallel.run_in_children([1, 2], _sum_chunk, lambda i: 1, 2) is None
    finally:
        stop.set()
        other.join()


def test_a_failed_fork_leaves_the_work_to_the_caller(split, monkeypatch):
    split(3)
    real_fork, forks = os.fork, []

    def fork():  # the first child starts, the second cannot
        if forks:
            raise OSError("no memory")
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    assert parallel.run_in_children(list(range(9)), _sum_chunk, lambda i: 1, 9) is None


def test_the_warning_of_a_fork_beside_native_threads_is_not_an_error(split, monkeypatch):
    split(2)
    real_fork = os.fork

    def fork():  # what Python 3.12 does in a process with native threads
        warnings.warn("This process is multi-threaded, use of fork() may lead to deadlocks", DeprecationWarning,
                      stacklevel=2)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parallel.run_in_children([1, 2], _sum_chunk, lambda i: 1, 2) == [1, 2]


def test_chunks_are_contiguous_and_balanced_by_weight():
    chunks = parallel._split(list(range(8)), lambda i: 10 if i == 0 else 1, 2)
    assert chunks == [[0], [1, 2, 3, 4, 5, 6, 7]]
    assert parallel._split([1, 2, 3], lambda i: 1, 5) == [[1], [2], [3]]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_bad_job_count_is_refused(value, monkeypatch):
    monkeypatch.setenv(parallel.JOBS_VARIABLE, value)
    with pytest.raises(UserError, match=f"VDIR_JOBS must be a positive integer, got '{value}'"):
        parallel.jobs_in_effect()


def test_the_default_job_count_is_bounded(monkeypatch):
    monkeypatch.delenv(parallel.JOBS_VARIABLE, raising=False)
    assert 1 <= parallel.jobs_in_effect() <= parallel.MAX_DEFAULT_JOBS
