"""The size limits (vdir.limits) through the Python API: defaults, scoping, validation."""

from __future__ import annotations

import re
import threading
import time

import pytest

import vdir
from vdir.diagnostics import PassFailure
from vdir.frontend import ProgramBuilder
from vdir.limits import (
    DEFAULT_LIMITS,
    MAX_CODE_BYTES,
    MAX_MICRO_OPS,
    MAX_NAMES_BYTES,
    LimitError,
    Limits,
    current_limits,
    limits_in_effect,
)
from vdir.transforms.pipeline import compile_to_encoded


def repeated_copy(iterations: int):
    """A program of ``iterations`` repeats of one load and one store: 2 * iterations micro-ops."""
    b = ProgramBuilder("copies")
    x = b.buffer("x", (64, 16))
    y = b.buffer("y", (64, 16))
    with b.repeat(0, iterations):
        b.store(b.load(x, (0, 0), (1, 16)), y, (0, 0))
    return b.finish()


def test_the_defaults_are_the_documented_constants():
    assert current_limits() == DEFAULT_LIMITS == Limits()
    assert (MAX_MICRO_OPS, MAX_CODE_BYTES, MAX_NAMES_BYTES) == (500_000, 500_000 * 128 + (1 << 24), 1 << 28)
    assert Limits().max_micro_ops == MAX_MICRO_OPS


#: a trillion trips, and a million (2M micro-ops, minutes and GB to compile), are both over the default
#: limit and refused before anything is expanded; parsing and verifying the text are milliseconds
HUGE_REPEAT = """\
vdir.program @huge(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {{
  vdir.repeat %i = 0 to {trips} {{
    %t = vdir.load %x[0, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<1x16xbf16>
    %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>
  }}
}}
"""


@pytest.mark.parametrize("trips", [10**12, 10**6])
def test_a_repeat_beyond_the_default_limit_is_refused_at_once(trips, tmp_path, capsys):
    from vdir.tools.vdir_opt import main as opt_main
    from vdir.tools.vdir_run import main as run_main

    message = (rf"the program expands to more than 500,000 micro-ops \(the limit; --max-micro-ops raises it\): "
               rf"this repeat alone reaches {2 * trips:,}")
    src = tmp_path / "huge.mlir"
    src.write_text(HUGE_REPEAT.format(trips=trips))
    start = time.perf_counter()
    with pytest.raises(PassFailure, match="^" + message + "$"):
        compile_to_encoded(repeated_copy(trips))
    with pytest.raises(PassFailure, match=message):
        vdir.compile(repeated_copy(trips), backend="sim")
    assert opt_main([str(src), "-p", "vdir-pipeline"]) == 1
    assert run_main([str(src), "--backend", "sim"]) == 1
    elapsed = time.perf_counter() - start
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{src}:2:3: error: ") for line in lines)
    assert all(re.search(message, line) for line in lines)
    assert elapsed < 5, f"refusing took {elapsed:.1f} s"


#: a repeat whose body holds no micro-op (empty, or index arithmetic only) expands to nothing, however many
#: its trips: the copy beside it compiles at once rather than spinning through 10^12 empty trips
DEAD_REPEATS = """\
vdir.program @dead(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {{
  vdir.repeat %i = 0 to 1000000000000 {{
  }}
  vdir.repeat %j = 0 to 1000000000000 {{
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%j)
    vdir.repeat %k = 0 to 1000000000000 {{
      {inner}
    }}
  }}
  %t = vdir.load %x[0, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<1x16xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>
}}
"""


def test_a_repeat_without_micro_ops_expands_at_once(tmp_path, capsys):
    from vdir.tools.vdir_run import main as run_main

    src = tmp_path / "dead.mlir"
    src.write_text(DEAD_REPEATS.format(inner="%c = affine.apply affine_map<(d0, d1) -> (d0 + d1)> (%r, %k)"))
    start = time.perf_counter()
    assert run_main([str(src), "--backend", "sim", "--check"]) == 0
    assert time.perf_counter() - start < 30
    assert "check passed" in capsys.readouterr().out


def test_an_error_in_a_repeat_without_micro_ops_is_still_located(tmp_path, capsys):
    from vdir.tools.vdir_opt import main as opt_main

    src = tmp_path / "dead.mlir"
    src.write_text(DEAD_REPEATS.format(inner='%c = "test.op"() : () -> i32'))
    assert opt_main([str(src), "-p", "vdir-pipeline"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"{src}:7:7: error: ") and "'test.op' cannot appear" in err[0], err


def test_compile_to_encoded_takes_the_micro_op_limit():
    module = repeated_copy(4)
    assert compile_to_encoded(module, num_sms=2, max_micro_ops=8).buffers
    message = (r"^the program expands to more than 7 micro-ops \(the limit; --max-micro-ops raises it\): "
               r"this repeat alone reaches 8$")
    with pytest.raises(PassFailure, match=message):
        compile_to_encoded(module, num_sms=2, max_micro_ops=7)


def test_the_keyword_overrides_the_limit_in_effect_for_that_call_only():
    module = repeated_copy(4)
    with limits_in_effect(Limits(max_micro_ops=3)):
        assert compile_to_encoded(module, num_sms=2, max_micro_ops=8).buffers
        with pytest.raises(PassFailure, match="more than 3 micro-ops"):
            compile_to_encoded(module, num_sms=2)
        assert current_limits().max_micro_ops == 3
    assert current_limits() == DEFAULT_LIMITS


def test_vdir_compile_takes_the_micro_op_limit():
    module = repeated_copy(4)
    assert vdir.compile(module, backend="sim", num_sms=2, max_micro_ops=8) is not None
    with pytest.raises(PassFailure, match="more than 5 micro-ops"):
        vdir.compile(module, backend="sim", num_sms=2, max_micro_ops=5)


@pytest.mark.parametrize("value", [0, -1, 2.5, "8", True])
def test_a_limit_that_is_not_a_positive_integer_is_refused_by_name(value):
    message = f"^max_micro_ops must be a positive integer, got {value!r}$".replace("(", r"\(").replace(".", r"\.")
    with pytest.raises(LimitError, match=message):
        compile_to_encoded(repeated_copy(1), max_micro_ops=value)
    with pytest.raises(LimitError, match=message):
        vdir.compile(repeated_copy(1), backend="sim", max_micro_ops=value)
    with pytest.raises(ValueError, match="max_code_bytes must be a positive integer, got 0"):
        Limits(max_code_bytes=0)


def test_limits_in_effect_is_undone_on_error_and_does_not_reach_other_threads():
    seen: list[Limits] = []
    with pytest.raises(RuntimeError), limits_in_effect(Limits(max_names_bytes=5)):
        thread = threading.Thread(target=lambda: seen.append(current_limits()))
        thread.start()
        thread.join()
        raise RuntimeError
    assert seen == [DEFAULT_LIMITS]
    assert current_limits() == DEFAULT_LIMITS
