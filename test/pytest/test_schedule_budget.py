"""Memory-aware hoisting: loads moved ahead of a cross-SM wait only where the SM's tiles still fit.

``vdir-schedule`` hoists the next phase's weight tiles ahead of each load that
waits on other SMs; where that makes more tiles live than an SM holds,
``vdir-pipeline`` used to give up hoisting altogether. Hoisting within a
budget (``schedule_within_budget``, the liveness of
``vdir/analysis/liveness.py``) keeps the hoists that fit. The live-bytes
account is checked by hand, and the simulator, with race checking, is the
oracle for a program the pipeline compiles this way.

Hoisting orders one queue: it applies where a load queue holds both the
waiting loads and the independent ones, i.e. with ``stream-loads=false`` (or
on a target without a stream engine); with the stream engine nothing is
hoisted (``test/transforms/schedule-hoist.mlir``).
"""

from __future__ import annotations

from vdir.analysis.graph import Node
from vdir.analysis.liveness import LiveBytes, TileLife
from vdir.diagnostics import PassFailure
from vdir.frontend.llama import LlamaConfig, build_decode_step
from vdir.isa import tile_arena_bytes
from vdir.models.llama import LlamaDecoder
from vdir.target import get_target
from vdir.testing.llama import MirrorModel, follow_mirror_exactly, random_weights
from vdir.transforms import pipeline
from vdir.transforms.alloc_smem import DEFAULT_STREAM_ROOM


def _node(i: int) -> Node:
    return Node(id=i, kind="load", engine="load", seq=i, name=f"%t{i}", loc="")


def test_live_bytes_count_each_tile_from_its_producer_to_its_last_use():
    a, b, c, d, e = (_node(i) for i in range(5))
    # a lives over a..c, b over b..b (unused), d over d..e
    live = LiveBytes([a, b, c, d, e], [TileLife(a, 100, c.key, [c]), TileLife(b, 10, b.key, []),
                                       TileLife(d, 1000, e.key, [e])])
    assert live.live.tolist() == [100, 110, 100, 1000, 1000]
    assert live.peak() == 1000
    # d made live from b on: b..c gain 1000 bytes
    assert live.fits_earlier(d, b, 1110) and not live.fits_earlier(d, b, 1109)
    live.start_earlier(d, b)
    assert live.live.tolist() == [100, 1110, 1100, 1000, 1000]


#: one layer of the Llama-3.2-1B width on 4 SMs: its 64 KiB weight tiles fill the arena, so with one
#: load queue rings fit at no hoisting depth and the pipeline hoists within the arena
WIDE_LAYER = LlamaConfig(layers=1, hidden=2048, heads=32, kv_heads=8, head_dim=64, intermediate=1024, vocab=2048,
                         max_context=32, block=8, name="wide_layer")


def test_a_program_whose_weight_tiles_fill_the_arena_is_hoisted_within_it(monkeypatch):
    taken, hoisted = [], []
    real_try, real_schedule = pipeline._try_schedule_and_allocate, pipeline.schedule_within_budget

    def schedule(graph, nodes, queues, prefetch, budget):
        real_schedule(graph, nodes, queues, prefetch, budget)
        hoisted.extend(n.name for n in nodes if n.hoist < 0)

    monkeypatch.setattr(pipeline, "schedule_within_budget", schedule)
    monkeypatch.setattr(pipeline, "_try_schedule_and_allocate",
                        lambda graph, per_sm, attempt, room: real_try(graph, per_sm, attempt, room)
                        and not taken.append(attempt))
    program = pipeline.compile_to_encoded(build_decode_step(WIDE_LAYER), num_sms=4, stream_loads=False)
    assert taken and taken[-1].budgeted and taken[-1].prefetch == 2, taken
    # weight tiles of the next phase were moved ahead of a wait (the MLP's gate and down weights)
    assert any(name.startswith("%wgt") for name in hoisted) and any(name.startswith("%wd") for name in hoisted)
    weights = random_weights(WIDE_LAYER, seed=3)
    with LlamaDecoder(WIDE_LAYER, weights, backend="sim", program=program) as decoder:
        follow_mirror_exactly(decoder, MirrorModel(WIDE_LAYER, weights), token=7, steps=3)


def test_an_sm_that_does_not_fit_retries_alone_at_a_smaller_share(monkeypatch):
    """Budgeted hoisting falls back SM by SM: an SM whose allocation fails at the first share is
    scheduled again at the next one, and the SMs that fitted keep what they got."""
    budgets: dict[int, list[int]] = {}
    real_schedule, real_allocate = pipeline.schedule_within_budget, pipeline.allocate_sm

    def schedule(graph, nodes, queues, prefetch, budget):
        budgets.setdefault(nodes[0].sm, []).append(budget)
        return real_schedule(graph, nodes, queues, prefetch, budget)

    def allocate(graph, sm, nodes, intern, by_liveness=True, tiles=None, room=DEFAULT_STREAM_ROOM):
        if sm == 1 and len(budgets[1]) == 1:
            raise PassFailure("does not fit")
        return real_allocate(graph, sm, nodes, intern, by_liveness, tiles, room)

    monkeypatch.setattr(pipeline, "schedule_within_budget", schedule)
    monkeypatch.setattr(pipeline, "allocate_sm", allocate)
    pipeline.compile_to_encoded(build_decode_step(WIDE_LAYER), num_sms=4, stream_loads=False)
    arena = tile_arena_bytes(get_target("h200").smem_per_block)
    first, second = (int(arena * f) for f in pipeline.HOIST_BUDGET_FRACTIONS[:2])
    assert budgets[1] == [first, second]
    assert all(budgets[sm] == [first] for sm in (0, 2, 3)), budgets


def test_with_the_stream_engine_only_the_attempts_without_hoisting_are_made(monkeypatch):
    """No queue holds both a load that waits on other SMs and one that waits on nothing, so every hoisting
    depth would schedule alike: the pipeline tries rings, then liveness, once each."""
    from vdir.analysis.graph import build_graph
    from vdir.analysis.queues import sm_shares
    from vdir.transforms.place import place
    from vdir.transforms.schedule import can_hoist

    def shares(stream_loads: bool):
        graph = build_graph(build_decode_step(WIDE_LAYER))
        place(graph, 4, stream_loads)
        return graph, sm_shares(graph) or []

    graph, per_sm = shares(True)
    assert not any(can_hoist(graph, queues) for _sm, _nodes, queues in per_sm)
    graph, per_sm = shares(False)
    assert all(can_hoist(graph, queues) for _sm, _nodes, queues in per_sm)
    tried = []
    real_try = pipeline._try_schedule_and_allocate
    monkeypatch.setattr(pipeline, "_try_schedule_and_allocate",
                        lambda graph, per_sm, attempt, room: tried.append(attempt)
                        or real_try(graph, per_sm, attempt, room))
    pipeline.compile_to_encoded(build_decode_step(WIDE_LAYER), num_sms=4)
    assert tried and all(a.prefetch == 0 and not a.budgeted for a in tried), tried
