"""``vdir.analysis.flag_words``: which hand-offs between SMs may carry a flag in every word.

The plan is read on placed graphs: an MLP block's activation rows (stored by
the gate and up SMs, read by the down SMs) qualify; a group whose stores
share a byte with another store, a load that reads bytes its group does not
write, a conditional store, or a load larger than the limit do not; in a
decode step the residual, query, heads and activation rows qualify and the
block states (read across launches) and the inputs do not.
"""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.context import Context

from vdir.analysis.flag_words import (
    NO_PLAN,
    carried_by_flag_words,
    mark_flag_words,
    plan_flag_words,
    sole_writers,
    words_only_buffers,
)
from vdir.analysis.graph import Graph, build_graph
from vdir.analysis.runtime_values import Condition, RuntimeSource
from vdir.analysis.stages import resolve_target
from vdir.frontend.examples import build_mlp_block
from vdir.frontend.llama import build_decode_step
from vdir.models.llama import NAMED_CONFIGS
from vdir.transforms.fuse import FusePass
from vdir.transforms.place import place
from vdir.transforms.verify_deps import verify_dependencies

HIDDEN, INTER, SMS = 256, 512, 4


def _placed(module, sms: int = SMS) -> Graph:
    FusePass().apply(Context(), module)
    graph = build_graph(module)
    graph.target = resolve_target("", sms, graph.target)
    verify_dependencies(graph)
    place(graph, sms, True, True, False, "idle")
    return graph


def _buffer(graph: Graph, name: str) -> int:
    return next(i for i, a in enumerate(graph.args) if a.name == name)


def _accesses(graph: Graph, name: str, kind: str) -> set[int]:
    b = _buffer(graph, name)
    return {n.id for n in graph.nodes if n.kind == kind and n.buffer == b}


@pytest.fixture
def block() -> Graph:
    return _placed(build_mlp_block(HIDDEN, INTER))


def test_no_limit_no_plan(block):
    assert plan_flag_words(block, 0) is NO_PLAN


def test_an_mlp_blocks_activation_rows_qualify(block):
    plan = plan_flag_words(block, 4096)
    act = _buffer(block, "act")
    assert plan.buffers == {act}
    assert plan.loads == _accesses(block, "act", "load") != set()
    assert plan.stores == _accesses(block, "act", "store") != set()
    # marked, each load gets exactly one group through its words: a hand-off between SMs of stores into act
    mark_flag_words(block, plan)
    crossing = 0
    for load in (n for n in block.nodes if n.id in plan.loads):
        carried = [g for g in load.deps if carried_by_flag_words(load, g)]
        assert len(carried) == 1 and all(p.kind == "store" and p.buffer == act for p in carried[0])
        crossing += any(p.sm != load.sm for p in carried[0])
    assert crossing > 0


def test_loads_above_the_limit_do_not(block):
    act = _buffer(block, "act")
    biggest = max(n.tile.nbytes for n in block.nodes if n.kind == "load" and n.buffer == act)
    smaller = plan_flag_words(block, biggest - 1)
    by_id = {n.id: n for n in block.nodes}
    assert not any(by_id[i].tile.nbytes > biggest - 1 for i in smaller.loads)
    assert plan_flag_words(block, 16).loads == frozenset()


def test_a_store_that_shares_bytes_with_another_does_not(block):
    act = _buffer(block, "act")
    stores = sorted((n for n in block.nodes if n.kind == "store" and n.buffer == act), key=lambda n: n.col)
    stores[1].col = stores[0].col  # two writers of the same bytes in one launch
    plan = plan_flag_words(block, 4096)
    assert stores[0].id not in plan.stores and stores[1].id not in plan.stores
    waiting = [n for n in block.nodes if any(stores[0] in g for g in n.deps)]
    assert waiting and not any(n.id in plan.loads for n in waiting)


def test_a_conditional_store_does_not(block):
    act = _buffer(block, "act")
    store = next(n for n in block.nodes if n.kind == "store" and n.buffer == act)
    store.guard = Condition(RuntimeSource(-1, 0, "pos", 0, 8), 1, 0)
    plan = plan_flag_words(block, 4096)
    assert store.id not in plan.stores
    assert not any(n.id in plan.loads for n in block.nodes for g in n.deps if store in g)


def test_a_load_of_bytes_its_group_does_not_write_does_not(block):
    act = _buffer(block, "act")
    load = next(n for n in block.nodes if n.kind == "load" and n.buffer == act)
    rows, cols = load.tile.shape
    load.tile = dataclasses.replace(load.tile, shape=(rows, cols + 8))  # 8 more columns than its producers write
    plan = plan_flag_words(block, 1 << 20)
    assert load.id not in plan.loads


def test_a_decode_steps_rows_qualify_and_its_states_do_not():
    graph = _placed(build_decode_step(NAMED_CONFIGS["tiny"]), sms=8)
    plan = plan_flag_words(graph, 4096)
    flagged = {graph.args[b].name for b in plan.buffers}
    assert {"hs", "q", "ao"} <= flagged
    assert "states" not in flagged
    assert not any(graph.args[b].is_input and not graph.args[b].is_output for b in plan.buffers)


def test_a_store_that_reaches_into_its_neighbours_bytes_is_no_sole_writer(block):
    """Adjacent stores (each its own bytes) are sole writers; one moved half a tile onto the next is not,
    nor is the one it overlaps, while the stores on either side of the pair still are."""
    act = _buffer(block, "act")
    stores = sorted((n for n in block.nodes if n.kind == "store" and n.buffer == act), key=lambda n: n.col)
    assert len(stores) >= 4 and len(sole_writers(block, stores)) == len(stores)
    stores[1].col += stores[1].tile.shape[1] // 2  # now half over stores[2]'s bytes
    sole = sole_writers(block, stores)
    assert id(stores[1]) not in sole and id(stores[2]) not in sole
    assert id(stores[0]) in sole and id(stores[3]) in sole and len(sole) == len(stores) - 2
    # and the hand-offs that read them lose their flag words
    plan = plan_flag_words(block, 1 << 20)
    assert stores[1].id not in plan.stores and stores[2].id not in plan.stores


def _carried(graph: Graph, plan) -> list[tuple]:
    """(load, group) of every group the plan's loads take through words, after marking."""
    mark_flag_words(graph, plan)
    return [(n, g) for n in graph.nodes if n.id in plan.loads for g in n.deps if carried_by_flag_words(n, g)]


def _local(pairs: list[tuple]) -> int:
    """How many of the (load, group) pairs have every producer on the load's SM."""
    return sum(all(p.sm == load.sm for p in g) for load, g in pairs)


def test_an_mlp_blocks_scratch_act_goes_as_words_alone():
    """act an output: its stores keep their plain copies; act scratch: every load of act polls words, and
    act's stores write words alone."""
    shown = _placed(build_mlp_block(HIDDEN, INTER))
    assert _carried(shown, plan_flag_words(shown, 4096)) and words_only_buffers(shown) == frozenset()
    scratch = _placed(build_mlp_block(HIDDEN, INTER, scratch_act=True))
    plan = plan_flag_words(scratch, 4096)
    assert plan.loads == _accesses(scratch, "act", "load")
    _carried(scratch, plan)
    assert words_only_buffers(scratch) == {_buffer(scratch, "act")}


def test_a_group_on_its_waiters_sm_is_kept_only_where_the_buffer_goes_as_words_alone():
    """The decode step's residual chunks read back on the SM that stored them: with its rows scratch
    those groups join the plan (and hs goes as words alone); with none scratch, a group on a load's own
    SM, which may also be its slot wait, is left to bits (words stand for that wait only where no
    plain store follows them)."""
    scratch = _placed(build_decode_step(NAMED_CONFIGS["tiny"]), sms=8)
    assert _local(_carried(scratch, plan_flag_words(scratch, 4096))) > 0
    assert _buffer(scratch, "hs") in words_only_buffers(scratch)
    module = build_decode_step(NAMED_CONFIGS["tiny"])
    module.ops.first.properties["scratch_args"] = None
    shown = _placed(module, sms=8)
    pairs = _carried(shown, plan_flag_words(shown, 4096))
    assert pairs and _local(pairs) == 0 and words_only_buffers(shown) == frozenset()
