"""Stream holds (``vdir.analysis.stream_holds``, ``vdir-hold-streams``, ``vdir-pipeline{hold-streams=N}``).

The plan's pairs are checked against the rule they implement on a whole-GPU
MLP block and the 1B decode step's graph (each pair: a store that releases a
counter, the first later stream load on its SM that reuses a slot of the
computes its row is made from, read ``phases`` phases or more after it); the
holds keep every edge pointing forward; and programs compiled with them give
the same bytes as without on the simulator, whose race checks run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest

import vdir
from vdir.analysis.graph import Graph, build_graph
from vdir.analysis.queues import check_dependencies_point_forward
from vdir.analysis.stages import resolve_target
from vdir.analysis.stream_holds import add_stream_holds, hold_facts, plan_stream_holds
from vdir.frontend.examples import build_mlp_block, build_mlp_stack
from vdir.frontend.llama import build_decode_step
from vdir.isa import index_ranges
from vdir.models.llama import NAMED_CONFIGS
from vdir.target import EngineKind
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


@pytest.mark.parametrize(("module", "sms", "options"), [
    (build_mlp_block(256, 1024), 4, {}),
    (build_mlp_stack(2, 256, 512), 8, {}),
    (build_decode_step(NAMED_CONFIGS["tiny"]), 8, {}),
    # six layers in one loop, compiled at two short trip counts and stamped (vdir.analysis.trip_stamp)
    (build_decode_step(replace(NAMED_CONFIGS["tiny"], layers=6)), 8, {"keep_trips": True}),
], ids=["block", "stack", "tiny-decode", "stamped-layers"])
def test_holds_change_the_encoding_not_the_bytes(module, sms, options):
    plain = compile_to_encoded(module, num_sms=sms, **options)
    held = compile_to_encoded(module, num_sms=sms, hold_streams=1, **options)
    assert not np.array_equal(plain.instrs, held.instrs)
    for seed in (0, 1):
        a, b = outputs(plain, seed), outputs(held, seed)
        assert a.keys() == b.keys()
        for name in a:
            assert np.asarray(a[name]).tobytes() == np.asarray(b[name]).tobytes(), name


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
