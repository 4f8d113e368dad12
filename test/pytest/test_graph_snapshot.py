"""Graph.snapshot / Graph.restore: the rollback ``vdir-pipeline`` relies on.

When the tiles of a schedule with load hoisting do not fit in shared memory,
``schedule_and_allocate`` restores the graph and schedules again with less
hoisting. These tests check that a restore undoes every pass (the retried
graph encodes exactly like a fresh one) and that the scheduled form written
from a graph reads back into the same facts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from vdir.analysis.graph import Graph, GroupInterner, Node, build_graph, graph_to_ir
from vdir.diagnostics import PassFailure
from vdir.tools.common import parse_module_file
from vdir.transforms import pipeline
from vdir.transforms.alloc_smem import DEFAULT_STREAM_ROOM, StreamRoom, allocate, allocate_sm
from vdir.transforms.encode import encode
from vdir.transforms.layout_deps import layout_dependencies
from vdir.transforms.place import place
from vdir.transforms.schedule import schedule

MLP = Path(__file__).parents[1] / "transforms" / "Inputs" / "mlp_small.mlir"


def placed_graph(num_sms: int = 2, stream_loads: bool = True) -> Graph:
    """The small MLP, expanded and placed."""
    graph = build_graph(parse_module_file(MLP))
    place(graph, num_sms, stream_loads)
    return graph


def node_facts(graph: Graph) -> list[tuple]:
    """Every node's pass-filled facts, with groups as ids (comparable across graphs)."""
    return [
        (n.id, n.seq, n.hoist, n.sm, n.pos, n.smem, [[p.id for p in g] for g in n.deps],
         dict(n.wait_bits), list(n.signal_bits), list(n.wait_counters), list(n.release_counters))
        for n in graph.nodes
    ]


def test_restore_undoes_every_pass() -> None:
    graph = placed_graph()
    before = node_facts(graph)
    saved = graph.snapshot()
    schedule(graph, 2)
    allocate(graph)
    layout_dependencies(graph)
    assert node_facts(graph) != before
    graph.restore(saved)
    assert node_facts(graph) == before
    assert (graph.smem_bytes, graph.num_counters, graph.counter_counts) == (0, 0, {})


def test_rollback_retries_like_a_fresh_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first attempt fails at its second SM: the retry with prefetch 1 must match a fresh graph's.

    The pipeline schedules and allocates SM by SM; the failing attempt has
    already scheduled and allocated both SMs, so its undo is what is tested.
    The loads share one queue (``stream-loads=false``), where the hoisting
    depths differ (with the stream engine every depth schedules alike and
    the pipeline tries none but 0).
    """
    attempts: list[int] = []

    def allocate_failing_once(graph: Graph, sm: int, nodes: list[Node], intern: GroupInterner,
                              by_liveness: bool = True, tiles=None, room: StreamRoom = DEFAULT_STREAM_ROOM) -> int:
        attempts.append(sm)
        used = allocate_sm(graph, sm, nodes, intern, by_liveness, tiles, room)
        if len(attempts) == 2:
            raise PassFailure("tiles do not fit")
        return used

    monkeypatch.setattr(pipeline, "allocate_sm", allocate_failing_once)
    retried = placed_graph(stream_loads=False)
    pipeline.schedule_and_allocate(retried, 2)
    layout_dependencies(retried)

    fresh = placed_graph(stream_loads=False)
    schedule(fresh, 1)
    allocate(fresh)
    layout_dependencies(fresh)

    assert attempts == [0, 1, 0, 1]
    assert node_facts(retried) == node_facts(fresh)
    assert retried.smem_bytes == fresh.smem_bytes
    assert (encode(retried).instrs == encode(fresh).instrs).all()


def test_pipeline_schedules_like_the_passes() -> None:
    """Scheduling and allocating SM by SM gives the facts of the two passes run one after the other."""
    staged = placed_graph()
    pipeline.schedule_and_allocate(staged, 2)
    fresh = placed_graph()
    schedule(fresh, 2)
    allocate(fresh, by_liveness=False)
    assert node_facts(staged) == node_facts(fresh)
    assert staged.smem_bytes == fresh.smem_bytes


#: the passes that bring a placed graph to each stage
STEPS = {
    "placed": [],
    "scheduled": [schedule],
    "allocated": [schedule, allocate],
    "laid-out": [schedule, allocate, layout_dependencies],
}


@pytest.mark.parametrize("stage", list(STEPS))
def test_scheduled_form_reads_back(stage: str) -> None:
    """graph_to_ir and build_graph are inverse on every stage's facts."""
    graph = placed_graph()
    for step in STEPS[stage]:
        step(graph)
    program = graph_to_ir(graph, stage)
    program.verify()
    again = build_graph(ModuleOp([program]))
    assert again.stage == stage
    assert sorted(node_facts(again)) == sorted(node_facts(graph))
    assert (again.num_sms, again.smem_bytes, again.counter_counts) == \
        (graph.num_sms, graph.smem_bytes, graph.counter_counts)
