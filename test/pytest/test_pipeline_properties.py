"""Property tests: random valid programs through the whole pass pipeline.

Hypothesis builds multi-phase programs (gemvs over row tiles, rmsnorm
prologues, residual adds and silu_muls, vectors that go through global memory
between phases, buffers reused so that write-after-read hazards cross SMs)
and runs them through fuse, place, schedule, alloc-smem and layout-deps. The
checks re-derive the guarantees independently of the passes' own reasoning:

* every dependency is enforced: a global counter between SMs, and within an
  SM a happens-before path built from queue order and the bits as the
  encoding states them (which toggle of a bit each wait observes);
* a bit is only toggled again once every waiter of its previous toggle has
  finished, and a waiter cannot observe a toggle older than its producer's;
* no two tiles whose bytes overlap in shared memory are live at once, and a
  tile's space is only rewritten after its readers finished;
* every queue is ordered by one global topological order (deadlock freedom
  for in-order engines);
* and the simulator, under several interleaving seeds, computes exactly what
  the reference evaluator computes.

Some programs use runtime values: the input vector read at a launch-time
row (``%pos``), and row tiles that run only while their index is below a
launch-time count (``%n``, on the whole tile's chain). The invariants above
must hold whatever the values, and the simulator is compared with the
reference for several random values of the scalars.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16
from test_stream_holds import released_first

from vdir.analysis.flag_words import mark_flag_words, plan_flag_words, words_only_buffers
from vdir.analysis.graph import Graph, Node, build_graph
from vdir.analysis.queues import queues_of, waits_on_other_sms
from vdir.frontend import ProgramBuilder
from vdir.target import get_target
from vdir.testing.reference import evaluate_graph
from vdir.transforms.alloc_smem import allocate
from vdir.transforms.encode import encode
from vdir.transforms.fuse import FusePass
from vdir.transforms.hold_streams import hold_streams
from vdir.transforms.layout_deps import layout_dependencies
from vdir.transforms.place import place
from vdir.transforms.schedule import schedule

WIDTH = 64
#: rows of the input vector's buffer when it is read at a runtime row
X_ROWS = 4


@st.composite
def programs(draw, scratch_rows: bool = False):
    """A random multi-phase program and the SM count to compile it for.

    ``scratch_rows``: the activation buffer the last phase does not write is declared ``scratch``
    (its phases then run every row tile: a scratch row is read only where it was surely written).
    """
    phases = draw(st.integers(2 if scratch_rows else 1, 3))
    rows = draw(st.sampled_from([8, 16, 32]))
    runtime = draw(st.booleans())
    b = ProgramBuilder("random")
    x = b.buffer("x", (X_ROWS if runtime else 1, WIDTH))
    g = b.buffer("g", (1, WIDTH))
    ws = [b.buffer(f"w{p}", (WIDTH, WIDTH)) for p in range(phases)]
    # two activation buffers used alternately: phase p reads what p-1 wrote
    # and overwrites what p-2 wrote (write-after-read across SMs)
    scratch = {1 - (phases - 1) % 2} if scratch_rows else set()
    acts = [b.buffer(f"a{i}", (1, WIDTH), scratch=i in scratch) for i in range(min(2, phases))]
    pos = b.scalar("pos", 0, X_ROWS) if runtime else None
    n = b.scalar("n", 0, WIDTH // rows + 1) if runtime else None
    source = x
    for p in range(phases):
        row0 = pos if source is x and pos is not None else 0
        v = b.load(source, (row0, 0), (1, WIDTH), name=f"v{p}")
        if draw(st.booleans()):
            gt = b.load(g, (0, 0), (1, WIDTH), name=f"g{p}")
            v = b.compute("rmsnorm", [v, gt], params={"eps": 1e-5}, name=f"n{p}")
        dest = acts[p % 2]
        epilogue = draw(st.sampled_from(["none", "add", "silu_mul"]))
        counted = n is not None and p % 2 not in scratch and draw(st.booleans())
        for i in range(WIDTH // rows):
            # a counted phase runs row tile i only while i < n (the whole chain)
            when = (n, ">=", i + 1) if counted else None
            wt = b.load(ws[p], (i * rows, 0), (rows, WIDTH), name=f"w{p}_{i}", when=when)
            y = b.compute("gemv", [wt, v], name=f"y{p}_{i}", when=when)
            if epilogue == "add":
                r = b.load(source, (row0, i * rows), (1, rows), name=f"r{p}_{i}", when=when)
                y = b.compute("add", [y, r], name=f"s{p}_{i}", when=when)
            elif epilogue == "silu_mul":
                wt2 = b.load(ws[p], (i * rows, 0), (rows, WIDTH), name=f"u{p}_{i}", when=when)
                y2 = b.compute("gemv", [wt2, v], name=f"z{p}_{i}", when=when)
                y = b.compute("silu_mul", [y, y2], name=f"m{p}_{i}", when=when)
            b.store(y, dest, (0, i * rows), name=f"t{p}_{i}", when=when)
        source = dest
    module = b.finish()
    if draw(st.booleans()):
        FusePass().apply(None, module)  # type: ignore[arg-type]
    return module, draw(st.integers(1, 4))


def compile_graph(module, num_sms: int, keep_trips: bool = False, flag_words: int = 0,
                  hold_phases: int = 0) -> Graph:
    graph = build_graph(module)
    graph.target = get_target("h200", num_sms)
    place(graph, num_sms, keep_trips=keep_trips)
    schedule(graph)
    allocate(graph)
    mark_flag_words(graph, plan_flag_words(graph, flag_words))
    if hold_phases:
        event(f"stream holds: {hold_streams(graph, hold_phases) > 0}")
    layout_dependencies(graph)
    return graph


# ---------------------------------------------------------------------------
# An independent happens-before relation over the encoded semantics
# ---------------------------------------------------------------------------


class HappensBefore:
    """Events per node: ready (queue allows), start (waits passed), end.

    Edges: queue order (compute/store: end -> next ready; load: start -> next
    ready and end -> next end, loads complete in order), ready -> start ->
    end, and for every waited bit the toggle that the wait observes -> start.
    """

    def __init__(self, nodes: list[Node], queues: dict[str, list[Node]]):
        self.succ: dict[tuple, list[tuple]] = defaultdict(list)
        for q in queues.values():
            for a, b in pairwise(q):
                if a.engine == "load":
                    self.succ[("start", a.id)].append(("ready", b.id))
                    self.succ[("end", a.id)].append(("end", b.id))
                else:
                    self.succ[("end", a.id)].append(("ready", b.id))
        for n in nodes:
            self.succ[("ready", n.id)].append(("start", n.id))
            self.succ[("start", n.id)].append(("end", n.id))
        self.observed, self.at_rest = observed_toggles(nodes)
        for (waiter, _bit), producer in self.observed.items():
            self.succ[("end", producer.id)].append(("start", waiter))
        self._memo: dict[tuple, set] = {}

    def reach(self, src: tuple) -> set:
        if src not in self._memo:
            seen, stack = {src}, [src]
            while stack:
                for nxt in self.succ.get(stack.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            self._memo[src] = seen
        return self._memo[src]

    def before(self, a: tuple, b: tuple) -> bool:
        return b in self.reach(a)


def observed_toggles(nodes: list[Node]) -> tuple[dict[tuple[int, int], Node], list[tuple[Node, int]]]:
    """For each (waiter, bit): the toggle whose parity the wait asks for; and the (waiter, bit) pairs
    whose wait asks for the bit's state before any toggle (parity 0, no earlier toggle leaving it).

    Toggles of a bit happen in program order of their producers (the
    encoding's intent, checked below); a wait for parity q observes the
    latest earlier toggle that leaves q. A wait for 0 with no such toggle
    observes the bit at rest (a first layer's wait kept as the later
    layers', ``vdir-layout-deps``): :func:`check_sm` checks that every toggle
    of the bit comes after it.
    """
    toggles: dict[int, list[Node]] = defaultdict(list)
    for n in sorted(nodes, key=lambda n: n.key):
        for b in n.signal_bits:
            toggles[b].append(n)
    out: dict[tuple[int, int], Node] = {}
    at_rest: list[tuple[Node, int]] = []
    for w in nodes:
        for b, parity in w.wait_bits.items():
            candidates = [
                (k + 1, t) for k, t in enumerate(toggles[b]) if t.key < w.key and (k + 1) % 2 == parity
            ]
            if not candidates and parity == 0:
                at_rest.append((w, b))
                continue
            assert candidates, f"{w.name} waits on bit {b} = {parity}, which no earlier toggle leaves"
            out[(w, b)] = candidates[-1][1]  # type: ignore[index]
    return {(w.id, b): p for (w, b), p in out.items()}, at_rest


def check_sm(graph: Graph, sm: int, nodes: list[Node]) -> None:
    queues = {e: q for (s, e), q in queues_of(graph).items() if s == sm}
    hb = HappensBefore(nodes, queues)
    toggles: dict[int, list[Node]] = defaultdict(list)
    for n in sorted(nodes, key=lambda n: n.key):
        for b in n.signal_bits:
            toggles[b].append(n)
    for w, b in hb.at_rest:  # the wait reads the bit before its first toggle, whatever the interleaving
        for t in toggles[b]:
            assert hb.before(("start", w.id), ("end", t.id)), f"{w.name}'s wait on bit {b} at rest may see a toggle"
    # every local dependency is enforced
    for n in nodes:
        producers = list(n.inputs) + [p for g in n.deps if all(q.sm == sm for q in g) for p in g]
        for p in producers:
            assert hb.before(("end", p.id), ("start", n.id)), f"{n.name} may start before {p.name} ends"
    # bit reuse is safe
    waiters: dict[tuple[int, int], list[int]] = defaultdict(list)
    for (w, b), p in hb.observed.items():
        waiters[(p.id, b)].append(w)
    for b, ts in toggles.items():
        for t1, t2 in pairwise(ts):
            assert hb.before(("end", t1.id), ("end", t2.id)), f"toggles of bit {b} are unordered"
            for w in waiters[(t1.id, b)]:
                assert hb.before(("end", w), ("start", t2.id)), f"bit {b} toggled again while a waiter may need it"
            for w in waiters[(t2.id, b)]:
                assert hb.before(("end", t1.id), ("ready", w)), f"a waiter of bit {b} may see an older toggle"
    # no overlapping live tiles; reuse ordered after the readers
    tiles = [n for n in nodes if n.produces_tile]
    readers: dict[int, list[Node]] = defaultdict(list)
    for n in nodes:
        for i in n.inputs:
            readers[i.id].append(n)
    for a in tiles:
        for b in tiles:
            if a.key >= b.key:
                continue
            lo_a, hi_a = a.smem, a.smem + a.tile.nbytes
            lo_b, hi_b = b.smem, b.smem + b.tile.nbytes
            if lo_a < hi_b and lo_b < hi_a:
                last_a = max(r.key for r in readers[a.id])
                assert last_a < b.key, f"{a.name} and {b.name} overlap in shared memory while both live"
                for r in readers[a.id]:
                    assert hb.before(("end", r.id), ("start", b.id)), f"{b.name} may overwrite {a.name} early"


def guards(group: tuple[Node, ...], releasers: list[Node]) -> bool:
    """Whether a counter released by ``releasers`` (once each) covers every producer of ``group``.

    A producer is covered when it releases the counter itself, or when it is a
    store and a later store of the same SM's store queue releases it: that
    queue completes each store before it starts the next.
    """
    members = {p.id for p in group}
    if any(r.id not in members for r in releasers):
        return False
    for p in group:
        if any(r is p for r in releasers):
            continue
        if p.kind != "store" or not any(
            r.kind == "store" and r.sm == p.sm and r.engine == p.engine and r.pos > p.pos for r in releasers
        ):
            return False
    return True


def check_graph(graph: Graph) -> None:
    by_sm: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        by_sm[n.sm].append(n)
    # queues follow one global topological order (program order, hoisted loads moved up)
    for n in graph.nodes:
        for p in list(n.inputs) + [p for g in n.deps for p in g]:
            assert p.key < n.key
    for q in queues_of(graph).values():
        assert [n.key for n in q] == sorted(n.key for n in q)
    # cross-SM groups become counters with the right count
    releasers_of: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        for c in n.release_counters:
            releasers_of[c].append(n)
    for n in graph.nodes:
        for g in n.deps:
            if all(p.sm == n.sm for p in g):
                continue
            matches = [(c, k) for c, k in n.wait_counters if guards(g, releasers_of[c])]
            assert matches and matches[0][1] == len(releasers_of[matches[0][0]]), (
                f"{n.name}: cross-SM group not guarded by a counter"
            )
    # the stream engine holds only loads that wait on nothing of another SM (its waits are shared-memory reuse)
    for n in graph.nodes:
        if n.engine == "stream":
            assert n.kind == "load" and n.flow is None, f"{n.name} on the stream engine"
            assert not any(p.sm != n.sm for g in n.deps for p in g), f"{n.name} streams but waits on another SM"
    for sm, nodes in by_sm.items():
        check_sm(graph, sm, nodes)


def random_inputs(graph: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        a.name: (rng.standard_normal(a.shape) * (0.25 if a.shape[0] > 1 else 1.0)).astype(bfloat16)
        for a in graph.args
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_pipeline_invariants(case):
    module, num_sms = case
    check_graph(compile_graph(module, num_sms))


@st.composite
def stacks(draw):
    """A small MLP stack (a layer loop) and the SM count to compile it for with ``keep_trips``."""
    from vdir.frontend.examples import build_mlp_stack

    hidden = draw(st.sampled_from([64, 128, 256]))
    module = build_mlp_stack(draw(st.integers(3, 6)), hidden, draw(st.sampled_from([2, 4])) * hidden)
    FusePass().apply(None, module)  # type: ignore[arg-type]
    return module, draw(st.integers(1, 6))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(), st.integers(0, 2**16))
def test_layers_kept_alike_keep_the_invariants(case, seed):
    """With ``keep_trips`` (every layer placed as the first, rings sized to the layers, each producer's
    bit of the layer before tried first) the layout passes the same independent check, and the program
    computes the reference's bits on the simulator."""
    from vdir.device_runtime.sim import simulate

    module, num_sms = case
    graph = compile_graph(module, num_sms, keep_trips=True)
    assert graph.trips_kept  # every drawn stack's layers fill its SMs: the option applies
    check_graph(graph)
    reference_graph = build_graph(module)
    inputs = random_inputs(reference_graph, seed)
    expected = evaluate_graph(reference_graph, inputs, ())
    program = encode(graph)
    arrays = [np.array(inputs[b.name], copy=True) for b in program.buffers]
    simulate(program, arrays, seed=seed)
    for b, got in zip(program.buffers, arrays, strict=True):
        if b.is_output:
            np.testing.assert_array_equal(got.view(np.uint16), expected[b.name].view(np.uint16))


def random_scalars(graph: Graph, seed: int) -> tuple[int, ...]:
    """One value per launch-time scalar, uniform in its declared range."""
    rng = np.random.default_rng(seed)
    return tuple(int(rng.integers(s.lo, s.hi)) for s in graph.scalars)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16))
def test_simulator_matches_reference(case, seed):
    module, num_sms = case
    check_simulator_matches_reference(module, encode(compile_graph(module, num_sms)), seed)


def check_simulator_matches_reference(module, program, seed: int) -> None:
    """The simulator runs ``program`` (compiled from ``module``) as the reference evaluates ``module``:
    one compiled program, several values of its scalars (none: one launch each), three interleavings."""
    from vdir.device_runtime.sim import simulate

    reference_graph = build_graph(module)
    inputs = random_inputs(reference_graph, seed)
    for k, interleaving in enumerate((seed, seed + 1, seed + 2)):
        scalars = random_scalars(reference_graph, seed + k)
        expected = evaluate_graph(reference_graph, inputs, scalars)
        arrays = [np.array(inputs[b.name], copy=True) for b in program.buffers]
        simulate(program, arrays, seed=interleaving, scalars=scalars)
        for b, got in zip(program.buffers, arrays, strict=True):
            if b.is_output:
                np.testing.assert_array_equal(got.view(np.uint16), expected[b.name].view(np.uint16))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(scratch_rows=True), st.integers(0, 2**16), st.sampled_from([128, 4096]))
def test_flag_word_hand_offs_compute_what_the_reference_does(case, seed, max_bytes):
    """With flag-word hand-offs (a row of scratch among them, so that some stores write their words
    alone), the simulator, race checks on, under several interleavings, computes the reference's
    outputs: the plan's rules (one writer per byte, the slot waits the words may stand for) hold."""
    module, num_sms = case
    graph = compile_graph(module, num_sms, flag_words=max_bytes)
    assume(any(n.flag_words for n in graph.nodes))
    event(f"a buffer written as words alone: {bool(words_only_buffers(graph))}")
    check_simulator_matches_reference(module, encode(graph), seed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16), st.sampled_from([1, 2]), st.booleans())
def test_stream_holds_keep_the_invariants_and_the_results(case, seed, phases, release_first):
    """With stream holds (``vdir-hold-streams``) the layout passes the independent check, and the
    simulator, race checks on, computes the reference's outputs, with the stores the stream loads wait
    for releasing before their bits or not (``vdir-encode{release-first}``)."""
    module, num_sms = case
    graph = compile_graph(module, num_sms, hold_phases=phases)
    check_graph(graph)
    program = encode(graph, release_first=release_first)
    event(f"a store releases first: {bool(released_first(program).size)}")
    check_simulator_matches_reference(module, program, seed)



def test_checker_catches_a_waiting_load_on_the_stream_engine():
    """The invariant checker fails when a load that waits on another SM streams."""
    b = ProgramBuilder("relay")
    x, y, z = b.buffer("x", (1, WIDTH)), b.buffer("y", (1, WIDTH)), b.buffer("z", (1, WIDTH))
    b.store(b.load(x, (0, 0), (1, WIDTH), name="a"), y, (0, 0), name="s")
    b.store(b.compute("add", [b.load(y, (0, 0), (1, WIDTH), name="c"), b.load(x, (0, 0), (1, WIDTH), name="d")],
                      name="e"), z, (0, 0), name="t")
    graph = compile_graph(b.finish(), 2)
    check_graph(graph)
    waiting = next(n for n in graph.nodes if n.name.startswith("%c"))
    assert waiting.engine == "load" and waits_on_other_sms(waiting), "the example's load of y waits on SM 0's store"
    waiting.engine = "stream"
    with pytest.raises(AssertionError, match="streams but waits on another SM"):
        check_graph(graph)


def test_checker_catches_a_missing_bit():
    """The invariant checker itself must fail on a broken layout."""
    b = ProgramBuilder("two")
    x = b.buffer("x", (1, WIDTH))
    w = b.buffer("w", (WIDTH, WIDTH))
    y = b.buffer("y", (1, WIDTH))
    v = b.load(x, (0, 0), (1, WIDTH), name="v")
    wt = b.load(w, (0, 0), (WIDTH, WIDTH), name="wt")
    yt = b.compute("gemv", [wt, v], name="yt")
    b.store(yt, y, (0, 0), name="t")
    graph = compile_graph(b.finish(), 1)
    gemv = next(n for n in graph.nodes if n.kind == "compute")
    assert gemv.wait_bits
    gemv.wait_bits.clear()
    with pytest.raises(AssertionError, match="may start before"):
        check_graph(graph)


def test_checker_catches_a_wait_at_rest_that_a_toggle_may_precede():
    """A wait for a bit's state before any toggle (parity 0) is sound only where every toggle of the bit
    comes after the waiter: the checker accepts the first layer's such waits, and fails once a micro-op
    that precedes the waiter toggles the bit too."""
    from vdir.frontend.examples import build_mlp_stack

    module = build_mlp_stack(4, 128, 256)
    FusePass().apply(None, module)  # type: ignore[arg-type]
    graph = compile_graph(module, 4, keep_trips=True)
    check_graph(graph)
    at_rest = [(w, b) for w in graph.nodes if w.trip == 0 for b, q in w.wait_bits.items()
               if q == 0 and not any(b in n.signal_bits for n in graph.nodes if n.sm == w.sm and n.key < w.key)]
    assert at_rest, "the first layer waits as the later ones do"
    waiter, bit = at_rest[0]
    first = min((n for n in graph.nodes if n.sm == waiter.sm), key=lambda n: n.key)
    assert first.key < waiter.key
    first.signal_bits.append(bit)  # one toggle before the wait: the bit is no longer at rest there
    with pytest.raises(AssertionError, match="at rest may see a toggle"):
        check_graph(graph)


def test_checker_catches_a_release_before_a_store_it_covers():
    """One release per store queue covers the stores before it, not after: moved earlier, the checker fails."""
    b = ProgramBuilder("coalesce")
    w, x = b.buffer("w", (4 * 16, WIDTH)), b.buffer("x", (1, WIDTH))
    y, z = b.buffer("y", (1, 4 * 16)), b.buffer("z", (1, 4 * 16))
    xt = b.load(x, (0, 0), (1, WIDTH), name="xt")
    with b.repeat(0, 4, name="i") as i:
        row = b.affine(i, 16, name="r")
        b.store(b.compute("gemv", [b.load(w, (row, 0), (16, WIDTH), name="wt"), xt], name="yt"), y, (0, row), name="s")
    b.store(b.load(y, (0, 0), (1, 4 * 16), name="yv"), z, (0, 0), name="t")
    graph = compile_graph(b.finish(), 2)
    check_graph(graph)
    stores = [n for n in graph.nodes if n.kind == "store" and n.buffer == 2]
    assert len(stores) == 4 and sum(len(s.release_counters) for s in stores) == 2, "one release per SM's store queue"
    later = next(s for s in stores if s.release_counters)
    earlier = next(s for s in stores if s.sm == later.sm and s.pos < later.pos)
    earlier.release_counters, later.release_counters = later.release_counters, []
    with pytest.raises(AssertionError, match="not guarded by a counter"):
        check_graph(graph)
