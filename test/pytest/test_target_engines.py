"""Engines are defined once, by the target: the dialect's engine kinds, the
queue order of the encoding, the simulator and the kernel all follow the
target's ``engines`` list."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.dialects import vdir as vdir_dialect
from vdir.frontend import ProgramBuilder
from vdir.lowering import layout as L
from vdir.lowering.emit import lower_to_ptx
from vdir.target import TARGETS, EngineKind, EngineSpec, get_target

R, K = 16, 64


def test_there_is_one_engine_kind_enum() -> None:
    assert vdir_dialect.EngineKind is EngineKind
    assert [k.value for k in EngineKind] == ["load", "compute", "store", "stream"]


def test_hopper_engines_in_queue_order() -> None:
    for name in ("h200", "h100"):
        t = get_target(name)
        assert t.engine_names == ("load", "compute", "store", "stream")
        assert t.num_engines == 4
        assert [t.engine_index(n) for n in t.engine_names] == [0, 1, 2, 3]
        assert t.engine("load").pipelined and not t.engine("compute").pipelined
        assert not t.engine("load").reads_tiles
        # the stream engine is a second load engine
        stream = t.engine("stream")
        assert stream.runs == frozenset({"load"}) and stream.pipelined and not stream.reads_tiles
        assert all(isinstance(e, EngineSpec) for e in t.engines)
    with pytest.raises(KeyError, match="no 'tma' engine"):
        get_target().engine_index("tma")
    assert get_target().engine("tma") is None


def gemv_module(target: str, store_engine: str | None = None):
    """y = W x, one gemv: a load, a compute and a store engine each get work."""
    b = ProgramBuilder("gemv", target=target)
    w = b.buffer("w", (R, K))
    x = b.buffer("x", (1, K))
    y = b.buffer("y", (1, R))
    wt = b.load(w, (0, 0), (R, K), name="wt")
    xt = b.load(x, (0, 0), (1, K), name="xt")
    yt = b.compute("gemv", [wt, xt], name="yt")
    b.store(yt, y, (0, 0), name="s", engine=store_engine)
    return b.finish()


def _run(target: str, store_engine: str | None = None) -> tuple[isa.EncodedProgram, np.ndarray]:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((R, K)).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    with vdir.compile(gemv_module(target, store_engine), num_sms=1) as run:
        return run.program, run(w=w, x=x)


@pytest.fixture
def reordered(monkeypatch: pytest.MonkeyPatch) -> str:
    """The h200 with its engines listed store, stream, load, compute."""
    h200 = get_target("h200")
    by_name = {e.name: e for e in h200.engines}
    engines = tuple(by_name[n] for n in ("store", "stream", "load", "compute"))
    monkeypatch.setitem(TARGETS, "reordered", replace(h200, name="reordered", engines=engines))
    return "reordered"


def test_queue_order_follows_the_target(reordered: str) -> None:
    program, y = _run(reordered)
    reference_program, reference = _run("h200")
    np.testing.assert_array_equal(y, reference)  # the simulator follows the order too
    t = get_target(reordered)
    for name in ("load", "compute", "store", "stream"):
        queue = program.queue(0, t.engine_index(name))
        same = reference_program.queue(0, get_target("h200").engine_index(name))
        assert isa.OPCODE.column(queue).tolist() == isa.OPCODE.column(same).tolist()
    queues = [line for line in isa.disassemble(program).splitlines() if line.startswith("sm ")]
    # both loads wait on nothing: the weight tile streams, x (small beside it) keeps the idle load engine
    assert queues == ["sm 0 store:", "sm 0 stream:", "sm 0 load:", "sm 0 compute:"]
    # the kernel reads each role's queue at the target's index
    ptx = lower_to_ptx(program)
    assert ptx != lower_to_ptx(reference_program)


def test_a_target_with_other_engines_cannot_be_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    h200 = get_target("h200")
    engines = h200.engines + (EngineSpec(EngineKind.COMPUTE, frozenset({"compute"}), reads_tiles=True),)
    monkeypatch.setitem(TARGETS, "two_compute", replace(h200, name="two_compute", engines=engines))
    with pytest.raises(ValueError, match=r"warp roles for the engines load, store, compute \(and optionally stream\), "
                                         "one each; target 'two_compute' has"):
        L.check_engines(get_target("two_compute"))
    L.check_engines(h200)
    # a target without the stream engine lowers too (three warp roles)
    three = replace(h200, name="three", engines=tuple(e for e in h200.engines if e.name != "stream"))
    L.check_engines(three)
    assert L.block_threads(three) == L.block_threads(h200) - 32


@pytest.fixture
def no_store(monkeypatch: pytest.MonkeyPatch) -> str:
    """The h200 without store and stream engines: its compute engine also stores."""
    h200 = get_target("h200")
    engines = tuple(replace(e, runs=e.runs | {"store"}) if e.name == "compute" else e for e in h200.engines)
    engines = tuple(e for e in engines if e.name not in ("store", "stream"))
    monkeypatch.setitem(TARGETS, "no_store", replace(h200, name="no_store", engines=engines))
    return "no_store"


def test_a_micro_op_on_an_engine_the_target_lacks_is_named(no_store: str) -> None:
    with pytest.raises(ValueError, match=r"target 'no_store' has no 'store' engine \(its engines: load, compute\)"):
        gemv_module(no_store)


def test_a_two_engine_target_compiles_and_simulates(no_store: str) -> None:
    program, y = _run(no_store, store_engine="compute")
    _, reference = _run("h200")
    np.testing.assert_array_equal(y, reference)
    assert program.num_engines == 2 and len(program.queues[0]) == 2
    assert isa.OPCODE.column(program.queue(0, 1)).tolist() == [isa.OP_COMPUTE, isa.OP_STORE]
    with pytest.raises(ValueError, match="target 'no_store' has load, compute"):
        lower_to_ptx(program)


def test_the_header_states_the_targets_engine_count() -> None:
    program, _ = _run("h200")
    assert isa.EncodedProgram.parse_header(program.to_bytes())["num_engines"] == get_target().num_engines


def test_a_kernel_error_record_names_the_targets_engine() -> None:
    """The CUDA backend's error report joins the record's u64 words and names
    the engine by the target's list (no GPU needed: it only reads the record)."""
    from vdir.device_runtime.cuda import describe_error

    program = isa.EncodedProgram(1, 0, 0, 64, [], np.zeros((0, isa.INSTR_WORDS), np.uint32), [[(0, 0)] * 3])
    rec = np.zeros(L.ERROR_WORDS, np.uint32)
    rec[L.E_CODE], rec[L.E_ENGINE], rec[L.E_POS] = L.ERR_WATCHDOG, get_target().engine_index("store"), 5
    rec[L.E_WAIT_MASK], rec[L.E_WAIT_MASK + 1], rec[L.E_WAIT_PARITY + 1], rec[L.E_BITMAP] = 1, 1, 1, 3
    message = describe_error(program, rec, 100)
    assert "(SM 0, store engine, queue position 5)" in message
    assert "bits 0x100000001 (want 0x100000000, bitmap 0x3)" in message
