"""Stream holds (``vdir.analysis.stream_holds``, ``vdir-hold-streams``, ``vdir-pipeline{hold-streams=N}``).

The plan's pairs are checked against the rule they implement on a whole-GPU
MLP block and the 1B decode step's graph (each pair: a store that releases a
counter, the first later stream load on its SM that reuses a slot of the
computes its row is made from, read ``phases`` phases or more after it); the
holds keep every edge pointing forward; and programs compiled with them give
the same bytes as without on the simulator, whose race checks run.

Release first (``vdir-encode{release-first}``): the rule on stand-in nodes;
the records it changes (only the flag, and a store's bits moved to its last
extra release); the kernel's order; the same bytes on the simulator; and a
forged flag refused before any backend runs it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from test_ptx_lowering import assemble

import vdir
from vdir import isa
from vdir.analysis.graph import Graph, build_graph
from vdir.analysis.queues import check_dependencies_point_forward
from vdir.analysis.stages import resolve_target
from vdir.analysis.stream_holds import add_stream_holds, hold_facts, plan_stream_holds, stores_releasing_first
from vdir.frontend.examples import build_mlp_block, build_mlp_stack, build_split_k_mlp_stack
from vdir.frontend.llama import build_decode_step
from vdir.isa import index_ranges
from vdir.lowering.emit import lower_to_ptx
from vdir.models.llama import NAMED_CONFIGS
from vdir.target import EngineKind, get_target
from vdir.testing.gpu import gpu
from vdir.tools.vdir_run import parse_scalars, random_inputs
from vdir.transforms import pipeline as P
from vdir.transforms.pipeline import compile_to_encoded
from vdir.transforms.pipeline_options import PipelineOptions
from vdir.transforms.place import place

STREAM = EngineKind.STREAM.value


def allocated(module, num_sms: int | None = None) -> Graph:
    """``module`` placed, scheduled and allocated as the pipeline does it."""
    opts = PipelineOptions()
    graph = build_graph(module, max_micro_ops=2_000_000)
    graph.target = resolve_target("", num_sms, graph.target)
    P.verify_dependencies(graph)
    place(graph, graph.target.num_sms, opts.stream_loads, opts.phase_balance, opts.keep_trips, opts.side_loads)
    shares, by_liveness = P.schedule_for_allocation(graph, opts.prefetch, opts.stream_room)
    if by_liveness:
        P.allocate_by_liveness(graph, shares, opts.stream_room)
    return graph


def plan(graph: Graph, phases: int) -> list:
    facts = hold_facts(graph, phases)
    by_sm = defaultdict(list)
    for n in graph.nodes:
        by_sm[n.sm].append(n)
    return [pair for sm in sorted(by_sm) for pair in plan_stream_holds(by_sm[sm], facts)], facts


def weight_readers_before(store) -> set[int]:
    """Ids of the computes the store's row is made from (through tile edges) that read a stream tile."""
    out, seen, todo = set(), set(), [store]
    while todo:
        for i in todo.pop().inputs:
            if i.kind == "compute" and i.id not in seen:
                seen.add(i.id)
                todo.append(i)
                if any(t.kind == "load" and t.engine == STREAM for t in i.inputs):
                    out.add(i.id)
    return out


def check_rule(graph: Graph, holds: list, facts, phases: int) -> None:
    readers = defaultdict(list)
    for n in graph.nodes:
        for i in n.inputs:
            readers[i.id].append(n)
    for store, load in holds:
        assert store.kind == "store" and store.id in facts.releasing
        assert load.kind == "load" and load.engine == STREAM and load.sm == store.sm and load.key > store.key
        computes = weight_readers_before(store)
        assert any(p.id in computes for group in load.deps for p in group)
        assert readers[load.id] and all(facts.phase[r.id] >= facts.phase[store.id] + phases for r in readers[load.id])
        # the first such load after the store in its SM's program order
        earlier = [n for n in graph.nodes if n.sm == store.sm and n.engine == STREAM and store.key < n.key < load.key
                   and any(p.id in computes for group in n.deps for p in group)]
        assert not earlier


def test_a_whole_gpu_mlp_block_holds_each_sms_first_down_tile_behind_its_last_activation_store():
    graph = allocated(build_mlp_block(2048, 8192), 132)
    holds, facts = plan(graph, 1)
    check_rule(graph, holds, facts, 1)
    assert len(holds) == 132 and {s.sm for s, _ in holds} == set(range(132))
    assert all(s.name.startswith("store to @act") and load.name.startswith("%wd") for s, load in holds)
    # the down tiles are read one phase after the activation rows: none is held two phases apart
    assert plan(graph, 2)[0] == []
    before = {n.id: list(n.deps) for n in graph.nodes}
    add_stream_holds(holds)
    check_dependencies_point_forward(graph)
    changed = [n for n in graph.nodes if n.deps != before[n.id]]
    assert sorted(n.id for n in changed) == sorted(load.id for _, load in holds)


def test_the_decode_step_holds_the_chain_stores_and_more_with_fewer_phases_between():
    graph = allocated(build_decode_step(NAMED_CONFIGS["tiny"]), 8)
    one, facts1 = plan(graph, 1)
    two, facts2 = plan(graph, 2)
    check_rule(graph, one, facts1, 1)
    check_rule(graph, two, facts2, 2)
    assert two and set(map(tuple, two)) < set(map(tuple, one))


def outputs(program, seed: int, backend: str = "sim", launches: int = 1) -> dict[str, np.ndarray]:
    """The program's outputs on fresh seeded inputs, after ``launches`` launches (``seed``: the
    simulator's interleaving)."""
    inputs = random_inputs(program.buffers, 5, index_ranges(program))
    scalars = parse_scalars([], program.scalars, 5)
    with vdir.compile(program, backend=backend, **({"seed": seed} if backend == "sim" else {})) as exe:
        for _ in range(launches):
            out = exe(**{k: v.copy() for k, v in inputs.items()}, **scalars)
        out = out if isinstance(out, dict) else {exe.outputs[0].name: out}
        return {k: np.asarray(v).copy() for k, v in out.items()}


def released_first(program) -> np.ndarray:
    """The executed records (their indices) of stores and nops that carry ``isa.TRANSFER_RELEASE_FIRST``
    (a compute keeps its family in that byte)."""
    words = program.executed_instrs()
    stores_or_nops = np.isin(isa.OPCODE.column(words), (isa.OP_STORE, isa.OP_NOP))
    return np.nonzero(stores_or_nops & (isa.TRANSFER_FLAGS.column(words) & isa.TRANSFER_RELEASE_FIRST != 0))[0]


@pytest.mark.parametrize(("module", "sms", "options"), [
    (build_mlp_block(256, 1024), 4, {}),
    (build_mlp_stack(2, 256, 512), 8, {}),
    (build_decode_step(NAMED_CONFIGS["tiny"]), 8, {}),
    (build_split_k_mlp_stack(2, 256, 512), 8, {}),
    # six layers in one loop, compiled at two short trip counts and stamped (vdir.analysis.trip_stamp)
    (build_decode_step(replace(NAMED_CONFIGS["tiny"], layers=6)), 8, {"keep_trips": True}),
], ids=["block", "stack", "tiny-decode", "split-k-stack", "stamped-layers"])
def test_holds_change_the_encoding_not_the_bytes(module, sms, options):
    plain = compile_to_encoded(module, num_sms=sms, **options)
    held = compile_to_encoded(module, num_sms=sms, hold_streams=1, **options)
    first = compile_to_encoded(module, num_sms=sms, hold_streams=1, release_first=True, **options)
    assert not np.array_equal(plain.instrs, held.instrs)
    assert released_first(first).size and not released_first(held).size
    for seed in (0, 1):
        a, b, c = outputs(plain, seed), outputs(held, seed), outputs(first, seed)
        assert a.keys() == b.keys() == c.keys()
        for name in a:
            assert np.asarray(a[name]).tobytes() == np.asarray(b[name]).tobytes() == np.asarray(c[name]).tobytes(), name


def test_the_pipeline_takes_the_holds_of_the_target_it_compiles_for_unless_told():
    """hold-streams and release-first left to the target (None, the default): the H100's, one phase with
    release first, and the H200's, none, each the same records as those options spelt out; spelt out
    they win; and the target compiled for decides, not the one the module names."""
    h100, h200 = get_target("h100"), get_target("h200")
    assert (h100.stream_holds, h100.release_first, h200.stream_holds, h200.release_first) == (1, True, 0, False)

    def records(named: str, **options) -> np.ndarray:
        """The block whose module names target ``named``, compiled with ``options``."""
        return compile_to_encoded(build_mlp_block(256, 1024, target=named), num_sms=4, **options).instrs

    held = records("h100")
    assert np.array_equal(held, records("h100", hold_streams=1, release_first=True))
    assert not np.array_equal(held, records("h100", hold_streams=0, release_first=False))
    assert np.array_equal(records("h200"), records("h200", hold_streams=0, release_first=False))
    assert np.array_equal(records("h200", target="h100"), held)
    assert np.array_equal(records("h100", target="h200"), records("h200"))
    assert np.array_equal(records("h100", hold_streams=0), records("h100", hold_streams=0, release_first=True))


@gpu
@pytest.mark.parametrize("phases", [1, 2])
def test_holds_give_the_same_bytes_on_the_gpu(phases):
    """A whole-GPU MLP block and a 2-layer stack, three launches with holds against one without: the same
    bytes (the edges only order; the kernel runs them as bits)."""
    for module in (build_mlp_block(2048, 8192), build_mlp_stack(2, 2048, 8192)):
        plain = outputs(compile_to_encoded(module), 0, backend="cuda")
        held = outputs(compile_to_encoded(module, hold_streams=phases), 0, backend="cuda", launches=3)
        assert plain.keys() == held.keys()
        for name in plain:
            assert plain[name].tobytes() == held[name].tobytes(), name


def stand_in(id: int, kind: str, sm: int = 0, buffer: int = 0, releases: tuple = (), deps: tuple = (),
             bits: tuple = (0,), waits: tuple = (0,)):
    """A laid-out node as :func:`stores_releasing_first` reads it (``bits``: those it toggles,
    ``waits``: those it waits on)."""
    return SimpleNamespace(id=id, kind=kind, sm=sm, buffer=buffer, release_counters=releases, deps=list(deps),
                           signal_bits=list(bits), wait_bits=dict.fromkeys(waits, 1))


def test_release_first_takes_the_releasing_stores_whose_bits_a_stream_load_on_their_sm_waits_on():
    held = stand_in(1, "store", buffer=2, releases=(0,))
    quiet = stand_in(2, "store", buffer=2)  # releases nothing: no fence to keep the load out of
    remote = stand_in(3, "store", sm=1, buffer=2, releases=(1,))
    wrote = stand_in(4, "store", buffer=5, releases=(2,))  # the load reads its bytes: it waits for them anyway
    two = stand_in(5, "store", buffer=2, releases=(3, 4), bits=(3,))
    gemv = stand_in(6, "compute")
    implied = stand_in(7, "store", buffer=2, releases=(5,), bits=(4,))  # the load's wait on it was dropped
    loads = [stand_in(10, "load", buffer=7, deps=[(gemv,), (held,)]),
             stand_in(11, "load", buffer=7, deps=[(quiet, remote), (implied,)]),
             stand_in(12, "load", buffer=5, deps=[(wrote,)]),
             stand_in(13, "load", buffer=7, deps=[(gemv, two)], waits=(0, 3))]
    assert stores_releasing_first(loads) == {1, 5}  # type: ignore[arg-type]
    assert stores_releasing_first([]) == set()


def test_release_first_changes_only_the_flag_where_the_store_releases_one_counter():
    module = build_mlp_block(2048, 8192)
    held = compile_to_encoded(module, hold_streams=1)
    first = compile_to_encoded(module, hold_streams=1, release_first=True)
    a, b = held.executed_instrs(), first.executed_instrs()
    changed = np.nonzero((a != b).any(axis=1))[0]
    # one hold per SM: the first down tile, behind the last activation store
    assert len(changed) == 132 and np.array_equal(changed, released_first(first))
    flag = isa.TRANSFER_RELEASE_FIRST << isa.TRANSFER_FLAGS.shift
    assert np.array_equal(a[changed] ^ b[changed], np.tile(np.eye(1, isa.INSTR_WORDS, 0, dtype=np.uint32) * flag,
                                                           (len(changed), 1)))
    assert all(isa.OPCODE.get(w) == isa.OP_STORE and isa.RELEASE_COUNTER.get(w) for w in b[changed])
    # the listing writes them in the order the store engine performs them (records, not loops)
    listing = isa.disassemble(compile_to_encoded(module, hold_streams=1, release_first=True, reroll=False))
    assert len(re.findall(r"store .*release\(c\d+\) signal\(b\d+\)", listing)) == len(changed)


def test_a_store_of_several_counters_toggles_its_bits_after_its_last_release():
    """The tiny decode step holds stores that release two counters: the store's record and its extra
    release's nop carry the flag, and the bits move to the nop."""
    module = build_decode_step(NAMED_CONFIGS["tiny"])
    held = compile_to_encoded(module, num_sms=8, hold_streams=1)
    first = compile_to_encoded(module, num_sms=8, hold_streams=1, release_first=True)
    a, b = held.executed_instrs(), first.executed_instrs()
    ops, uid = isa.OPCODE.column(b), isa.UOP_ID.column(b)
    nops = [k for k in released_first(first).tolist() if ops[k] == isa.OP_NOP]
    assert nops
    for k in nops:
        store = k - 1
        while ops[store] == isa.OP_NOP:
            store -= 1
        assert uid[store] == uid[k] and ops[store] == isa.OP_STORE and store in released_first(first)
        assert isa.SIGNAL_MASK.get(b[store]) == 0 and isa.SIGNAL_MASK.get(b[k]) == isa.SIGNAL_MASK.get(a[store])
        assert isa.SIGNAL_MASK.get(a[k]) == 0 and (k + 1 == len(b) or uid[k + 1] != uid[k])


def test_the_kernel_releases_before_the_bits_only_where_a_store_says_so():
    module = build_mlp_block(256, 1024)
    plain = lower_to_ptx(compile_to_encoded(module, num_sms=4, hold_streams=1))
    first = lower_to_ptx(compile_to_encoded(module, num_sms=4, hold_streams=1, release_first=True))
    release, bits = "red.release.gpu.global.add.u32", "atom.release.cta.shared.xor.b64"
    assert first.count(release) == plain.count(release) + 1
    # the store engine's completion: a release under the flag, the bits, the release without it
    assert re.search(rf"{re.escape(release)}[^\n]*\n(?:[^\n]*\n){{0,3}}[^\n]*{re.escape(bits)}"
                     rf"(?:[^\n]*\n){{1,4}}[^\n]*{re.escape(release)}", first)
    assemble(first)


@pytest.mark.parametrize("forge, message", [
    (lambda w: isa.TRANSFER_FLAGS.set(w, 0x80), r"transfer flags 0x80 carry unknown bits 0x80"),
    (lambda w: isa.TRANSFER_FLAGS.set(w, isa.TRANSFER_RELEASE_FIRST),
     r"only a store, or a nop of the store engine, releases before its bits \(TRANSFER_RELEASE_FIRST\)"),
])
def test_a_forged_transfer_flag_is_refused_before_any_backend_runs_it(forge, message):
    program = compile_to_encoded(build_mlp_block(256, 1024), num_sms=4)
    load = next(i for i, w in enumerate(program.instrs) if isa.OPCODE.get(w) == isa.OP_LOAD)
    forge(program.instrs[load])
    with pytest.raises(ValueError, match=r"\(SM \d+, \w+ engine, queue position \d+\): " + message):
        vdir.compile(program, backend="sim")


def test_a_release_first_nop_off_the_store_engine_is_refused():
    program = compile_to_encoded(build_mlp_block(256, 1024), num_sms=4)
    ops = isa.OPCODE.column(program.instrs)
    compute = int(np.nonzero(ops == isa.OP_COMPUTE)[0][0])
    isa.OPCODE.set(program.instrs[compute], isa.OP_NOP)
    isa.TRANSFER_FLAGS.set(program.instrs[compute], isa.TRANSFER_RELEASE_FIRST)
    with pytest.raises(ValueError, match=r"compute engine, queue position \d+\): only a store, or a nop of the "
                                         r"store engine"):
        vdir.compile(program, backend="sim")
