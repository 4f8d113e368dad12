"""The layer loop (``graph.layer_loop``) and ``keep_trips``: every layer placed, allocated and given its
dependency bits as the one before, so that the encoder writes the layers as one loop."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.analysis.graph import build_graph, layer_loop
from vdir.dialects.vdir import ProgramOp
from vdir.frontend import ProgramBuilder
from vdir.frontend.examples import build_gemv, build_mlp_stack
from vdir.target import get_target
from vdir.testing.gpu import gpu
from vdir.transforms.fuse import FusePass
from vdir.transforms.layout_deps import layout_dependencies
from vdir.transforms.pipeline import compile_to_encoded, schedule_and_allocate
from vdir.transforms.place import place

#: a stack small enough for the simulator whose layers fill the SMs it is placed on; on SMS SMs its
#: tiles per layer do not divide evenly (on 4 or 8 they do, and every layer is placed alike anyway)
LAYERS, HIDDEN, INTER, SMS = 4, 256, 1024, 6
#: SMs on which each SM's weight tiles of a layer fill its ring of them a whole number of times (on 6
#: they do not, and the ring's rotation, kept at its depth, repeats only every few layers)
LOOP_SMS = 4


def _program(module) -> ProgramOp:
    return next(op for op in module.walk() if isinstance(op, ProgramOp))


def _placed_stack(keep_trips: bool, sms: int = SMS):
    module = build_mlp_stack(LAYERS, HIDDEN, INTER)
    FusePass().apply(None, module)  # type: ignore[arg-type]
    graph = build_graph(module)
    place(graph, sms, keep_trips=keep_trips)
    return graph


def _sms_by_trip(graph) -> dict[int, list[Counter]]:
    """Per template of the layer loop, each trip's SMs (a rematerialised node has a copy per SM)."""
    out: dict[int, list[Counter]] = defaultdict(lambda: [Counter() for _ in range(graph.loop_trips)])
    for n in graph.nodes:
        if n.trip >= 0:
            out[n.template][n.trip][n.sm] += 1
    return out


def test_the_layer_loop_is_the_top_level_repeat_that_runs_the_most():
    b = ProgramBuilder("loops")
    x, y = b.buffer("x", (64, 8)), b.buffer("y", (64, 8))
    with b.repeat(0, 2, name="short"):  # two trips: too few for a loop worth keeping
        for _ in range(3):
            b.store(b.load(x, (0, 0), (1, 8)), y, (0, 0))
    with b.repeat(0, 4, name="small") as i:
        b.store(b.load(x, (i, 0), (1, 8)), y, (i, 0))
    with b.repeat(0, 3, name="big") as j:
        for k in range(2):
            row = b.affine(j, 2, 8 + k)
            b.store(b.load(x, (row, 0), (1, 8)), y, (row, 0))
    module = b.finish()
    loop = layer_loop(_program(module))
    assert loop is not None and loop.induction_var.name_hint == "big"
    graph = build_graph(module)
    assert graph.loop_trips == 3
    trips = Counter(n.trip for n in graph.nodes)
    assert trips == {-1: 2 * 3 * 2 + 4 * 2, 0: 4, 1: 4, 2: 4}
    # each trip's micro-ops are numbered alike: the same template is the same op of the body
    by_template = defaultdict(set)
    for n in graph.nodes:
        if n.trip >= 0:
            by_template[n.template].add(n.name.split("[")[0])
    assert sorted(by_template) == [0, 1, 2, 3] and all(len(v) == 1 for v in by_template.values())


def test_a_program_without_a_repeat_of_three_trips_has_no_layer_loop():
    b = ProgramBuilder("flat")
    x, y = b.buffer("x", (4, 8)), b.buffer("y", (4, 8))
    with b.repeat(0, 2) as i:
        b.store(b.load(x, (i, 0), (1, 8)), y, (i, 0))
    graph = build_graph(b.finish())
    assert graph.loop_trips == 0 and {n.trip for n in graph.nodes} == {-1}


def test_keep_trips_places_every_layer_as_the_first():
    kept = _sms_by_trip(_placed_stack(keep_trips=True))
    assert kept and all(all(t == trips[0] for t in trips) for trips in kept.values())
    # the default rotates the phases' extra tiles from layer to layer: the check above would fail
    rotated = _sms_by_trip(_placed_stack(keep_trips=False))
    assert any(any(t != trips[0] for t in trips) for trips in rotated.values())


def test_keep_trips_leaves_a_loop_whose_trips_do_not_fill_the_sms():
    """A gemv's row loop has one tile per trip: placing every tile on the first one's SM would put them
    all on one SM, so the option does not apply."""
    def sms(keep_trips: bool) -> list[int]:
        graph = build_graph(build_gemv(512, 256))
        assert graph.loop_trips >= 3
        place(graph, 4, keep_trips=keep_trips)
        return [n.sm for n in graph.nodes]

    assert sms(True) == sms(False)
    assert len(set(sms(True))) == 4


def _by_template_and_sm(graph) -> dict[tuple[int, int], dict[int, object]]:
    """The layer loop's nodes by (template, SM) and trip."""
    out: dict[tuple[int, int], dict[int, object]] = defaultdict(dict)
    for n in graph.nodes:
        if n.trip >= 0:
            out[(n.template, n.sm)][n.trip] = n
    return out


def test_rings_repeat_from_trip_to_trip():
    """With keep_trips each tile takes the same shared-memory slot in every trip after the first (the
    bits settle into a repeating pattern a few trips in: the next test counts the loops they allow)."""
    graph = _placed_stack(keep_trips=True, sms=LOOP_SMS)
    assert graph.trips_kept
    layout_dependencies(graph, schedule_and_allocate(graph, 2))
    nodes = _by_template_and_sm(graph)
    later = range(1, LAYERS)
    assert all(len({trips[t].smem for t in later}) == 1 for trips in nodes.values())
    # without the option, the rings' rotation differs from trip to trip
    graph = _placed_stack(keep_trips=False, sms=LOOP_SMS)
    layout_dependencies(graph, schedule_and_allocate(graph, 2))
    assert any(len({trips[t].smem for t in later if t in trips}) > 1 for trips in _by_template_and_sm(graph).values())


def test_the_encoded_stack_does_not_grow_with_its_layers():
    """Kept alike, the layers are one loop in every queue: 12 layers encode to the same records as 8.
    Without the option every layer adds its instructions."""
    def records(layers: int, keep_trips: bool) -> int:
        module = build_mlp_stack(layers, HIDDEN, INTER)
        return len(compile_to_encoded(module, num_sms=LOOP_SMS, keep_trips=keep_trips).instrs)

    assert records(12, True) == records(8, True)
    assert records(12, False) > records(8, False) * 1.4


def test_every_queue_is_one_loop_of_every_layer():
    """The first layer waits on nothing from a layer before and nothing waits on the last, yet every
    queue runs them in its one loop: the first trip's waits that the others have are waits met at once,
    its first row load stays on the load engine with a count the loop steps into, and the last trip
    signals and releases what the others do. Not one record is left outside the loop. (On 8 SMs: on
    4, each SM's layer has too many producers for every one to keep its bits, and the bits of some
    SMs are laid out without the layer loop's rules.)"""
    program = compile_to_encoded(build_mlp_stack(8, HIDDEN, INTER), num_sms=8, keep_trips=True)
    for sm in range(program.num_sms):
        for e in range(program.num_engines):
            records = program.queue(sm, e)
            if len(records):
                (loop,) = isa.queue_loops(records)
                assert (loop.record, loop.end, loop.trips) == (0, len(records), 8)


def _outputs_with_and_without(layers: int, hidden: int, inter: int, sms: int, backend: str,
                              **options) -> list[np.ndarray]:
    """The stack's output row block compiled without and with ``keep_trips``, on fresh random inputs."""
    rng = np.random.default_rng()
    r = lambda shape, s=1.0, o=0.0: (rng.standard_normal(shape) * s + o).astype(bfloat16)  # noqa: E731
    inputs = {"hs": r((layers + 1, hidden)), "g": r((layers, hidden), 0.1, 1.0),
              "wg": r((layers * inter, hidden), hidden ** -0.5), "wu": r((layers * inter, hidden), hidden ** -0.5),
              "wd": r((layers * hidden, inter), inter ** -0.5)}
    outs = []
    for keep_trips in (False, True):
        program = compile_to_encoded(build_mlp_stack(layers, hidden, inter), num_sms=sms, keep_trips=keep_trips)
        assert program.has_loops or not keep_trips
        hs = inputs["hs"].copy()
        hs[1:] = np.nan
        with vdir.compile(program, backend=backend, **options) as exe:
            outs.append(np.asarray(exe(**{**inputs, "hs": hs})["hs"]))
    assert not np.isnan(outs[1].astype(np.float32)).any()
    return outs


def test_a_stack_placed_with_keep_trips_computes_the_same_bits():
    """Placement, slots and bits move micro-ops between SMs and change their waits, never their
    arithmetic: the stack's output is the same with and without the option, bit for bit, on the
    simulator (race-checked), which runs the loops the option lets the encoder write."""
    plain, kept = _outputs_with_and_without(8, HIDDEN, INTER, LOOP_SMS, "sim")  # 8 layers: loops form
    assert np.array_equal(plain.view(np.uint16), kept.view(np.uint16))


#: a stack whose layer loop ``vdir-pipeline`` stamps from two short compiles (more layers than the two
#: together, every queue one loop of the layers on these SMs): (layers, hidden, intermediate, SMs)
STAMPED_STACK = (12, HIDDEN, INTER, 8)
#: the same on the GPU, a larger one
STAMPED_GPU_STACK = (12, 512, 2048, 32)


def _stamped_log(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vdir.transforms.pipeline"]


def test_a_stamped_stack_computes_the_same_bits(caplog):
    """A stack whose layer loop is stamped (``vdir.analysis.trip_stamp``) runs on the simulator, race
    checked, to the bits of the same stack compiled without ``keep_trips``."""
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        plain, kept = _outputs_with_and_without(*STAMPED_STACK, "sim")
    assert _stamped_log(caplog) == ["layer loop of 12 trips stamped from 4 and 5"]
    assert np.array_equal(plain.view(np.uint16), kept.view(np.uint16))


@gpu
@pytest.mark.parametrize("run_loops", [False, True])
def test_a_stamped_stack_computes_the_same_bits_on_the_gpu(caplog, run_loops):
    """The same on the H200, the loops unrolled on the host or run by the engines."""
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        plain, kept = _outputs_with_and_without(*STAMPED_GPU_STACK, "cuda", options={"run_loops": run_loops})
    assert _stamped_log(caplog) == ["layer loop of 12 trips stamped from 4 and 5"]
    assert np.array_equal(plain.view(np.uint16), kept.view(np.uint16))


@gpu
@pytest.mark.parametrize("run_loops", [False, True])
def test_a_stack_placed_with_keep_trips_computes_the_same_bits_on_the_gpu(run_loops):
    """The same on the H200, every SM: the first trip's waits met at once and the last trip's
    signals and releases that nothing awaits change no result, and nothing hangs; whether the loops
    are unrolled on the host or the engines run them (lowering option ``run_loops``)."""
    plain, kept = _outputs_with_and_without(8, 1024, 4096, get_target("h200").num_sms, "cuda",
                                            options={"run_loops": run_loops})
    assert np.array_equal(plain.view(np.uint16), kept.view(np.uint16))
