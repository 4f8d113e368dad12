"""Stamping the layer loop (``vdir.analysis.trip_stamp``): a program whose trips are kept alike is
compiled at two short trip counts and its encoding stamped to the full count, byte for byte what
compiling every trip gives; where the trips are not alike, the pipeline compiles every trip."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vdir.analysis.graph import build_graph, single_program
from vdir.analysis.trip_stamp import MAX_TRIP_SPAN, SHORT_TRIPS, footprint_refusal, stamp_refusal
from vdir.diagnostics import PassFailure
from vdir.frontend.examples import build_mlp_stack
from vdir.tools.common import default_context, parse_text
from vdir.transforms.pipeline import compile_to_encoded

LAYERS = 12

#: a layer loop of LAYERS gemv layers, each reading the row the layer before stored; {pre}, {row_in},
#: {row_out}, {when} and the buffer rows are varied by the tests below
LAYERS_TEXT = """
vdir.program @layers(%h: !vdir.buffer<{h_rows}x48xbf16>, %w: !vdir.buffer<{w_rows}x48xbf16>) {{
  {pre}
  vdir.repeat %l = 0 to {layers} {{
    %hr = affine.apply affine_map<(d0) -> ({row_in})> (%l)
    %ht = vdir.load %h[%hr, 0] : !vdir.buffer<{h_rows}x48xbf16> -> !vdir.tile<1x48xbf16>
    %next = affine.apply affine_map<(d0) -> ({row_out})> (%l)
    vdir.repeat %i = 0 to 3 {{
      %r = affine.apply affine_map<(d0, d1) -> (d0 * 48 + d1 * 16)> (%l, %i)
      %wt = vdir.load %w[%r, 0] {when} : !vdir.buffer<{w_rows}x48xbf16> -> !vdir.tile<16x48xbf16>
      %yt = vdir.compute gemv(%wt, %ht) : (!vdir.tile<16x48xbf16>, !vdir.tile<1x48xbf16>) -> !vdir.tile<1x16xbf16>
      %c = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
      %s = vdir.store %yt, %h[%next, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<{h_rows}x48xbf16>
    }}
  }}
}}
"""


def _layers(pre: str = "", row_in: str = "d0", row_out: str = "d0 + 1", when: str = "", h_rows: int = LAYERS + 1,
            w_rows: int = LAYERS * 48, layers: int = LAYERS, scalar: str = ""):
    text = LAYERS_TEXT.format(pre=pre, row_in=row_in, row_out=row_out, when=when, h_rows=h_rows, w_rows=w_rows,
                              layers=layers)
    if scalar:
        text = text.replace("%w: !vdir.buffer<", f"{scalar}, %w: !vdir.buffer<", 1)
    return parse_text(default_context(), text)


def _stamp_log(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vdir.transforms.pipeline"]


def _assert_same(a, b) -> None:
    assert a.instrs.shape == b.instrs.shape and np.array_equal(a.instrs, b.instrs)
    assert (a.queues, a.num_counters, a.smem_bytes, a.buffers, a.uop_names) == \
           (b.queues, b.num_counters, b.smem_bytes, b.buffers, b.uop_names)


# ---------------------------------------------------------------------------
# stamped: the bytes of compiling every trip
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("layers", "hidden", "inter", "sms"), [
    (10, 256, 1024, 8), (13, 256, 1024, 16), (11, 512, 2048, 16), (16, 512, 2048, 32),
])
def test_a_stamped_stack_is_the_stack_compiled_trip_by_trip(caplog, layers, hidden, inter, sms):
    module = build_mlp_stack(layers, hidden, inter)
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        stamped = compile_to_encoded(module, num_sms=sms, keep_trips=True)
    assert _stamp_log(caplog) == [f"layer loop of {layers} trips stamped from {SHORT_TRIPS[0]} and {SHORT_TRIPS[1]}"]
    full = compile_to_encoded(module, num_sms=sms, keep_trips=True, stamp_trips=False)
    _assert_same(stamped, full)
    assert stamped.has_loops and len(stamped.instrs) < len(stamped.executed_instrs()) / 3


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(sum(SHORT_TRIPS) + 1, 14), st.sampled_from([64, 128, 256]), st.sampled_from([2, 4]),
       st.integers(1, 16))
def test_stamped_or_not_the_bytes_are_those_of_every_trip(layers, hidden, ratio, sms):
    """Any small stack, stamped where the checks allow it or compiled trip by trip where not: the
    program of compiling every trip."""
    module = build_mlp_stack(layers, hidden, ratio * hidden)
    _assert_same(compile_to_encoded(module, num_sms=sms, keep_trips=True),
                 compile_to_encoded(module, num_sms=sms, keep_trips=True, stamp_trips=False))


def test_the_bench_stack_is_stamped_and_folds_to_a_tenth(caplog):
    """The 16-layer stack of the bench (2048/8192 on every SM): one loop per queue, stamped."""
    module = build_mlp_stack()
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        stamped = compile_to_encoded(module, keep_trips=True)
    assert "stamped" in _stamp_log(caplog)[0]
    _assert_same(stamped, compile_to_encoded(module, keep_trips=True, stamp_trips=False))
    assert len(stamped.executed_instrs()) >= 10 * len(stamped.instrs)


def test_a_stack_whose_queues_do_not_fold_is_compiled_trip_by_trip(caplog):
    """On 4 SMs the 256-wide stack's rings come back only every few layers: no queue ends with a
    loop of one layer, so the pipeline compiles every trip (the same bytes as without stamping)."""
    module = build_mlp_stack(10, 256, 1024)
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        program = compile_to_encoded(module, num_sms=4, keep_trips=True)
    assert "does not end with a loop of the trips" in _stamp_log(caplog)[0]
    _assert_same(program, compile_to_encoded(module, num_sms=4, keep_trips=True, stamp_trips=False))


def test_a_short_loop_is_compiled_trip_by_trip(caplog):
    """A loop of no more trips than the two short compiles together is compiled whole."""
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        compile_to_encoded(build_mlp_stack(sum(SHORT_TRIPS), 256, 1024), num_sms=8, keep_trips=True)
    assert _stamp_log(caplog) == []


def test_without_keep_trips_nothing_is_stamped(caplog):
    with caplog.at_level(logging.DEBUG, logger="vdir.transforms.pipeline"):
        compile_to_encoded(build_mlp_stack(12, 256, 1024), num_sms=8)
    assert _stamp_log(caplog) == []


def test_a_stamped_program_keeps_its_errors_located():
    """A weight buffer too short for the last layers: compiling every trip says where, stamped or not."""
    module = _layers(w_rows=(LAYERS - 1) * 48)
    with pytest.raises(PassFailure) as stamped:
        compile_to_encoded(module, num_sms=2, keep_trips=True)
    with pytest.raises(PassFailure) as full:
        compile_to_encoded(module, num_sms=2, keep_trips=True, stamp_trips=False)
    assert str(stamped.value) == str(full.value) and "%w" in str(stamped.value)


# ---------------------------------------------------------------------------
# refused: the program's text
# ---------------------------------------------------------------------------


def test_the_plain_layer_loop_may_be_stamped():
    assert stamp_refusal(single_program(_layers())) is None


@pytest.mark.parametrize(("variant", "reason"), [
    (dict(pre="%x = vdir.load %h[0, 0] : !vdir.buffer<13x48xbf16> -> !vdir.tile<1x48xbf16>"),
     "a micro-op lies outside the layer loop ('vdir.load')"),
    (dict(row_out="d0 floordiv 2 + 1"), "an offset of 'vdir.store' is not affine in the layer loop's variable"),
    (dict(row_out="(d0 mod 4) + 1"), "an offset of 'vdir.store' is not affine in the layer loop's variable"),
    (dict(scalar="%n: index in 0 to 4", when="when %n >= 1"), "a micro-op of the layer loop has a condition"),
])
def test_a_loop_whose_later_trips_may_differ_is_refused(variant, reason):
    assert stamp_refusal(single_program(_layers(**variant))).startswith(reason)


def test_a_loop_that_is_not_the_whole_program_body_may_still_be_the_layer_loop():
    """A constant before the loop is no micro-op: the loop may be stamped."""
    module = _layers(pre="%zero = arith.constant 0 : index")
    assert stamp_refusal(single_program(module)) is None


def test_a_program_without_a_layer_loop_is_refused():
    module = _layers(layers=2, h_rows=3, w_rows=96)  # under graph.MIN_LAYER_TRIPS trips
    assert stamp_refusal(single_program(module)) == "the program has no layer loop"


# ---------------------------------------------------------------------------
# refused: the footprints of the trips
# ---------------------------------------------------------------------------


def test_neighbouring_trips_may_share_bytes():
    """Layer l reads row l and writes row l + 1: one trip apart, within MAX_TRIP_SPAN."""
    assert footprint_refusal(build_graph(_layers()), LAYERS) is None


def test_trips_far_apart_that_share_bytes_are_refused():
    """Layer l writes row l + MAX_TRIP_SPAN + 1, which layer l + MAX_TRIP_SPAN + 1 reads: a dependency
    wider than the short compiles are sure to show."""
    far = MAX_TRIP_SPAN + 1
    module = _layers(row_out=f"d0 + {far}", h_rows=LAYERS + far)
    reason = footprint_refusal(build_graph(module), LAYERS)
    assert reason == f"the trips touch the same bytes of 'h' up to {far} trips apart (at most {MAX_TRIP_SPAN})"


def test_a_written_buffer_whose_accesses_move_unalike_is_refused():
    module = _layers(row_out="d0 * 2 + 1", h_rows=2 * LAYERS + 1)
    reason = footprint_refusal(build_graph(module), LAYERS)
    assert reason == "the accesses to written buffer 'h' do not all move alike from trip to trip"


def test_a_buffer_every_trip_writes_in_the_same_place_is_refused():
    module = _layers(row_in="0", row_out="1", h_rows=2)
    assert footprint_refusal(build_graph(module), LAYERS) == "every trip touches the same bytes of 'h'"


def test_a_last_trip_outside_its_buffer_is_refused():
    module = _layers(w_rows=(LAYERS - 1) * 48, layers=5)
    assert footprint_refusal(build_graph(module), LAYERS).endswith("of the last trip would reach outside 'w'")
