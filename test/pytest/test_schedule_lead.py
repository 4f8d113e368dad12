"""``vdir-schedule`` issues a queue's first large load ahead of the small loads that open it, where no small
one is needed sooner (``lead_with_large_load``).

An SM whose stream queue holds a gemv's ``x`` and then its first weight tile
(an SM with a load that waits: elsewhere ``vdir-place`` leaves ``x`` on the
idle load engine) would, with ``x`` first, spend a micro-op's fixed cost
before the load that takes longest to land starts. An MLP block's SM needs
its RMSNorm weight row before its gate tile, and completions stay in queue
order, so that queue keeps its order. The simulator, with race checking,
runs the gemv as placed and scheduled.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from vdir.analysis.graph import Graph, Node, build_graph
from vdir.device_runtime.sim import simulate
from vdir.families import TileSig
from vdir.frontend.examples import build_gemv, build_mlp_block
from vdir.transforms import schedule as schedule_module
from vdir.transforms.place import DEFAULT_SIDE_LOADS, place
from vdir.transforms.schedule import lead_with_large_load, schedule


def _queues(graph: Graph, engine: str) -> dict[int, list[Node]]:
    by_sm: dict[int, list[Node]] = {}
    for n in graph.nodes:
        if n.engine == engine:
            by_sm.setdefault(n.sm, []).append(n)
    return {sm: sorted(q, key=lambda n: n.pos) for sm, q in by_sm.items()}


def _scheduled(module, num_sms: int, x_streams: bool = False) -> Graph:
    """``module`` placed and scheduled; ``x_streams``: every load that waits on nothing on the stream
    engine (``side_loads="none"``), as on an SM whose loads wait (by default ``vdir-place`` leaves a
    gemv's ``x`` on the load engine)."""
    graph = build_graph(module)
    place(graph, num_sms, True, side_loads="none" if x_streams else DEFAULT_SIDE_LOADS)
    schedule(graph, prefetch=0)
    return graph


@pytest.mark.parametrize("rows", [64, 128])  # one and two 16-row tiles per SM
def test_a_small_gemv_streams_its_first_weight_tile_before_x(rows):
    graph = _scheduled(build_gemv(rows, 2048), num_sms=4, x_streams=True)
    for sm, queue in _queues(graph, "stream").items():
        first, second = queue[0], queue[1]
        assert first.name.startswith("%w0[") and second.name == "%x0", (sm, [n.name for n in queue[:3]])
        assert first.tile is not None and second.tile is not None
        assert first.tile.nbytes >= 8 * second.tile.nbytes


def test_an_sm_with_more_tiles_keeps_x_first():
    """Four tiles per SM: x behind the first would hold a place in flight until that tile lands (measured
    slower on the H200, MAX_LEAD_TILES)."""
    graph = _scheduled(build_gemv(256, 2048), num_sms=4, x_streams=True)
    for sm, queue in _queues(graph, "stream").items():
        assert queue[0].name == "%x0" and len(queue) == 5, (sm, [n.name for n in queue])


@pytest.mark.parametrize("rows", [64, 256])
def test_a_gemv_placed_by_default_issues_x_on_the_load_engine_beside_its_tiles(rows):
    graph = _scheduled(build_gemv(rows, 2048), num_sms=4)
    loads, stream = _queues(graph, "load"), _queues(graph, "stream")
    assert sorted(loads) == sorted(stream) == [0, 1, 2, 3]
    for sm in range(4):
        assert [n.name for n in loads[sm]] == ["%x0"], sm
        assert all(n.name.startswith("%w0[") for n in stream[sm]) and len(stream[sm]) == rows // 64, sm


def test_an_mlp_block_keeps_the_norm_weight_its_first_compute_needs_ahead_of_the_gate_tile(monkeypatch):
    """The consumer guard, not the tile limit: with the limit lifted, the RMSNorm's rows still go first."""
    monkeypatch.setattr(schedule_module, "MAX_LEAD_TILES", 1 << 30)
    graph = _scheduled(build_mlp_block(512, 1024), num_sms=4)
    for sm, queue in _queues(graph, "stream").items():
        program_order = sorted(queue, key=lambda n: (n.seq, n.id))
        assert [n.id for n in queue] == [n.id for n in program_order], sm


def _load(i: int, nbytes: int) -> Node:
    return Node(id=i, kind="load", engine="stream", seq=i, name=f"%l{i}", loc="",
                tile=TileSig((1, nbytes // 2), "bf16"))


def _use(i: int, *inputs: Node) -> Node:
    return Node(id=i, kind="compute", engine="compute", seq=i, name=f"%c{i}", loc="", inputs=list(inputs))


@pytest.mark.parametrize("small_needed_first", [False, True])
def test_the_large_load_leads_only_where_no_small_load_is_needed_before_it(small_needed_first):
    x, w = _load(0, 4096), _load(1, 65536)
    uses = [_use(2, x), _use(3, w, x)] if small_needed_first else [_use(2, w, x)]
    queue = [x, w]
    lead_with_large_load(queue, [("stream", queue), ("compute", uses)])
    moved = sorted(queue, key=lambda n: (n.seq, n.hoist, n.id))
    assert [n.id for n in moved] == ([0, 1] if small_needed_first else [1, 0])


def test_a_queue_opened_by_a_waiting_load_is_left_alone():
    producer = _load(0, 4096)
    x, w = _load(1, 4096), _load(2, 65536)
    x.deps.append((producer,))
    queue = [x, w]
    lead_with_large_load(queue, [("stream", queue), ("compute", [_use(3, w, x)])])
    assert (w.seq, w.hoist) == (2, 0)


def test_the_scheduled_gemv_matches_numpy_on_the_simulator():
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(build_gemv(128, 2048), num_sms=4)
    rng = np.random.default_rng(11)
    w = rng.standard_normal((128, 2048)).astype(ml_dtypes.bfloat16)
    x = rng.standard_normal((1, 2048)).astype(ml_dtypes.bfloat16)
    y = np.full((1, 128), np.nan, dtype=ml_dtypes.bfloat16)
    simulate(program, [w, x, y])  # races are reported as errors
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    assert np.max(np.abs(y.astype(np.float64) - ref)) <= 1e-2 * np.max(np.abs(ref))
