"""Hostile inputs to the Python API get a clear ``VdirError``, never a traceback from deep inside."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16
from xdsl.dialects.builtin import ArrayAttr, IndexType, StringAttr
from xdsl.ir import Block, Region
from xdsl.parser import Parser

import vdir
from vdir import isa
from vdir.compiler import InvalidModuleError
from vdir.device_runtime import platform_class
from vdir.device_runtime.platform import LaunchOptionError, PlatformError
from vdir.diagnostics import VdirError
from vdir.dialects.vdir import RepeatOp
from vdir.families import FamilyError, ParamSpec, TileSig, get_family
from vdir.frontend import ProgramBuilder
from vdir.tools.common import default_context, parse_text

#: a gemv whose weight tile and vector disagree on K; parsed, never verified
#: a load and a store: the smallest program that compiles and runs
COPY_PROGRAM = """\
vdir.program @copy(%a: !vdir.buffer<1x8xbf16>, %o: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %o[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
"""
GEMV_K_MISMATCH = """\
vdir.program @gemv_k(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
"""


def copy_program():
    b = ProgramBuilder("copy")
    x = b.buffer("x", (1, 64))
    y = b.buffer("y", (1, 64))
    b.store(b.load(x, (0, 0), (1, 64), name="t"), y, (0, 0), name="s")
    return b.finish()


def encoded_copy_program(tmp_path: Path) -> str:
    """The text of ``copy_program`` encoded for 2 SMs by vdir-opt."""
    from vdir.tools.vdir_opt import main as opt_main

    src, encoded = tmp_path / "copy.mlir", tmp_path / "copy.encoded.mlir"
    src.write_text(str(copy_program()))
    assert opt_main([str(src), "-p", "vdir-pipeline{num-sms=2}", "-o", str(encoded)]) == 0
    return encoded.read_text()


def forged_copy_program(tmp_path: Path, forge) -> Path:
    """:func:`encoded_copy_program` with its code's bytes changed in place by ``forge``, written back as
    ``forged.mlir`` (the path returned)."""
    import base64
    import re
    import zlib

    text = encoded_copy_program(tmp_path)
    code = re.search(r'code = "([^"]*)"', text)
    assert code is not None
    data = bytearray(zlib.decompress(base64.b64decode(code.group(1))))
    forge(data)
    forged = tmp_path / "forged.mlir"
    forged.write_text(text.replace(code.group(1), base64.b64encode(zlib.compress(bytes(data))).decode()))
    return forged


def test_compile_verifies_the_module_first():
    module = parse_text(default_context(), GEMV_K_MISMATCH, "gemv_k.mlir")
    with pytest.raises(InvalidModuleError) as e:
        vdir.compile(module)
    assert str(e.value) == (
        "gemv_k.mlir:4:3: error: family 'gemv': weights 8x64xbf16 and x 1x32xbf16 disagree on K (64 vs 32)"
    )
    assert isinstance(e.value, VdirError) and isinstance(e.value, ValueError)


def test_compile_rejects_a_module_changed_after_building():
    module = copy_program()
    program = next(iter(module.ops))
    program.properties["arg_names"] = ArrayAttr([StringAttr("x"), StringAttr("x")])
    with pytest.raises(InvalidModuleError, match=r"^<input>: error: program argument #1: name 'x' is already taken"):
        vdir.compile(module)


# ---------------------------------------------------------------------------
# Family parameters are checked against their specs, not coerced
# ---------------------------------------------------------------------------

ROW = TileSig((1, 64), "bf16")


@pytest.mark.parametrize(
    "family, params, message",
    [
        ("rmsnorm", {"eps": math.inf}, "family 'rmsnorm': parameter 'eps' must be a finite number, got inf"),
        ("rmsnorm", {"eps": math.nan}, "family 'rmsnorm': parameter 'eps' must be a finite number, got nan"),
        ("rmsnorm", {"eps": 1e300}, "family 'rmsnorm': parameter 'eps' = 1e+300 is outside the f32 range"),
        ("rmsnorm", {"eps": 1e-50}, "family 'rmsnorm': parameter 'eps' = 1e-50 is outside the f32 range"),
    ],
)
def test_number_parameters_are_finite_f32(family, params, message):
    with pytest.raises(FamilyError) as e:
        get_family(family).check([ROW, ROW], params, None)
    assert str(e.value) == message


def test_integer_parameters_are_integral():
    w, x, other = TileSig((8, 64), "bf16"), ROW, TileSig((1, 8), "bf16")
    fam = get_family("gemv_silu_mul")
    assert fam.check([w, x, other], {"operand": 1.0}, None) == other  # integral, even as a float
    with pytest.raises(FamilyError, match=r"^family 'gemv_silu_mul': parameter 'operand' must be an integer, got 1.5$"):
        fam.check([w, x, other], {"operand": 1.5}, None)


def test_a_declared_range_is_enforced():
    bounded = dataclasses.replace(get_family("rmsnorm"), param_specs={"eps": ParamSpec(lo=1e-12, hi=0.5)})
    assert bounded.check([ROW, ROW], {"eps": 0.5}, None) == ROW
    with pytest.raises(FamilyError, match=r"^family 'rmsnorm': parameter 'eps' = 0.75 is outside its range 1e-12 to 0.5$"):
        bounded.check([ROW, ROW], {"eps": 0.75}, None)


@pytest.mark.parametrize(
    "value, message",
    [
        (1e300, "parameter 'eps' = 1e+300 is outside the f32 range"),
        (math.inf, "family 'rmsnorm': parameter 'eps' must be a finite number, got inf"),
        (2**70, "parameter 'eps' = 1180591620717411303424 does not fit in 64 bits"),
    ],
)
def test_the_builder_rejects_bad_parameters_by_name(value, message):
    b = ProgramBuilder("p")
    x = b.load(b.buffer("x", (1, 64)), (0, 0), (1, 64))
    with pytest.raises(ValueError) as e:
        b.compute("rmsnorm", [x, x], params={"eps": value})
    assert str(e.value) == message


# ---------------------------------------------------------------------------
# A micro-op that reads its own result
# ---------------------------------------------------------------------------

#: the generic form parses with xDSL's own parser (vdir-opt's rejects the
#: forward reference already)
SELF_READING_COMPUTE = """\
"builtin.module"() ({
  "vdir.program"() <{sym_name = "p", arg_names = ["a"]}> ({
  ^bb0(%a: !vdir.buffer<1x64xbf16>):
    %t = "vdir.compute"(%t, %t) <{family = "add", params = {}, engine = #vdir.engine<compute>, operandSegmentSizes = array<i32: 2, 0, 0, 0>}> : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()
"""


def test_a_compute_reading_its_own_result_is_rejected_by_the_verifier():
    module = Parser(default_context(), SELF_READING_COMPUTE, "self.mlir").parse_module()
    with pytest.raises(InvalidModuleError, match=r"^<input>: error: %t \(vdir.compute\) reads its own result$"):
        vdir.compile(module)


def test_a_built_compute_rewired_to_itself_is_rejected():
    b = ProgramBuilder("p")
    x = b.load(b.buffer("x", (1, 64)), (0, 0), (1, 64), name="x0")
    y = b.compute("add", [x, x], name="y")
    b.store(y, b.buffer("out", (1, 64)), (0, 0))
    module = b.finish()
    y.owner.operands = (y, y)
    with pytest.raises(InvalidModuleError, match=r"%y \(vdir.compute\) reads its own result"):
        vdir.compile(module)


# ---------------------------------------------------------------------------
# Integers beyond i64 in the builder
# ---------------------------------------------------------------------------


def test_the_builder_rejects_a_flow_id_beyond_i64():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 64))
    with pytest.raises(ValueError, match=r"^load: flow id 9223372036854775808 does not fit in a signed 64-bit integer$"):
        b.load(a, (0, 0), (1, 64), flow=2**63)


@pytest.mark.parametrize(
    "lower, upper, step, message",
    [
        (0, 2**70, 1, "repeat upper bound 1180591620717411303424 does not fit in a signed 64-bit integer"),
        (-(2**63) - 1, 2, 1, "repeat lower bound -9223372036854775809 does not fit in a signed 64-bit integer"),
        (0, 4, 2**64, "repeat step bound 18446744073709551616 does not fit in a signed 64-bit integer"),
    ],
)
def test_the_builder_rejects_repeat_bounds_beyond_i64(lower, upper, step, message):
    b = ProgramBuilder("p")
    b.buffer("a", (1, 64))
    with pytest.raises(ValueError) as e, b.repeat(lower, upper, step):
        pass
    assert str(e.value) == message


# ---------------------------------------------------------------------------
# Launch options and a closed executable
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"frobnicate": 1}, "unknown launch option 'frobnicate' for the 'sim' backend (known: seed, load_window, check_races)"),
        ({"check_races": "no"}, "launch option 'check_races' must be True or False, got 'no'"),
        ({"seed": "abc"}, "launch option 'seed' must be an integer, got 'abc'"),
        ({"seed": 1.5}, "launch option 'seed' must be an integer, got 1.5"),
        ({"load_window": 0}, "launch option 'load_window' must be at least 1, got 0"),
    ],
)
def test_launch_options_are_checked_before_compiling(options, message, monkeypatch):
    import vdir.compiler

    def must_not_compile(*args, **kwargs):
        raise AssertionError("the pipeline ran before the launch options were checked")

    monkeypatch.setattr(vdir.compiler, "compile_module", must_not_compile)
    with pytest.raises(LaunchOptionError) as e:
        vdir.compile(copy_program(), **options)
    assert str(e.value) == message
    assert isinstance(e.value, VdirError) and isinstance(e.value, ValueError)


def test_the_cuda_backend_names_its_own_launch_options():
    with pytest.raises(LaunchOptionError, match=r"^unknown launch option 'seed' for the 'cuda' backend \(known: watchdog_ms\)$"):
        platform_class("cuda").check_launch_options({"seed": 1})
    with pytest.raises(LaunchOptionError, match="launch option 'watchdog_ms' must be a finite number, got nan"):
        platform_class("cuda").check_launch_options({"watchdog_ms": math.nan})
    platform_class("cuda").check_launch_options({"watchdog_ms": 200})  # an integer is a number too


def test_good_launch_options_reach_the_executable():
    with vdir.compile(copy_program(), seed=np.int64(3), load_window=2, check_races=np.bool_(False)) as exe:
        assert exe.launch_options == {"seed": 3, "load_window": 2, "check_races": False}
        x = np.arange(64, dtype=np.float32).reshape(1, 64).astype(bfloat16)
        assert np.array_equal(exe(x), x)


def test_a_closed_executable_says_so():
    exe = vdir.compile(copy_program())
    exe.close()
    exe.close()  # a second close does nothing
    x = np.zeros((1, 64), dtype=bfloat16)
    for use in (lambda: exe(x), lambda: exe.time(x, iterations=1), lambda: exe.trace()):
        with pytest.raises(PlatformError, match=r"^the executable is closed: compile the program again to run it$"):
            use()


@pytest.mark.parametrize("iterations", [0, -3, 1.5, True, "10"])
def test_time_takes_a_positive_number_of_iterations(iterations):
    """0 and -3 iterations returned an empty list, True ran once, 1.5 was range()'s TypeError."""
    from vdir.device_runtime.executable import ArgumentError

    with vdir.compile(copy_program()) as exe:
        with pytest.raises(ArgumentError, match=rf"^iterations must be a positive integer, got {iterations!r}$"):
            exe.time(np.zeros((1, 64), dtype=bfloat16), iterations=iterations)
        assert len(exe.time(np.zeros((1, 64), dtype=bfloat16), iterations=2)) == 2


# ---------------------------------------------------------------------------
# Nesting and sizes
# ---------------------------------------------------------------------------


def test_the_builder_refuses_repeats_nested_past_the_limit():
    from vdir.dialects.vdir import MAX_REPEAT_NESTING

    b = ProgramBuilder("deep")
    with contextlib.ExitStack() as stack:
        for i in range(MAX_REPEAT_NESTING):
            stack.enter_context(b.repeat(0, 1, name=f"i{i}"))
        with pytest.raises(ValueError, match=f"^repeats nest at most {MAX_REPEAT_NESTING} deep$"):
            stack.enter_context(b.repeat(0, 1))


def test_compile_refuses_a_module_nested_too_deeply_to_walk():
    """A module built by hand, 2,000 repeats deep: xDSL's walk and error printer recurse; the error is still one line."""
    module = copy_program()
    block = next(iter(module.ops)).body.block  # type: ignore[attr-defined]
    for _ in range(2000):
        inner = Block(arg_types=[IndexType()])
        block.add_op(RepeatOp(0, 1, Region(inner)))
        block = inner
    with pytest.raises(InvalidModuleError, match=r"^<input>: error: the module nests too deeply to verify$"):
        vdir.compile(module)


def test_a_buffer_larger_than_the_device_is_refused_when_built():
    b = ProgramBuilder("huge")
    x = b.buffer("x", (16777216, 65536))  # 2 TiB of bf16
    y = b.buffer("y", (1, 64))
    b.store(b.load(x, (0, 0), (1, 64)), y, (0, 0))
    with pytest.raises(ValueError, match=r"program argument #0 \('x'\) is a buffer of 2,199,023,255,552 bytes"):
        b.finish()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_sms": 0}, "option 'num-sms' must be at least 1, got 0"),
        ({"num_sms": -4}, "option 'num-sms' must be at least 1, got -4"),
        ({"prefetch": -1}, "option 'prefetch' must be at least 0, got -1"),
        ({"prefetch": 10**9}, "option 'prefetch' must be at most 64, got 1000000000"),
        ({"num_sms": True}, "option 'num-sms' must be an integer, got true"),
        ({"num_sms": 1.0}, "option 'num-sms' must be an integer, got 1.0"),
        ({"l2_prefetch": -1}, "option 'l2-prefetch' must be at least 0, got -1"),
    ],
)
def test_compile_to_encoded_refuses_option_values_the_passes_refuse(options, message):
    """``num_sms=0`` used to mean every SM and a negative prefetch none, silently; vdir-opt refused both."""
    from vdir.transforms.pipeline import compile_to_encoded

    with pytest.raises(VdirError, match=f"^error: vdir-pipeline: {message}$"):
        compile_to_encoded(copy_program(), **options)


@pytest.mark.parametrize("num_sms", [True, 1.0, "2"])
def test_compile_names_a_num_sms_that_is_not_an_integer(num_sms):
    """``num_sms=True`` used to compile and fail at the first call, ``"2"`` with a bare TypeError;
    the error is a TypeError that ``except VdirError`` catches too."""
    from vdir.compiler import CompileArgumentError

    with pytest.raises(CompileArgumentError, match=f"^vdir.compile: num_sms must be an integer, got {num_sms!r}$") as info:
        vdir.compile(copy_program(), num_sms=num_sms)
    assert isinstance(info.value, VdirError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("given", [None, "module { }", b"\x00", 3])
def test_compile_names_what_it_was_given_when_it_is_no_program(given):
    """Anything but a module or an encoded program is refused by its type name, as a VdirError."""
    with pytest.raises(VdirError, match=f"^vdir.compile takes an xDSL ModuleOp or an EncodedProgram, got {type(given).__name__}$"):
        vdir.compile(given)


def test_a_compression_bomb_in_an_encoded_program_is_refused(tmp_path, capsys):
    """The code and names of an encoded program are inflated only up to a limit (vdir.limits)."""
    import base64
    import zlib

    from vdir import isa
    from vdir.limits import Limits, limits_in_effect
    from vdir.tools.vdir_opt import main as opt_main

    bomb = base64.b64encode(zlib.compress(b"\0" * 4_000_000, 9)).decode()
    code_message = r"the program's code decompressed to more than 1,000,000 bytes \(the limit; --max-code-bytes raises it\)"
    with pytest.raises(ValueError, match=code_message):
        isa.decode_code(bomb, limit=1_000_000)
    with limits_in_effect(Limits(max_code_bytes=1_000_000)), pytest.raises(ValueError, match=code_message):
        isa.decode_code(bomb)
    with pytest.raises(ValueError, match="the micro-op names decompressed to more than 1,000 bytes"):
        isa.decode_text(isa.encode_text(["x" * 2000]), limit=1000)
    # through vdir-opt: an encoded program whose code inflates past the limit is a located error
    src = tmp_path / "gemv.mlir"
    src.write_text((Path(__file__).resolve().parents[2] / "examples" / "gemv.mlir").read_text())
    encoded = tmp_path / "gemv.encoded.mlir"
    assert opt_main([str(src), "-p", "vdir-pipeline{num-sms=2}", "-o", str(encoded)]) == 0
    assert opt_main([str(encoded), "--max-code-bytes", "1024"]) == 1
    err = capsys.readouterr().err
    assert "decompressed to more than 1,024 bytes" in err and "gemv.encoded.mlir:" in err


def test_vdir_opt_with_standard_streams_closed(tmp_path, monkeypatch, capsys):
    """``vdir-opt - <&-`` and ``vdir-opt file >&-`` used to end in an AttributeError traceback."""
    from vdir.tools.vdir_opt import main as opt_main

    src = tmp_path / "copy.mlir"
    src.write_text((Path(__file__).resolve().parents[2] / "examples" / "gemv.mlir").read_text())
    monkeypatch.setattr("sys.stdin", None)
    assert opt_main(["-"]) == 1
    assert capsys.readouterr().err.strip() == "error: standard input is closed: name an input file"
    monkeypatch.setattr("sys.stdout", None)
    assert opt_main([str(src)]) == 1
    assert capsys.readouterr().err.strip() == "error: standard output is closed: write the result to a file with -o"


def test_vdir_opt_with_a_target_whose_package_is_missing(tmp_path, monkeypatch, capsys):
    """One of xDSL's targets whose Python package is not installed (``-t llvm`` without llvmlite)
    used to end in a ModuleNotFoundError traceback; now one line names the package."""
    from vdir.tools.vdir_opt import VdirOptMain
    from vdir.tools.vdir_opt import main as opt_main

    def missing() -> type:
        raise ModuleNotFoundError("No module named 'no_such_package'", name="no_such_package")

    registered = VdirOptMain.register_all_targets

    def with_missing(self: VdirOptMain) -> None:
        registered(self)
        self.available_targets["needs-a-package"] = missing

    monkeypatch.setattr(VdirOptMain, "register_all_targets", with_missing)
    src = tmp_path / "gemv.mlir"
    src.write_text((Path(__file__).resolve().parents[2] / "examples" / "gemv.mlir").read_text())
    assert opt_main([str(src), "-t", "needs-a-package"]) == 1
    out = capsys.readouterr()
    assert out.err.strip() == "error: target 'needs-a-package' needs the Python package 'no_such_package', which is not installed"
    assert out.out == ""


# ---------------------------------------------------------------------------
# Forged counts in an encoded program's header
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("num_counters", 2**32 - 1, "the header's 4,294,967,295 global counters are more than its 2 executed instructions can name"),
        ("bitmap_bits", 2**32 - 1, "the header's 4294967295-bit dependency bitmap is wider than an instruction's 64-bit masks"),
        ("num_buffers", 7, "encoded program has 7 buffers, its buffer table 2"),
        ("num_engines", 0xFFFF, "the queue table of 2 SMs x 65535 engines runs past the encoded program's 384 bytes"),
        ("flag_word_bytes", 1, "the header's 1 bytes of flag words are not whole 16-byte blocks within the 512 "
                               "its buffers' words would take"),
        ("flag_word_bytes", 2**32 - 16, "the header's 4,294,967,280 bytes of flag words are not whole 16-byte "
                                        "blocks within the 512 its buffers' words would take"),
    ],
)
def test_a_forged_header_count_is_a_located_error(field, value, message, tmp_path, capsys):
    """A header count the runtime allocates by is checked against the code: 2^32 - 1 counters had the
    simulator allocate 22 GB and never start; a wrong engine count was numpy's 'buffer is smaller', and flag
    words of a byte numpy's 'when changing to a larger dtype'."""
    from vdir.tools.vdir_opt import main as opt_main
    from vdir.tools.vdir_run import main as run_main

    def forge(data: bytearray) -> None:
        header = np.frombuffer(bytes(data[: isa.HEADER_WORDS * isa.WORD_BYTES]), "<u4").copy()
        next(f for f in isa.HEADER_FIELDS if f.name == field).set(header, value)
        data[: header.nbytes] = header.tobytes()

    forged = forged_copy_program(tmp_path, forge)
    assert opt_main([str(forged)]) == 1
    assert run_main([str(forged), "--backend", "sim"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"{forged}:2:3: error: bad encoded program: {message}"] * 2


@pytest.mark.parametrize(
    "forge, message",
    [
        ("dropped_store", "the queues hold 1 instructions, the program 2: every instruction is in exactly one queue"),
        ("shared", "queue (SM 0, engine 3) starts at instruction 0, not at 1 where the queue before it ends: "
                   "the queues lie one after another in table order"),
    ],
)
def test_a_forged_queue_table_is_refused(forge, message, tmp_path, capsys):
    """An instruction outside every queue never runs, yet its store counted as writing the buffer, so
    ``y`` was not zeroed and vdir-run returned leftover memory with exit 0; queues sharing instructions
    would run them twice."""
    from vdir.tools.vdir_opt import main as opt_main
    from vdir.tools.vdir_run import main as run_main

    def change_table(data: bytearray) -> None:
        h = isa.EncodedProgram.parse_header(bytes(data))
        off = isa.HEADER_WORDS * isa.WORD_BYTES
        count = h["num_sms"] * h["num_engines"] * isa.QUEUE_ENTRY_WORDS
        table = np.frombuffer(bytes(data[off:]), "<u4", count=count).reshape(h["num_sms"], h["num_engines"], -1).copy()
        # SM 0 holds the load (engine 2, instruction 0) and the store (engine 3, instruction 1)
        assert [(isa.QUEUE_START.get(q), isa.QUEUE_COUNT.get(q)) for q in table[0]] == [(0, 0), (0, 0), (0, 1), (1, 1)]
        if forge == "dropped_store":  # the store never runs
            isa.QUEUE_COUNT.set(table[0, 3], 0)
        else:  # the store queue points at the load
            isa.QUEUE_START.set(table[0, 3], 0)
        data[off: off + table.nbytes] = table.tobytes()

    forged = forged_copy_program(tmp_path, change_table)
    assert opt_main([str(forged)]) == 1
    assert run_main([str(forged), "--backend", "sim"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"{forged}:2:3: error: bad encoded program: {message}"] * 2


def test_a_forged_encoded_program_object_is_checked_before_it_is_loaded():
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(copy_program(), num_sms=2)
    program.num_counters = 10**9
    with pytest.raises(ValueError, match=r"^the header's 1,000,000,000 global counters are more than its 2 executed instructions"):
        vdir.compile(program, backend="sim")
    program = compile_to_encoded(copy_program(), num_sms=2)
    program.instrs = program.instrs[:, :5]
    with pytest.raises(ValueError, match=r"^the instructions are a 2x5 array, not N x 32 words$"):
        vdir.compile(program, backend="sim")


def test_a_forged_loop_trip_count_is_held_to_the_code_limit(tmp_path, capsys):
    """A loop record is compression: 2^32 - 1 trips of a 14-instruction body had the verifier ask numpy
    for 7 TiB (a MemoryError traceback from vdir-opt)."""
    import base64
    import re
    import zlib

    from vdir import isa
    from vdir.tools.vdir_opt import main as opt_main

    b = ProgramBuilder("rows")
    x, y = b.buffer("x", (64, 64)), b.buffer("y", (64, 64))
    with b.repeat(0, 64) as i:
        b.store(b.load(x, (i, 0), (1, 64)), y, (i, 0))
    src, encoded = tmp_path / "rows.mlir", tmp_path / "rows.encoded.mlir"
    src.write_text(str(b.finish()))
    assert opt_main([str(src), "-p", "vdir-pipeline{num-sms=1}", "-o", str(encoded)]) == 0
    text = encoded.read_text()
    code = re.search(r'code = "([^"]*)"', text)
    assert code is not None
    data = zlib.decompress(base64.b64decode(code.group(1)))
    h = isa.EncodedProgram.parse_header(data)
    start = (isa.HEADER_WORDS + h["num_sms"] * h["num_engines"] * isa.QUEUE_ENTRY_WORDS) * isa.WORD_BYTES
    instrs = np.frombuffer(data[start:], "<u4").reshape(-1, isa.INSTR_WORDS).copy()
    loops = np.nonzero(isa.OPCODE.column(instrs) == isa.OP_LOOP)[0]
    assert loops.size
    for r in loops.tolist():
        isa.LOOP_TRIPS.set(instrs[r], 2**32 - 1)
    forged = tmp_path / "forged.mlir"
    forged_code = base64.b64encode(zlib.compress(data[:start] + instrs.tobytes())).decode()
    forged.write_text(text.replace(code.group(1), forged_code))
    assert opt_main([str(forged)]) == 1
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(rf"{forged}:2:3: error: bad encoded program: the program's code, its loops unrolled, is "
                        r"[0-9,]+ bytes, more than 80,777,216 \(the limit; --max-code-bytes raises it\)", err), err


def test_a_rerolled_program_may_have_more_counters_than_records(tmp_path):
    """A loop's step records move its counters each trip: 1,000 chained copies on 2 SMs have 999 counters
    in 184 records (2,000 executed instructions), and read back as they were written."""
    from vdir.tools.vdir_opt import main as opt_main
    from vdir.transforms.pipeline import compile_to_encoded

    b = ProgramBuilder("chain")
    x, y = b.buffer("x", (64, 16)), b.buffer("y", (64, 16))
    with b.repeat(0, 1000):
        b.store(b.load(x, (0, 0), (1, 16)), y, (0, 0))
    module = b.finish()
    program = compile_to_encoded(module, num_sms=2)
    assert program.num_counters > 2 * len(program.instrs) and program.num_counters <= 2 * program.executed_count()
    vdir.compile(program, backend="sim")(np.zeros((64, 16), bfloat16))
    src, encoded = tmp_path / "chain.mlir", tmp_path / "chain.encoded.mlir"
    src.write_text(str(module))
    assert opt_main([str(src), "-p", "vdir-pipeline{num-sms=2}", "-o", str(encoded)]) == 0
    assert opt_main([str(encoded), "-o", str(tmp_path / "again.mlir")]) == 0


def test_a_forged_loop_trip_count_in_a_program_object_is_refused_before_the_backend_unrolls_it():
    """A program handed over as a Python object is held to the same unrolled-code limit as one read from
    text (the simulator and the CUDA backend unroll its loops: 2^32 - 1 trips asked for terabytes);
    ``max_micro_ops`` raises the limit for a program that is large on purpose."""
    import time

    from vdir import isa
    from vdir.transforms.pipeline import compile_to_encoded

    b = ProgramBuilder("rows")
    x, y = b.buffer("x", (64, 64)), b.buffer("y", (64, 64))
    with b.repeat(0, 64) as i:
        b.store(b.load(x, (i, 0), (1, 64)), y, (i, 0))
    program = compile_to_encoded(b.finish(), num_sms=1)
    loops = np.nonzero(isa.OPCODE.column(program.instrs) == isa.OP_LOOP)[0]
    assert loops.size
    with vdir.compile(program, backend="sim", max_micro_ops=10):  # a real program passes, whatever the limit
        pass
    for r in loops.tolist():
        isa.LOOP_TRIPS.set(program.instrs[r], 2**32 - 1)
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"^the program's code, its loops unrolled, is [0-9,]+ bytes, more than "
                                         r"80,777,216 \(the limit; max_micro_ops= raises it\)$"):
        vdir.compile(program, backend="sim")
    assert time.monotonic() - start < 5



@pytest.mark.parametrize(
    "forge, message",
    [
        (lambda w: isa.ROWS.set(w, 2), r"region \[0, 256\) is outside buffer 'x' \(128 bytes\)"),
        (lambda w: isa.GLOBAL_OFFSET.set(w, 16), r"region \[16, 144\) is outside buffer 'x' \(128 bytes\)"),
        (lambda w: isa.GLOBAL_OFFSET.set(w, 2**64 - 16), r"region \[-16, 112\) is outside buffer 'x'"),
        (lambda w: isa.BUFFER.set(w, 7), r"buffer 7 does not exist \(the program has 2\)"),
        (lambda w: (isa.DYN_SOURCE.set(w, isa.SOURCE_SCALAR), isa.DYN_SCALE.set(w, 64), isa.DYN_MAX.set(w, 1)),
         r"region \[0, 128\) for some value of its runtime offset is outside buffer 'x'"),
    ],
)
def test_a_forged_region_is_refused_before_any_backend_copies_it(forge, message):
    """The kernel copies what an instruction's words say: a region beyond its buffer, given as a program
    object or read from text, is refused naming the micro-op (it would read another allocation or fault
    the device), on every backend and before anything runs."""
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(copy_program(), num_sms=1)
    load = next(i for i, w in enumerate(program.instrs) if isa.OPCODE.get(w) == isa.OP_LOAD)
    forge(program.instrs[load])
    with pytest.raises(ValueError, match=r"^%t \(<unknown>\) \(SM 0, stream engine, queue position 0\): " + message):
        vdir.compile(program, backend="sim")
    with pytest.raises(ValueError, match=message):
        isa.EncodedProgram.from_bytes(program.to_bytes(), program.buffers, program.uop_names, program.target,
                                      program.scalars)


@pytest.mark.parametrize("opcode, name", [(isa.OP_COMPUTE, "compute"), (isa.OP_STORE, "store")])
def test_an_instruction_on_an_engine_that_does_not_run_it_is_refused_on_every_backend(opcode, name):
    """The kernel's load engines take anything but a load or prefetch for a nop (a forged compute there
    would be skipped, its signals kept): a program read from outside is refused before any backend runs
    it, naming the micro-op and the engine, from a program object and from its bytes."""
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(copy_program(), num_sms=1)
    load = next(i for i, w in enumerate(program.instrs) if isa.OPCODE.get(w) == isa.OP_LOAD)
    isa.OPCODE.set(program.instrs[load], opcode)
    message = rf"^%t \(<unknown>\) \(SM 0, stream engine, queue position 0\): a {name} instruction cannot run on " \
              r"the stream engine$"
    with pytest.raises(ValueError, match=message):
        vdir.compile(program, backend="sim")
    with pytest.raises(ValueError, match=message):
        isa.check_untrusted(isa.EncodedProgram.from_bytes(program.to_bytes(), program.buffers, program.uop_names,
                                                          program.target, program.scalars))


def test_a_buffer_named_self_binds_by_name():
    """``exe(self=...)`` was Python's 'got multiple values for argument self' (vdir-run's internal error):
    the executable's own parameter is positional-only, so every buffer name is free to bind."""
    b = ProgramBuilder("named_self")
    x = b.buffer("self", (1, 64))
    y = b.buffer("y", (1, 64))
    b.store(b.load(x, (0, 0), (1, 64)), y, (0, 0))
    exe = vdir.compile(b.finish(), backend="sim")
    data = np.random.default_rng(7).standard_normal((1, 64)).astype(bfloat16)
    np.testing.assert_array_equal(exe(self=data).view(np.uint16), data.view(np.uint16))


def _gemv_program():
    b = ProgramBuilder("gemv_8")
    w, x, y = b.buffer("w", (8, 64)), b.buffer("x", (1, 64)), b.buffer("y", (1, 8))
    b.store(b.compute("gemv", [b.load(w, (0, 0), (8, 64)), b.load(x, (0, 0), (1, 64))]), y, (0, 0))
    return b.finish()


@pytest.mark.parametrize(
    "opcode, field, message",
    [
        ("OP_LOAD", "ROWS", r"micro-op #\d+ \(SM 0, \w+ engine, queue position 0\): region of 0 rows of 128 bytes is empty"),
        ("OP_LOAD", "ROW_BYTES", r"micro-op #\d+ \(SM 0, \w+ engine, queue position 0\): region of \d+ rows of 0 bytes "
                                 r"is empty"),
        ("OP_COMPUTE", "P0", r".*: family 'gemv': its input 0 is an empty 0x64 tile"),
    ],
)
def test_an_empty_region_or_tile_is_a_located_error(opcode, field, message, tmp_path, capsys):
    """A load of 0 rows, or a gemv of 0 rows, was numpy's 'zero-size array to reduction operation
    maximum which has no identity', with no micro-op named."""
    import base64
    import re
    import zlib

    from vdir.tools.vdir_run import main as run_main

    program = vdir.compile(_gemv_program(), backend="sim").program
    instrs = program.instrs.copy()
    first = int(np.argmax(isa.OPCODE.column(instrs) == getattr(isa, opcode)))
    getattr(isa, field).set(instrs[first], 0)
    forged_program = dataclasses.replace(program, instrs=instrs)
    encoded = tmp_path / "forged.mlir"
    src = tmp_path / "gemv.mlir"
    src.write_text(str(_gemv_program()))
    from vdir.tools.vdir_opt import main as opt_main

    assert opt_main([str(src), "-p", "vdir-pipeline", "-o", str(encoded)]) == 0
    text = encoded.read_text()
    code = re.search(r'code = "([^"]*)"', text)
    assert code is not None and isa.decode_code(code.group(1)) == program.to_bytes()
    forged_code = base64.b64encode(zlib.compress(forged_program.to_bytes())).decode()
    encoded.write_text(text.replace(code.group(1), forged_code))
    assert run_main([str(encoded), "--backend", "sim"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch(rf"{encoded}:\d+:\d+: error: bad encoded program: {message}"
                                          if opcode == "OP_LOAD" else rf"error: {message}", err[0]), err


def test_more_names_than_micro_ops_are_refused_before_they_are_split(tmp_path, capsys):
    """Thirty million one-letter names compress to 350 KB and took 3.6 GB as Python strings; names are
    one per micro-op, so their lines are counted against the program's micro-ops first."""
    import re

    from vdir.tools.vdir_opt import main as opt_main
    from vdir.tools.vdir_run import main as run_main

    text = encoded_copy_program(tmp_path)
    names = re.search(r'names = "([^"]*)"', text)
    assert names is not None
    forged = tmp_path / "forged.mlir"
    forged.write_text(text.replace(names.group(1), isa.encode_text(["a"] * 1_000_000)))
    assert opt_main([str(forged)]) == 1
    assert run_main([str(forged), "--backend", "sim"]) == 1
    message = "the micro-op names are 1,000,000 lines, more than the program's 2 micro-ops"
    assert capsys.readouterr().err.splitlines() == [f"{forged}:2:3: error: bad encoded program: {message}"] * 2


def test_vdir_opt_writes_its_output_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    """``-o`` was written in place: a full disk or ``ulimit -f`` left part of a file, and the error
    ('[Errno 27] File too large') named none."""
    import os

    from vdir.tools.vdir_opt import main as opt_main

    src, out = tmp_path / "copy.mlir", tmp_path / "out.mlir"
    src.write_text(str(copy_program()))
    out.write_text("old")

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert opt_main([str(src), "-o", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"{out}: error: -o: cannot write it: No space left on device"]
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["copy.mlir", "out.mlir"]
    monkeypatch.undo()
    assert opt_main([str(src), "-o", str(out)]) == 0
    assert out.read_text().startswith("builtin.module")


@pytest.mark.parametrize("damage, message", [
    (lambda z: z + b"junk", "4 bytes follow the compressed stream"),
    (lambda z: z[:-3], "the compressed stream ends early"),
])
def test_encoded_text_is_one_whole_compressed_stream(damage, message):
    """Bytes after the code's or names' zlib stream were ignored, and a cut stream was taken as it was."""
    import base64
    import zlib

    program = vdir.compile(copy_program(), backend="sim").program
    for decode, raw in ((isa.decode_code, program.to_bytes()), (isa.decode_text, b"%t = load @x\n%s = store @y")):
        text = base64.b64encode(damage(zlib.compress(raw))).decode()
        with pytest.raises(ValueError, match=message):
            decode(text)


def test_an_encoded_program_object_with_two_arguments_of_one_name_is_refused():
    """A program handed over as a Python object is checked as one read back from text: a scalar named
    like a buffer would bind the launch's one namespace twice."""
    program = vdir.compile(copy_program(), backend="sim").program
    forged = dataclasses.replace(program, scalars=[isa.ScalarInfo("x", 0, 4)])
    with pytest.raises(ValueError, match="^scalar #0: name 'x' is already taken by buffer 'x'$"):
        vdir.compile(forged, backend="sim")


def test_a_bug_in_a_pass_is_one_line_with_what_to_report(tmp_path, capsys, monkeypatch):
    """Without --disable-verify, a pass that fails outside its checks is a bug: vdir-opt says so in one
    line (as vdir-run does), not with a Python traceback."""
    from vdir.tools.vdir_opt import main as opt_main
    from vdir.transforms.place import PlacePass

    def broken(self, ctx, op):
        raise RuntimeError("placement lost its way\nsecond line")

    monkeypatch.setattr(PlacePass, "apply", broken)
    src = tmp_path / "copy.mlir"
    src.write_text(COPY_PROGRAM)
    assert opt_main([str(src), "-p", "vdir-place{num-sms=2}"]) == 1
    assert capsys.readouterr().err == ("error: internal error: RuntimeError: placement lost its way: second line "
                                       "(please report this)\n")


def test_a_warning_prints_as_one_line(capsys):
    """A library warning (a program cache that cannot be written, say) reaches a tool's user as one line
    ``warning: ...``, without Python's file, line and source; Python's printer is back afterwards."""
    import argparse
    import warnings

    from vdir.tools.common import run_cli

    def run(args: argparse.Namespace) -> int:
        warnings.warn("vdir cache: cannot write to /nowhere\ncompiled programs will not be cached", RuntimeWarning,
                      stacklevel=1)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        before = warnings.showwarning
        assert run_cli(argparse.ArgumentParser, run, []) == 0
        assert warnings.showwarning is before
    assert capsys.readouterr().err == ("warning: vdir cache: cannot write to /nowhere: compiled programs will not "
                                       "be cached\n")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc/self/mem")
def test_a_file_that_opens_but_cannot_be_read_is_named(capsys):
    from vdir.tools.vdir_opt import main as opt_main

    assert opt_main(["/proc/self/mem"]) == 1
    assert capsys.readouterr().err == "/proc/self/mem: error: cannot read (Input/output error)\n"


def test_an_empty_file_name_is_refused_by_name(tmp_path, capsys):
    from vdir.tools.vdir_opt import main as opt_main

    src = tmp_path / "copy.mlir"
    src.write_text(COPY_PROGRAM)
    assert opt_main([str(src), "-o", ""]) == 1
    assert capsys.readouterr().err == "error: -o: the file name is empty\n"
    assert opt_main([""]) == 1
    assert capsys.readouterr().err == "error: the program's file name is empty\n"
