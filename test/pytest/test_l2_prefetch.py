"""L2 prefetch records (``vdir-encode`` option ``l2-prefetch``): the plan, the encoding, the simulator.

* the plan is checked against a plain restatement of its rule on random
  queues (and that restatement against a hand-worked queue);
* a prefetch record only adds: remove them and the encoding is the one
  without, word for word; each names the region of a later load of its queue;
* the simulator gives the same bytes with and without, and rejects forged
  prefetch records by name;
* on the GPU, the same bytes with and without (``-m gpu``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16

from vdir import isa
from vdir.analysis.graph import Node
from vdir.analysis.l2_prefetch import MIN_PREFETCH_BYTES, is_candidate, plan_prefetches
from vdir.analysis.queues import waits_on_other_sms
from vdir.device_runtime.sim import SimProgramError, simulate
from vdir.families import TileSig
from vdir.frontend import examples
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------

_OTHER_SM = Node(id=-1, kind="store", engine="store", seq=0, name="elsewhere", loc="", sm=1)


def _queue(kinds: list[tuple[str, int]]) -> list[Node]:
    """SM 0 load-engine nodes: ("wait", 0) a load behind another SM, ("tile", kb) an independent load."""
    queue = []
    for i, (kind, kb) in enumerate(kinds):
        n = Node(id=i, kind="load", engine="load", seq=i, name=f"n{i}", loc="", sm=0,
                 tile=TileSig((1, max(kb, 1) * 512), "bf16"))
        if kind == "wait":
            n.deps = [(_OTHER_SM,)]
        queue.append(n)
    return queue


def _expected(queue: list[Node], budget: int) -> dict[int, set[int]]:
    """The rule, restated: at each first waiting load, the candidates after it within ``budget`` bytes
    that no earlier waiting load asked for."""
    asked: set[int] = set()
    plan: dict[int, set[int]] = {}
    for i, n in enumerate(queue):
        if not waits_on_other_sms(n) or (i > 0 and waits_on_other_sms(queue[i - 1])):
            continue
        window, total = set(), 0
        for k in range(i + 1, len(queue)):
            if not is_candidate(queue[k]):
                continue
            total += queue[k].tile.nbytes  # type: ignore[union-attr]
            if total > budget:
                break
            window.add(k)
        if window - asked:
            plan[i] = window - asked
        asked |= window
    return plan


def _planned(queue: list[Node], budget: int) -> dict[int, set[int]]:
    return {i: {n.id for n in nodes} for i, nodes in plan_prefetches(queue, budget).items()}


def test_the_restated_rule_on_a_hand_worked_queue():
    """Tiles of 8 KB behind two waits, a 16 KB window: two tiles at the first wait, the next at the second."""
    queue = _queue([("tile", 16), ("wait", 0), ("tile", 16), ("tile", 16), ("wait", 0), ("wait", 0),
                    ("tile", 16), ("tile", 1), ("tile", 16)])
    want = {1: {2, 3}, 4: {6, 8}}
    assert _expected(queue, 16384 + 16384) == want
    assert _planned(queue, 16384 + 16384) == want
    assert _planned(queue, 0) == {}
    # a window smaller than the next tile asks for nothing (a tile is never split)
    assert _planned(queue, 8191) == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["wait", "tile"]), st.integers(0, 40)), max_size=40),
       st.integers(0, 64 * 1024))
def test_the_plan_follows_the_rule(kinds, budget):
    queue = _queue(kinds)
    planned = _planned(queue, budget)
    assert planned == _expected(queue, budget)
    seen = [k for ks in planned.values() for k in ks]
    assert len(seen) == len(set(seen))  # each tile asked for once
    for i, ks in planned.items():
        assert all(k > i and queue[k].tile.nbytes >= MIN_PREFETCH_BYTES for k in ks)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# the encoding and the simulator
# ---------------------------------------------------------------------------

#: (name, builder, SMs, l2-prefetch bytes)
EXAMPLES = [
    ("mlp_block on 2 SMs", examples.build_mlp_block, 2, 1 << 20),
    ("4-layer stack on 3 SMs", lambda: examples.build_mlp_stack(4, 256, 512), 3, 64 * 1024),
    ("2-layer stack on 4 SMs", lambda: examples.build_mlp_stack(2, 512, 1024), 4, 128 * 1024),
]


@pytest.fixture(scope="module", params=EXAMPLES, ids=[e[0] for e in EXAMPLES])
def encoded_pair(request) -> tuple[isa.EncodedProgram, isa.EncodedProgram]:
    """(without, with) prefetch records, not rerolled."""
    _, build, sms, budget = request.param
    return (compile_to_encoded(build(), num_sms=sms, reroll=False),
            compile_to_encoded(build(), num_sms=sms, reroll=False, l2_prefetch=budget))


def test_prefetch_records_only_add(encoded_pair):
    """Without its prefetch records each queue is the queue encoded without l2-prefetch; each record
    names the region of a load of its SM (a weight tile of the stream queue, asked for by the load queue
    before its wait), and does nothing else."""
    plain, prefetching = encoded_pair
    total = 0
    for sm in range(plain.num_sms):
        loads = [w for e in range(plain.num_engines) for w in prefetching.queue(sm, e) if isa.OPCODE.get(w) == isa.OP_LOAD]
        for e in range(plain.num_engines):
            queue = prefetching.queue(sm, e)
            is_prefetch = isa.OPCODE.column(queue) == isa.OP_PREFETCH
            assert np.array_equal(queue[~is_prefetch], plain.queue(sm, e))
            for r in np.nonzero(is_prefetch)[0]:
                record = queue[r]
                later = [w for w in loads if isa.UOP_ID.get(w) == isa.UOP_ID.get(record)]
                assert later, "a prefetch names no load of its SM"
                for f in isa.REGION_FIELDS[:-1]:  # all but SMEM
                    assert f.get(record) == f.get(later[0]), f.name
                assert not any(f.get(record) for f in (isa.WAIT_MASK, isa.SIGNAL_MASK, isa.WAIT_COUNTER,
                                                       isa.RELEASE_COUNTER, isa.SMEM, isa.DYN_SOURCE))
            total += int(is_prefetch.sum())
    assert total > 0, "the example has cross-SM waits with weight tiles behind them"


def _inputs(program: isa.EncodedProgram) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(bfloat16 if b.dtype == "bf16" else np.float32)
            for b in program.buffers]


def test_simulated_results_are_bit_identical(encoded_pair):
    """A prefetch changes no value: the same bytes with and without, race checks on."""
    results = []
    for program in encoded_pair:
        arrays = [a.copy() for a in _inputs(program)]
        simulate(program, arrays, seed=3)
        results.append(arrays)
    for a, b in zip(*results, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_the_listing_names_the_prefetched_load(encoded_pair):
    _, prefetching = encoded_pair
    lines = isa.disassemble(prefetching).splitlines()
    k = next(i for i, x in enumerate(lines) if "prefetch.L2" in x)
    label = lines[k].split("//")[1].strip()
    assert label.startswith("%") and "(" in label  # a readable name and its location
    # the load it asks for comes later in the same queue, under the same name
    assert any(x.split("//")[1].strip() == label for x in lines[k + 1 :] if " load " in x and "//" in x)


# ---------------------------------------------------------------------------
# forged prefetch records
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prefetching() -> isa.EncodedProgram:
    return compile_to_encoded(examples.build_mlp_block(), num_sms=2, reroll=False, l2_prefetch=1 << 20)


def _forge(program: isa.EncodedProgram, forge) -> isa.EncodedProgram:
    """A copy of ``program`` with ``forge(record)`` applied to its first prefetch record."""
    instrs = program.instrs.copy()
    first = int(np.nonzero(isa.OPCODE.column(instrs) == isa.OP_PREFETCH)[0][0])
    forge(instrs[first])
    return isa.EncodedProgram(**{**vars(program), "instrs": instrs})


FORGERIES = {
    "a wait": (lambda w: isa.WAIT_MASK.set(w, 1), "a prefetch record waits, signals or has a condition"),
    "a signal": (lambda w: isa.SIGNAL_MASK.set(w, 2), "a prefetch record waits, signals or has a condition"),
    "a counter": (lambda w: isa.WAIT_COUNTER.set(w, 1), "a prefetch record waits, signals or has a condition"),
    "a runtime offset": (lambda w: isa.DYN_SOURCE.set(w, isa.SOURCE_SCALAR),
                         "a prefetch record has a runtime offset"),
    "past the buffer": (lambda w: isa.ROWS.set(w, 1 << 20), r"region \[\d+, \d+\) is outside buffer"),
    "no such buffer": (lambda w: isa.BUFFER.set(w, 99), "buffer index 99 is out of range"),
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_forged_prefetch_records_are_rejected_by_name(prefetching, case):
    forge, message = FORGERIES[case]
    program = _forge(prefetching, forge)
    with pytest.raises(SimProgramError, match=message):
        simulate(program, [a.copy() for a in _inputs(program)])


def test_a_prefetch_on_the_compute_engine_is_rejected(prefetching):
    instrs = prefetching.instrs.copy()
    compute = next(e for e in range(prefetching.num_engines) if e != 0 and prefetching.queues[0][e][1])
    start, _ = prefetching.queues[0][compute]
    isa.OPCODE.set(instrs[start], isa.OP_PREFETCH)
    program = isa.EncodedProgram(**{**vars(prefetching), "instrs": instrs})
    with pytest.raises(SimProgramError, match="a prefetch instruction cannot run on the"):
        simulate(program, [a.copy() for a in _inputs(program)])


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------


@gpu
def test_prefetch_gives_the_same_bytes_on_the_gpu():
    """The 4-layer stack on every SM, with and without prefetch records: bit-identical results."""
    import vdir

    build = lambda: examples.build_mlp_stack(4, 2048, 8192)  # noqa: E731
    results = []
    for budget in (0, 256 * 1024):
        program = compile_to_encoded(build(), l2_prefetch=budget)
        assert (isa.OPCODE.column(program.executed_instrs()) == isa.OP_PREFETCH).any() == bool(budget)
        with vdir.compile(program, backend="cuda") as exe:
            arrays = _inputs(program)
            out = exe(**{b.name: a for b, a in zip(program.buffers, arrays, strict=True) if b.is_input})
            results.append([np.asarray(o) for o in (out.values() if isinstance(out, dict) else [out])])
    for a, b in zip(*results, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
