"""Launch traces, one model for every backend: micro-op slices to Chrome/Perfetto JSON.

A :class:`Trace` holds one :class:`TraceEvent` per executed micro-op: its SM,
engine, micro-op id, queue position, and its start and duration in µs. The
simulator records them in the logical time of its cost model
(:class:`vdir.device_runtime.sim.SimTrace`); the CUDA backend decodes them
from the ``%globaltimer`` stamps that a kernel lowered with the ``trace``
option writes (:meth:`Trace.from_stamps`), relative to the earliest stamp.

:meth:`Trace.wait_chain` walks back from the last micro-op through what each
one waited for (its queue, or a hand-off from elsewhere): the critical path
``bench/trace_decode.py --path`` prints. :meth:`Trace.counter_handoffs` pairs
each wait on a global counter with the releases it waited for (the latency of
a cross-SM hand-off, and the spread between its producers:
``bench/trace_decode.py --handoffs``), and :meth:`Trace.flag_word_handoffs` each flag-word load
with the stores whose words it read. :meth:`Trace.bytes_landed` bins the bytes the loads
brought in along the launch (where the memory system idles:
``bench/trace_decode.py --hbm``). :meth:`Trace.release_stores` lists each store that released a
counter with the stream engine's loads on its SM around it (``bench/trace_decode.py
--stores``), and :meth:`Trace.idle_us` the time an engine had nothing in flight
(``--idle``). :meth:`Trace.to_json` writes the
Chrome trace-event format (:meth:`Trace.from_json` reads it back) that
Perfetto (ui.perfetto.dev) and ``chrome://tracing`` open: one process per SM, complete
("X") slices on threads, which the viewers draw as tracks. A viewer drops or
misdraws slices that partially overlap on one track, and the load engine
keeps several loads in flight, so an engine gets as many tracks as it has
micro-ops in flight at once: each slice goes to the first of its engine's
tracks whose last slice has ended (greedy interval partitioning, which uses
the fewest tracks). An engine whose micro-ops never overlap keeps one track
named after it (``compute``); one whose micro-ops do gets ``load #0``,
``load #1``, ... :func:`check_tracks` checks exported JSON for partial
overlaps.

Times are exported on a grid of :data:`TICKS_PER_US` ticks (1 ns), start and
end each rounded once, so that rounding never makes two slices of a track
overlap.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from vdir import isa
from vdir.diagnostics import VdirError
from vdir.target import get_target

#: the grid of exported times: ticks per µs (1 ns)
TICKS_PER_US = 1000
#: µs of slack when :meth:`Trace.wait_chain` decides what a micro-op waited
#: for (different threads take the stamps)
WAIT_SLACK_US = 0.25
#: µs within which a micro-op begins once a wait on its own SM has cleared (the engine's own issue: the
#: load engines' cost per micro-op is about 0.47 µs, docs/performance.md round 20); a longer gap on the
#: path is a hand-off's latency where the micro-op also waited on other SMs (:func:`_held_by`)
LOCAL_WAIT_US = 0.6
#: the ways a micro-op waits on other SMs (:meth:`Trace.wait_chain`)
REMOTE_WAITS = ("counter", "words")


def _held_by(cleared: list[tuple[float, str, TraceEvent]], e: TraceEvent) -> tuple[float, str, TraceEvent]:
    """Of the waits of ``e`` that had cleared when it began, (clear time, how, micro-op), the one that held
    it: the last to clear, unless every wait on its own SM (its queue, a bit) had cleared more than
    :data:`LOCAL_WAIT_US` before it began and it also waited on other SMs. A wait on the SM clears
    when the micro-op it waits for ends, but a counter or flag words reach it a hand-off's latency
    after their producer ended, so only they can explain such a gap (:meth:`Trace.wait_chain`)."""
    latest = max(cleared, key=lambda c: c[0])
    remote = [c for c in cleared if c[1] in REMOTE_WAITS]
    if remote and latest[1] not in REMOTE_WAITS and latest[0] + LOCAL_WAIT_US < e.start_us:
        return max(remote, key=lambda c: c[0])
    return latest


def _end_us(e: TraceEvent) -> float:
    """When ``e`` ended (µs)."""
    return e.start_us + e.dur_us


class TraceError(VdirError, ValueError):
    """Exported trace JSON that a viewer would misdraw; the message names the slices."""


class TraceWriteError(VdirError, OSError):
    """A trace that could not be written where asked (no such folder, a full device, no permission): an
    ``OSError`` with the failure's ``errno``, ``strerror`` and ``filename``."""

    def __str__(self) -> str:
        return f"{self.filename}: cannot write the trace ({self.strerror})"


class TraceEvent(NamedTuple):
    """One executed micro-op: where (SM, engine, queue position), which (micro-op id), when (µs)."""

    sm: int
    engine: int
    uop: int
    pos: int
    start_us: float
    dur_us: float


class HandOff(NamedTuple):
    """A micro-op that waited on a global counter, and the micro-ops that released it, by end time."""

    consumer: TraceEvent
    producers: list[TraceEvent]

    @property
    def ready_us(self) -> float:
        """When the last release was done: the earliest the wait could be satisfied."""
        last = self.producers[-1]
        return last.start_us + last.dur_us

    @property
    def latency_us(self) -> float:
        """From the last release to the consumer's start: the hand-off's own latency, plus any time
        the consumer's in-order queue held it after the release."""
        return self.consumer.start_us - self.ready_us

    @property
    def spread_us(self) -> float:
        """From the first producer's release to the last's: the wait for the slowest SM."""
        first = self.producers[0]
        return self.ready_us - (first.start_us + first.dur_us)


class ReleaseStore(NamedTuple):
    """A store that released a global counter, and the loads of one engine on its SM around it."""

    store: TraceEvent
    #: the engine's loads in flight when the store began
    in_flight: int
    #: the engine's loads that began while the store ran
    issued: int
    #: when the last of the loads in flight at the store's start ended (None: none was in flight)
    last_landed_us: float | None


def _sm_ids_of(value: Any, program: isa.EncodedProgram) -> tuple[int, ...] | None:
    """A trace file's ``sm_ids`` (None where absent); a :class:`TraceError` unless one integer of at
    least -1 per SM of ``program``."""
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != program.num_sms
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= -1 for v in value)):
        raise TraceError(f"'sm_ids' must list one SM number (or -1) per CTA, {program.num_sms} in all, "
                         f"not {str(value)[:60]}")
    return tuple(value)


@dataclass
class Trace:
    """What ran where and when in one launch (µs); ``clock`` says where the times come from."""

    program: isa.EncodedProgram
    events: list[TraceEvent]
    clock: str = "measured"
    #: the SM (``%smid``) each CTA ran on, by CTA index (-1: the CTA did not start); None where the
    #: trace's source does not say (the simulator). Which CTA lands on which SM is up to the hardware and
    #: differs from one program to another, so a property of the SM is keyed by these, not by CTA.
    sm_ids: tuple[int, ...] | None = None
    #: the launch's fixed cost outside the events' times, where the clock models one (the simulator's,
    #: :class:`~vdir.device_runtime.sim.SimTrace`); None where it is not known (the GPU's stamps)
    launch_us: float | None = None

    @property
    def makespan_us(self) -> float:
        """End time of the last micro-op."""
        return max((e.start_us + e.dur_us for e in self.events), default=0.0)

    def wait_chain(self, lo_us: float, hi_us: float) -> list[tuple[TraceEvent, str]]:
        """The chain of waits that ends at the last micro-op to finish by ``hi_us``, back to ``lo_us``, latest first.

        Walking back from a micro-op, the walk goes to whichever of its waits
        cleared last before it began: its queue (``"queue"``: the micro-op
        before it in its queue, which holds it until it has begun on a
        pipelined engine and until it has ended on another), the micro-op on
        its SM whose completion gave a dependency
        bit the parity it waits for (``"bits"``), or the last release of the
        global counter it waits on (``"counter"``). A wait on other SMs
        clears a hand-off's latency after its producer ended, so where the
        micro-op began well after every wait on its own SM had cleared, that
        wait is what held it (:func:`_held_by`). The first micro-op of a
        queue that waited for nothing ends the walk (``"start"``). Each step
        goes to a micro-op that began strictly earlier, so the walk ends.
        On the GPU a compute instruction's end is stamped once its signal is
        done, by the signal warp (lowering option ``signal_warp``), and may
        follow the next one's start; the walk then takes the queue as what
        held the next one (the stamps do not say when the body ended).
        """
        pipelined = [spec.pipelined for spec in get_target(self.program.target).engines]
        queues = {(e.sm, e.engine, e.pos): e for e in self.events}
        waited_for = self._waited_for()
        ends = sorted(self.events, key=_end_us)
        i = bisect.bisect_right([_end_us(e) for e in ends], hi_us) - 1
        e = ends[i] if i >= 0 else None
        chain: list[tuple[TraceEvent, str]] = []
        while e is not None and e.start_us >= lo_us:
            prev = queues.get((e.sm, e.engine, e.pos - 1))
            cleared = [(_end_us(d), how, d) for how, d in waited_for(e)
                       if d.start_us < e.start_us and _end_us(d) <= e.start_us + WAIT_SLACK_US]
            if prev is not None and prev.start_us < e.start_us:
                cleared.append((prev.start_us if pipelined[e.engine] else _end_us(prev), "queue", prev))
            _, how, nxt = _held_by(cleared, e) if cleared else (0.0, "start", None)
            chain.append((e, how))
            e = nxt
        return chain

    def _waited_for(self) -> Callable[[TraceEvent], list[tuple[str, TraceEvent]]]:
        """``waited_for(e)``: the micro-ops whose completion cleared ``e``'s waits, each with how
        (``"bits"``: a dependency bit's toggle on its SM; ``"counter"``: the last release of its counter;
        ``"words"``: the last store to write the flag words it reads).

        A bit's parity after ``k`` toggles in a launch is ``k mod 2``, so the
        toggle that gave it the parity the micro-op waits for is the last one
        of that parity to end before the micro-op began.
        """
        words, row_of = self.executed_words
        wait_mask, parity = isa.WAIT_MASK.column(words), isa.WAIT_PARITY.column(words)
        signals, counters = isa.SIGNAL_MASK.column(words), isa.WAIT_COUNTER.column(words)
        toggles: dict[tuple[int, int], list[TraceEvent]] = defaultdict(list)  # (sm, bit): by end
        for e in sorted(self.events, key=_end_us):
            mask = int(signals[row_of(e)])
            while mask:
                bit = (mask & -mask).bit_length() - 1
                toggles[e.sm, bit].append(e)
                mask &= mask - 1
        toggle_ends = {key: [_end_us(t) for t in ts] for key, ts in toggles.items()}
        last_release = {h.consumer: h.producers[-1] for h in self.counter_handoffs()}
        last_words = {h.consumer: h.producers[-1] for h in self.flag_word_handoffs()}

        def waited_for(e: TraceEvent) -> list[tuple[str, TraceEvent]]:
            out = []
            row = row_of(e)
            mask, want = int(wait_mask[row]), int(parity[row])
            while mask:
                bit = (mask & -mask).bit_length() - 1
                mask &= mask - 1
                ts = toggles.get((e.sm, bit), [])
                k = bisect.bisect_right(toggle_ends.get((e.sm, bit), []), e.start_us + WAIT_SLACK_US)
                if k and k % 2 != (want >> bit) & 1:
                    k -= 1  # a toggle that ended within the slack, after the wait cleared
                if k:
                    out.append(("bits", ts[k - 1]))
            if counters[row] and e in last_release:
                out.append(("counter", last_release[e]))
            if e in last_words:
                out.append(("words", last_words[e]))
            return out

        return waited_for

    def counter_handoffs(self) -> list[HandOff]:
        """Every hand-off through a global counter in the launch: each micro-op that waited on a
        counter, with the micro-ops that released it (:class:`HandOff`).

        A counter is released once per producer and launch, so the wait could
        be satisfied when the last producer to finish had released it: the
        consumer's start minus that end is the latency of the hand-off itself
        (the release reaching L2, the consumer's poll seeing it, its issue).
        """
        words, row_of = self.executed_words
        waits, releases = isa.WAIT_COUNTER.column(words), isa.RELEASE_COUNTER.column(words)
        index = {e: row_of(e) for e in self.events}
        producers: dict[int, list[TraceEvent]] = defaultdict(list)
        for e in self.events:
            if releases[index[e]]:
                producers[int(releases[index[e]])].append(e)
        for released in producers.values():
            released.sort(key=lambda p: p.start_us + p.dur_us)
        return [HandOff(e, producers[int(waits[index[e]])]) for e in self.events
                if waits[index[e]] and int(waits[index[e]]) in producers]

    def flag_word_handoffs(self) -> list[HandOff]:
        """Every hand-off through flag words in the launch (``isa.TRANSFER_FLAG_WORDS``): each flag-word
        load, with the flag-word stores whose words it read (:class:`HandOff`, by end time).

        A load starts when a try found all its words (the kernel stamps the start after the poll; the
        simulator starts it once the last store has written them), so, as with a counter, its start
        less the last store's end is the hand-off's own latency (:attr:`HandOff.latency_us`).
        """
        words, row_of = self.executed_words
        opcodes = isa.OPCODE.column(words)
        flagged = isa.moves_flag_words(words)
        spans: list[tuple[int, int, TraceEvent]] = []  # (first byte, end) of a store's words in the sync block
        loads = []
        for e in self.events:
            row = row_of(e)
            if flagged[row] and opcodes[row] == isa.OP_STORE:
                spans += [(a, b, e) for a, b in isa.flag_word_spans(words[row])]
            elif flagged[row] and opcodes[row] == isa.OP_LOAD:
                loads.append(e)
        spans.sort(key=lambda s: s[0])  # one store writes each word: by start is by end too
        ends = [s[1] for s in spans]
        out = []
        for e in loads:
            producers: dict[int, TraceEvent] = {}
            for a, b in isa.flag_word_spans(words[row_of(e)]):
                k = bisect.bisect_right(ends, a)  # the first span that ends past this one's start
                while k < len(spans) and spans[k][0] < b:
                    producers[id(spans[k][2])] = spans[k][2]
                    k += 1
            if producers:
                out.append(HandOff(e, sorted(producers.values(), key=_end_us)))
        return out

    def bytes_landed(self, bin_us: float, engines: Sequence[int] | None = None) -> np.ndarray:
        """Bytes of the loads that landed in each ``bin_us`` window of the launch (bin ``k``: ``[k, k + 1) *
        bin_us``, by each load's end), on ``engines`` (None: every engine).

        Where the memory system idles along a launch (``bench/trace_decode.py
        --hbm``): the loads are the only bytes a launch reads in bulk. A load
        counts its region (rows x row bytes); a conditional load is left out
        (the trace does not say whether it moved bytes).
        """
        if bin_us <= 0:
            raise TraceError(f"bytes_landed: bin_us must be positive, got {bin_us}")
        words, row_of = self.executed_words
        counted = ((isa.OPCODE.column(words) == isa.OP_LOAD) & (isa.GUARD_SOURCE.column(words) == isa.SOURCE_NONE))
        size = isa.ROWS.column(words).astype(np.int64) * isa.ROW_BYTES.column(words).astype(np.int64)
        landed = np.zeros(int(self.makespan_us // bin_us) + 1, dtype=np.int64)
        for e in self.events:
            index = row_of(e)
            if counted[index] and (engines is None or e.engine in engines):
                landed[int((e.start_us + e.dur_us) // bin_us)] += size[index]
        return landed

    def release_stores(self, engine: int) -> list[ReleaseStore]:
        """Every store that released a global counter, with ``engine``'s loads on its SM around it.

        Where a hand-off's store spends its time (``bench/trace_decode.py
        --stores``): the release (``red.release.gpu``: ``MEMBAR.ALL.GPU`` in
        SASS) is measured to end when the SM's weight tiles in flight have
        landed, so a store on a streaming SM lasts as long as its stream
        engine's in-flight loads (``docs/performance.md``, round 8).
        """
        words, row_of = self.executed_words
        releasing = (isa.OPCODE.column(words) == isa.OP_STORE) & (isa.RELEASE_COUNTER.column(words) != 0)
        loads = self._by_sm(engine)
        out = []
        for e in self.events:
            if not releasing[row_of(e)]:
                continue
            end = e.start_us + e.dur_us
            around = loads.get(e.sm, ())
            flying = [x.start_us + x.dur_us for x in around if x.start_us < e.start_us < x.start_us + x.dur_us]
            issued = sum(1 for x in around if e.start_us <= x.start_us < end)
            out.append(ReleaseStore(e, len(flying), issued, max(flying) if flying else None))
        return out

    def idle_us(self, engine: int, lo_us: float, hi_us: float) -> dict[int, float]:
        """Per SM, the µs between ``lo_us`` and ``hi_us`` in which ``engine`` had no micro-op in flight
        (``bench/trace_decode.py --idle``): where a stream engine waits for shared memory while the
        HBM could stream (``docs/performance.md``, round 8). Every SM with a micro-op on ``engine``
        in the launch is listed."""
        if hi_us <= lo_us:
            raise TraceError(f"idle_us: the window {lo_us} .. {hi_us} is empty")
        idle = {}
        for sm, events in self._by_sm(engine).items():
            free, reached = 0.0, lo_us
            for start, end in sorted((e.start_us, e.start_us + e.dur_us) for e in events):
                if start > reached:
                    free += min(start, hi_us) - reached
                reached = max(reached, end)
                if reached >= hi_us:
                    break
            idle[sm] = free + max(0.0, hi_us - reached)
        return idle

    def _by_sm(self, engine: int) -> dict[int, list[TraceEvent]]:
        """The events of ``engine``, by SM."""
        out: dict[int, list[TraceEvent]] = defaultdict(list)
        for e in self.events:
            if e.engine == engine:
                out[e.sm].append(e)
        return out

    @cached_property
    def executed_words(self) -> tuple[np.ndarray, Callable[[TraceEvent], int]]:
        """The executed instructions' words (loop records expanded: an event's position counts executed
        instructions), and the row of an event's instruction among them; worked out once per trace,
        for the analyses that read them (hand-offs, stores, bytes landed, the wait chain)."""
        program = self.program.without_loops()
        first = {(sm, engine): int(row[engine][0]) for sm, row in enumerate(program.queues)
                 for engine in range(len(row))}
        return program.instrs.reshape(-1, isa.INSTR_WORDS), lambda e: first[e.sm, e.engine] + e.pos

    @classmethod
    def from_json(cls, program: isa.EncodedProgram, data: dict[str, Any]) -> Trace:
        """The trace that :meth:`to_json` wrote for ``program`` (its slices back as events)."""
        engine_names = list(get_target(program.target).engine_names)
        events = []
        for e in data["traceEvents"]:
            if e.get("ph") != "X":
                continue
            if e.get("cat") not in engine_names:
                raise TraceError(f"slice '{e.get('name')}': engine '{e.get('cat')}' is not one of "
                                 f"{', '.join(engine_names)} (the program's target)")
            events.append(TraceEvent(int(e["pid"]), engine_names.index(e["cat"]), int(e["args"]["micro-op"]),
                                     int(e["args"]["queue position"]), float(e["ts"]), float(e["dur"])))
        other = data.get("otherData", {})
        return cls(program, events, str(other.get("clock", "measured")), _sm_ids_of(other.get("sm_ids"), program))

    @classmethod
    def from_stamps(cls, program: isa.EncodedProgram, starts: np.ndarray, ends: np.ndarray, clock: str,
                    sm_ids: tuple[int, ...] | None = None) -> Trace:
        """The trace of nanosecond stamps per instruction (``program.instrs`` order, without loop records),
        and the SM each CTA ran on (``sm_ids``, where known).

        An instruction with a zero stamp never ran to completion and is left
        out; times are relative to the earliest start stamp.
        """
        starts, ends = starts.astype(np.int64), ends.astype(np.int64)  # ns since an epoch: below 2**63
        ran = (starts != 0) & (ends != 0)
        origin = int(starts[ran].min()) if ran.any() else 0
        uops = isa.UOP_ID.column(program.instrs.reshape(-1, isa.INSTR_WORDS))
        events = []
        for sm, row in enumerate(program.queues):
            for engine, (first, count) in enumerate(row):
                for index in np.flatnonzero(ran[first : first + count]) + first:
                    start, end = int(starts[index]), int(ends[index])
                    events.append(TraceEvent(sm, engine, int(uops[index]), int(index) - first,
                                             (start - origin) / 1e3, (end - start) / 1e3))
        return cls(program, events, clock, sm_ids)

    def to_json(self) -> dict[str, Any]:
        """Chrome/Perfetto trace: one process per SM, one track per engine and in-flight slot."""
        names = self.program.uop_names
        engine_names = get_target(self.program.target).engine_names
        spans = [(e, *_ticks(e)) for e in self.events]
        track_of, tracks = _assign_tracks([(e.sm, e.engine, s, t) for e, s, t in spans])
        out: list[dict[str, Any]] = []
        tids: dict[tuple[int, int, int], int] = {}
        for sm in range(self.program.num_sms):
            out.append({"ph": "M", "name": "process_name", "pid": sm, "tid": 0, "args": {"name": f"SM {sm}"}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": sm, "tid": 0, "args": {"sort_index": sm}})
            tid = 0  # tracks in engine order, numbered from 0 on every SM
            for engine, label in enumerate(engine_names):
                count = tracks.get((sm, engine), 1)
                for k in range(count):
                    tids[sm, engine, k] = tid
                    name = label if count == 1 else f"{label} #{k}"
                    out.append({"ph": "M", "name": "thread_name", "pid": sm, "tid": tid, "args": {"name": name}})
                    out.append({"ph": "M", "name": "thread_sort_index", "pid": sm, "tid": tid,
                                "args": {"sort_index": tid}})
                    tid += 1
        for (e, start, end), k in zip(spans, track_of, strict=True):
            out.append({
                "ph": "X", "pid": e.sm, "tid": tids[e.sm, e.engine, k],
                "ts": start / TICKS_PER_US, "dur": (end - start) / TICKS_PER_US,
                "name": names.get(e.uop, f"micro-op #{e.uop}"), "cat": engine_names[e.engine],
                "args": {"micro-op": e.uop, "queue position": e.pos},
            })
        other: dict[str, Any] = {"clock": self.clock}
        if self.sm_ids is not None:
            other["sm_ids"] = list(self.sm_ids)
        return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": other}

    def write(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path``; a path that cannot be written is a :class:`TraceWriteError`
        naming it."""
        text = json.dumps(self.to_json())
        try:
            Path(path).write_text(text)
        except OSError as e:
            raise TraceWriteError(e.errno, e.strerror or str(e), str(path)) from None


def _ticks(event: TraceEvent) -> tuple[int, int]:
    """(start, end) of ``event`` on the export grid, each rounded once."""
    start = round(event.start_us * TICKS_PER_US)
    return start, round((event.start_us + event.dur_us) * TICKS_PER_US)


def _assign_tracks(spans: Sequence[tuple[int, int, int, int]]) -> tuple[list[int], dict[tuple[int, int], int]]:
    """Greedy interval partitioning of (sm, engine, start, end) spans, per (sm, engine).

    Returns each span's track index and the number of tracks of each
    (sm, engine): in start order, a span goes to the first track whose last
    span has ended (touching is not overlapping).
    """
    track_of = [0] * len(spans)
    last_end: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i in sorted(range(len(spans)), key=lambda i: (spans[i][2], spans[i][3])):
        sm, engine, start, end = spans[i]
        ends = last_end[sm, engine]
        k = next((k for k, t in enumerate(ends) if t <= start), len(ends))
        if k == len(ends):
            ends.append(end)
        else:
            ends[k] = end
        track_of[i] = k
    return track_of, {key: len(ends) for key, ends in last_end.items()}


def check_tracks(data: dict[str, Any]) -> None:
    """Raise :class:`TraceError` if a slice of exported trace JSON has a negative
    duration or partially overlaps another slice of its track.

    Slices may touch or nest (the format's stacking); a slice that starts
    inside another and ends after it is what viewers misdraw. Times are
    compared on the export grid (:data:`TICKS_PER_US`).
    """
    labels = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"] if e.get("name") == "thread_name"}
    by_track: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
    for e in data["traceEvents"]:
        if e.get("ph") != "X":
            continue
        start, end = round(e["ts"] * TICKS_PER_US), round((e["ts"] + e["dur"]) * TICKS_PER_US)
        where = f"SM {e['pid']} track '{labels.get((e['pid'], e['tid']), e['tid'])}'"
        if end < start:
            raise TraceError(f"{where}: slice '{e['name']}' ends before it starts ({e['ts']} + {e['dur']})")
        by_track[e["pid"], e["tid"]].append((start, end, e["name"]))
    for (pid, tid), slices in by_track.items():
        open_slices: list[tuple[int, int, str]] = []  # the stack of slices containing the current start
        for start, end, name in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_slices and open_slices[-1][1] <= start:
                open_slices.pop()
            if open_slices and end > open_slices[-1][1]:
                outer = open_slices[-1]
                raise TraceError(
                    f"SM {pid} track '{labels.get((pid, tid), tid)}': slice '{name}' [{start}, {end}) ns partially "
                    f"overlaps '{outer[2]}' [{outer[0]}, {outer[1]}) ns"
                )
            open_slices.append((start, end, name))
