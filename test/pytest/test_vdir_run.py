"""``vdir-run`` end to end: compile an IR file, run it, save, trace, check.

Every error path must print exactly one line on stderr and exit non-zero.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pytest
from ml_dtypes import bfloat16
from numpy.lib import format as npy_format

from vdir.isa import BufferInfo
from vdir.testing.compare import compare_outputs
from vdir.tools import vdir_run
from vdir.tools.vdir_run import main, random_inputs

GEMV = """\
vdir.program @gemv(%w: !vdir.buffer<128x256xbf16>, %x: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x128xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<128x256xbf16> -> !vdir.tile<128x256xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x128xbf16>, !vdir.buffer<1x128xbf16>
}
"""

@pytest.fixture
def gemv_file(tmp_path):
    path = tmp_path / "gemv.mlir"
    path.write_text(GEMV)
    return path


def run_main(capsys, *argv):
    """Call ``main`` in-process; return (status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status, err, *fragments):
    assert status != 0
    assert err.strip() and "\n" not in err.strip(), f"expected one line, got:\n{err}"
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


# ---------------------------------------------------------------------------
# Successful runs
# ---------------------------------------------------------------------------


def test_console_script_runs_and_checks(gemv_file):
    proc = subprocess.run(
        [sys.executable, "-m", "vdir.tools.vdir_run", str(gemv_file), "--backend", "sim", "--check"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "y: 1x128 bf16" in proc.stdout
    assert "check passed" in proc.stdout and "1 bf16 ulp" in proc.stdout


def test_given_inputs_and_saved_outputs_match_numpy(gemv_file, tmp_path, capsys):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((128, 256)).astype(np.float32) / 16  # rounded to bf16 on reading
    x = rng.standard_normal((1, 256)).astype(bfloat16)
    np.savez(tmp_path / "in.npz", w=w, x=x)
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", tmp_path / "in.npz",
                                "--outputs", tmp_path / "out.npz")
    assert status == 0, err
    saved = np.load(tmp_path / "out.npz")
    assert saved["y"].dtype == np.float32 and saved["y"].shape == (1, 128)
    expected = (w.astype(bfloat16).astype(np.float32) @ x.astype(np.float32).reshape(-1)).astype(bfloat16)
    assert np.array_equal(saved["y"].reshape(-1), expected.astype(np.float32))


def test_trace_is_written(gemv_file, tmp_path, capsys):
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--trace", tmp_path / "t.json")
    assert status == 0, err
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    # a track per engine: the weight tile is the stream engine's, x (small beside it) the load engine's
    assert {"load", "stream", "compute", "store"} <= tracks
    assert sum(e["ph"] == "X" for e in events) >= 4


@pytest.fixture
def encoded_gemv_file(gemv_file, tmp_path):
    """The GEMV as ``vdir-opt -p vdir-pipeline`` prints it: one ``vdir.encoded_program``."""
    from vdir.tools.vdir_opt import main as opt_main

    path = tmp_path / "gemv.encoded.mlir"
    assert opt_main([str(gemv_file), "-p", "vdir-pipeline", "-o", str(path)]) == 0
    assert "vdir.encoded_program" in path.read_text()
    return path


def test_encoded_program_runs_like_its_source(gemv_file, encoded_gemv_file, tmp_path, capsys):
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--outputs", tmp_path / "src.npz")
    assert status == 0, err
    status, out, err = run_main(capsys, encoded_gemv_file, "--backend", "sim", "--outputs", tmp_path / "enc.npz")
    assert status == 0, err
    assert "y: 1x128 bf16" in out
    assert np.array_equal(np.load(tmp_path / "src.npz")["y"], np.load(tmp_path / "enc.npz")["y"])


def test_encoded_program_check_and_compile_options_need_the_source(encoded_gemv_file, capsys):
    status, _, err = run_main(capsys, encoded_gemv_file, "--backend", "sim", "--check")
    assert_one_line_error(status, err, "gemv.encoded.mlir: error: --check needs the source program")
    status, _, err = run_main(capsys, encoded_gemv_file, "--backend", "sim", "--num-sms", "2")
    assert_one_line_error(status, err, "gemv.encoded.mlir:2:3: error: --num-sms applies when compiling")


def test_the_backend_that_ran_is_named(gemv_file, capsys):
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim")
    assert status == 0, err
    assert out.splitlines()[0] == "backend: sim"


def test_seed_selects_the_random_inputs(gemv_file, tmp_path, capsys):
    def output(seed):
        status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--seed", seed, "--outputs", tmp_path / "o.npz")
        assert status == 0, err
        return np.load(tmp_path / "o.npz")["y"]

    assert np.array_equal(output(1), output(1))
    assert not np.array_equal(output(1), output(2))


def test_check_failure_names_the_worst_element(gemv_file, capsys, monkeypatch):
    from vdir.testing import reference

    real = reference.evaluate

    def off_by_a_lot(module, inputs, scalars=None):
        result = real(module, inputs)
        result["y"][0, 17] = bfloat16(100.0)
        return result

    monkeypatch.setattr(reference, "evaluate", off_by_a_lot)
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--check")
    assert_one_line_error(status, err, "output 'y'", "[0, 17]", "expected 100", "tolerance: within 1 bf16 ulp")
    assert status == 1


@pytest.mark.parametrize(
    "arrays, fragment",
    [
        ({"w": np.zeros((128, 256), np.float32)}, "no array for input 'x'"),
        ({"w": np.zeros((128, 256), np.float32), "x": np.zeros((1, 256)), "z": np.zeros(1)}, "no input named 'z'"),
        ({"w": np.zeros((128, 128), np.float32), "x": np.zeros((1, 256))},
         "bad.npz: error: array 'w' is 128x128, the input 'w' is 128x256 bf16"),
    ],
    ids=["missing", "unknown", "shape"],
)
def test_bad_input_files_are_one_line_errors(gemv_file, tmp_path, capsys, arrays, fragment):
    np.savez(tmp_path / "bad.npz", **arrays)
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", tmp_path / "bad.npz")
    assert_one_line_error(status, err, fragment)


# ---------------------------------------------------------------------------
# Errors that need no compilation
# ---------------------------------------------------------------------------


def test_version(capsys):
    from importlib.metadata import version

    status, out, err = run_main(capsys, "--version")
    assert status == 0, err
    assert out.strip() == f"vdir-run {version('vdir')}"


def test_missing_file(capsys, tmp_path):
    status, _, err = run_main(capsys, tmp_path / "nope.mlir", "--backend", "sim")
    assert_one_line_error(status, err, "nope.mlir: error: no such file")


def test_parse_error_is_located(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(GEMV.replace("vdir.compute gemv", "vdir.compute gemv gemv"))
    status, _, err = run_main(capsys, path, "--backend", "sim")
    assert_one_line_error(status, err, "bad.mlir:4:")


def test_unknown_backend_and_bad_numbers(capsys, gemv_file):
    status, _, err = run_main(capsys, gemv_file, "--backend", "tpu")
    assert_one_line_error(status, err, "invalid choice: 'tpu'")
    status, _, err = run_main(capsys, gemv_file, "--seed", "many")
    assert_one_line_error(status, err, "--seed")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--num-sms", "0")
    assert_one_line_error(status, err, "--num-sms must be at least 1")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--num-sms", "500")
    assert_one_line_error(status, err, "target 'h200' has 132 SMs; cannot use 500")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--target", "tpu9")
    assert_one_line_error(status, err, "unknown target 'tpu9'")


@pytest.mark.parametrize(
    "text, fragment",
    [("load_path=dma", "error: --lowering: lowering option load_path must be 'bulk' or 'lsu', got 'dma'"),
     ("unroll=2", "error: --lowering: unknown lowering option 'unroll' (known: split_copies,"),
     ("lsu", "error: --lowering: lowering options are key=value pairs, got 'lsu'"),
     ("trace=1 trace=0", "error: --lowering: lowering option 'trace' is given twice in 'trace=1 trace=0'")],
)
def test_bad_lowering_options_are_one_line_errors(capsys, gemv_file, text, fragment):
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", "--lowering", text)
    assert_one_line_error(status, err, fragment)
    assert out == ""


def test_lowering_options_are_accepted_on_the_simulator(capsys, gemv_file):
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", "--check", "--lowering", "load_path=lsu split_copies=4")
    assert status == 0, err
    assert "check passed" in out


def test_trace_turns_the_lowering_option_on_for_the_gpu():
    from vdir.lowering.options import LoweringOptions

    assert vdir_run._lowering_options(None, trace=True) == LoweringOptions(trace=True)
    assert vdir_run._lowering_options("load_path=lsu trace=0", trace=True) == LoweringOptions(load_path="lsu", trace=True)
    assert vdir_run._lowering_options(None) is None


@pytest.mark.gpu
def test_trace_is_measured_on_the_gpu(capsys, gemv_file, tmp_path):
    from vdir.device_runtime import backend_status
    from vdir.device_runtime.trace import check_tracks

    ok, why = backend_status("cuda")
    if not ok:
        pytest.skip(f"backend 'cuda' unavailable: {why}")
    status, out, err = run_main(capsys, gemv_file, "--backend", "cuda", "--check", "--trace", tmp_path / "t.json")
    assert status == 0, err
    assert "check passed" in out
    data = json.loads((tmp_path / "t.json").read_text())
    check_tracks(data)
    assert data["otherData"]["clock"].startswith("measured") and any(e["ph"] == "X" for e in data["traceEvents"])


@pytest.mark.parametrize("option", ["--trace", "--outputs"])
def test_output_into_a_missing_folder_is_said_before_the_run(capsys, gemv_file, tmp_path, option):
    path = tmp_path / "no-such-folder" / "f.out"
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", option, path)
    assert_one_line_error(status, err, f"f.out: error: {option}: no such folder", "no-such-folder")
    assert out == ""


@pytest.mark.parametrize("option", ["--trace", "--outputs"])
def test_output_onto_a_folder_is_said_before_the_run(capsys, gemv_file, tmp_path, option):
    """``--outputs DIR`` used to run and write DIR.npz beside the folder."""
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", option, tmp_path)
    assert_one_line_error(status, err, f"error: {option}: is a folder; name the file to write")
    assert out == "" and not tmp_path.with_suffix(".npz").exists()


def test_a_scalar_given_twice_and_a_negative_seed_are_refused(capsys, tmp_path):
    src = tmp_path / "scalar.mlir"
    src.write_text(
        "vdir.program @p(%x: !vdir.buffer<4x64xbf16>, %y: !vdir.buffer<1x64xbf16>, %n: index in 0 to 4) {\n"
        "  %t = vdir.load %x[%n, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x64xbf16>\n"
        "  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>\n}\n")
    status, _, err = run_main(capsys, src, "--backend", "sim", "--scalar", "n=1", "--scalar", "n=2")
    assert_one_line_error(status, err, "error: --scalar n=2: scalar 'n' is already given (n=1)")
    status, _, err = run_main(capsys, src, "--backend", "sim", "--seed", "-1")
    assert_one_line_error(status, err, "--seed: -1 is negative; a seed is a non-negative integer")


def test_a_program_halfway_through_the_pipeline_names_the_passes_left(capsys, gemv_file, tmp_path):
    """vdir-run compiles sources and runs encoded programs; a scheduled one used to get fusion's hint."""
    from vdir.tools.vdir_opt import main as opt_main

    scheduled = tmp_path / "scheduled.mlir"
    assert opt_main([str(gemv_file), "-p", "vdir-place{num-sms=2},vdir-schedule", "-o", str(scheduled)]) == 0
    capsys.readouterr()
    status, _, err = run_main(capsys, scheduled, "--backend", "sim")
    assert_one_line_error(status, err, "this one is at stage 'scheduled': finish it first with vdir-opt -p "
                          "'vdir-alloc-smem,vdir-layout-deps,vdir-encode'", "scheduled.mlir:")


def test_unreadable_inputs_file(capsys, gemv_file, tmp_path, monkeypatch):
    (tmp_path / "junk.npz").write_text("not a zip")
    buffers = [BufferInfo("x", (1, 8), "bf16", False)]
    with pytest.raises(vdir_run.RunError, match="junk.npz: error: not an .npz file"):
        vdir_run.read_inputs(str(tmp_path / "junk.npz"), buffers)
    with pytest.raises(vdir_run.RunError, match="missing.npz: error: no such file"):
        vdir_run.read_inputs(str(tmp_path / "missing.npz"), buffers)


def test_demo_finds_its_argument_from_the_callers_folder(gemv_file):
    """scripts/demo.sh resolves a relative example against the caller's folder and names the backend."""
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "demo.sh"
    env = {"PATH": "/usr/bin:/bin", "VDIR_VENV": str(Path(sys.executable).parent.parent),
           "TMPDIR": str(gemv_file.parent)}
    proc = subprocess.run(["bash", str(script), gemv_file.name], cwd=gemv_file.parent, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"== {gemv_file}:" in proc.stdout
    assert "backend: " in proc.stdout and "check passed" in proc.stdout
    from vdir.device_runtime.trace import check_tracks

    check_tracks(json.loads((gemv_file.parent / "vdir-trace.json").read_text()))  # on either backend
    proc = subprocess.run(["bash", str(script), "missing.mlir"], cwd=gemv_file.parent, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.strip() == "demo.sh: error: missing.mlir: no such file"


# ---------------------------------------------------------------------------
# Files read and written
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make_argv, fragment",
    [
        (lambda d: ["--trace", d / "gemv.mlir"], "gemv.mlir: error: --trace: is the program file"),
        (lambda d: ["--outputs", d / "gemv.mlir"], "gemv.mlir: error: --outputs: is the program file"),
        (lambda d: ["--outputs", d / "link.mlir"], "link.mlir: error: --outputs: is the program file"),
        (lambda d: ["--trace", d / "hard.mlir"], "hard.mlir: error: --trace: is the program file"),
        (lambda d: ["--inputs", d / "in.npz", "--outputs", d / "in.npz"],
         "in.npz: error: --outputs: is the --inputs file"),
        (lambda d: ["--trace", d / "p", "--outputs", d / "sub" / ".." / "p"],
         "p: error: --outputs: is the --trace file"),
    ],
    ids=["trace-program", "outputs-program", "symlink", "hard-link", "outputs-inputs", "trace-outputs"],
)
def test_an_output_onto_a_file_the_run_reads_or_writes_is_refused(gemv_file, tmp_path, capsys, make_argv, fragment):
    """``--trace prog.mlir`` used to replace the program with its trace, and exit 0."""
    (tmp_path / "link.mlir").symlink_to(gemv_file)
    (tmp_path / "hard.mlir").hardlink_to(gemv_file)
    (tmp_path / "sub").mkdir()
    np.savez(tmp_path / "in.npz", w=np.zeros((128, 256), np.float32), x=np.zeros((1, 256), np.float32))
    before = (tmp_path / "in.npz").read_bytes()
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", *make_argv(tmp_path))
    assert_one_line_error(status, err, fragment, "name another file to write")
    assert out == ""  # said before the run
    assert gemv_file.read_text() == GEMV and (tmp_path / "in.npz").read_bytes() == before
    assert not (tmp_path / "p").exists()


def test_outputs_are_written_to_exactly_the_path_named(gemv_file, tmp_path, capsys):
    """``--outputs out`` used to write ``out.npz`` (np.savez adds the suffix to a name)."""
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--outputs", tmp_path / "out")
    assert status == 0, err
    assert np.load(tmp_path / "out")["y"].shape == (1, 128)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o666 & ~umask  # as open() makes it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemv.mlir", "out"]  # no out.npz, no temporary


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_device_is_no_outputs_file_and_a_full_one_fails_the_trace(gemv_file, capsys):
    """``--outputs /dev/full`` used to exit 0 having written ``/dev/full.npz``."""
    for device in ("/dev/full", "/dev/null"):  # an .npz is a zip, written with seeks back
        status, out, err = run_main(capsys, gemv_file, "--backend", "sim", "--outputs", device)
        assert_one_line_error(status, err, f"{device}: error: --outputs: not a regular file")
        assert out == "" and not os.path.exists(device + ".npz")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--trace", "/dev/full")
    assert_one_line_error(status, err, "/dev/full: error: cannot write the trace (No space left on device)")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--trace", "/dev/null")
    assert status == 0, err


@pytest.mark.parametrize("option", ["--trace", "--outputs", "--inputs"])
def test_an_empty_path_is_refused(gemv_file, capsys, option):
    """An empty ``--trace`` or ``--outputs`` used to be ignored, an empty ``--inputs`` to mean random inputs."""
    status, out, err = run_main(capsys, gemv_file, "--backend", "sim", option, "")
    assert_one_line_error(status, err, f"error: {option}: the path is empty")
    assert out == ""
    status, _, err = run_main(capsys, "", "--backend", "sim")
    assert_one_line_error(status, err, "error: the program's path is empty")


def _half_then_fail(file, *_args, **_kwargs):
    """A write (to a file object, or to a path: Trace.write's) that stops halfway: some bytes, then a full disk."""
    if not hasattr(file, "write"):
        with open(file, "wb") as f:
            _half_then_fail(f)
    file.write(b"{half")
    file.flush()
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("option", ["--trace", "--outputs"])
def test_a_failed_write_leaves_the_old_file_and_no_part(gemv_file, tmp_path, capsys, monkeypatch, option):
    """A write that failed used to leave a truncated file in place of the old one."""
    from vdir.device_runtime.trace import Trace

    monkeypatch.setattr(Trace, "write", lambda self, path: _half_then_fail(path))
    monkeypatch.setattr(vdir_run.np, "savez", _half_then_fail)
    path = tmp_path / "old.out"
    path.write_text("old")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", option, path)
    assert_one_line_error(status, err, "old.out: error: cannot write", "No space left on device")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemv.mlir", "old.out"]  # no temporary left
    path.unlink()
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", option, path)
    assert status == 1 and not path.exists()


def test_a_trace_over_the_file_size_limit_is_not_left_half_written(gemv_file, tmp_path):
    """Under ``ulimit -f`` the write fails for real (EFBIG), part of the way through."""
    trace = tmp_path / "part.json"
    command = f"ulimit -f 2; exec {sys.executable} -m vdir.tools.vdir_run {gemv_file} --backend sim --trace {trace}"
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{trace}: error: cannot write the trace (File too large)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemv.mlir"]


def _npz_of_headers(path, **shapes):
    """An .npz whose arrays are .npy headers alone (``name=(shape, descr)``): no data to decompress."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (shape, descr) in shapes.items():
            header = io.BytesIO()
            npy_format.write_array_header_2_0(header, {"descr": descr, "fortran_order": False, "shape": shape})
            archive.writestr(f"{name}.npy", header.getvalue())
    return path


@pytest.mark.parametrize(
    "w, fragment",
    [
        (((20000, 20000), "<f4"), "array 'w' is 20000x20000, the input 'w' is 128x256 bf16"),
        (((10**12,), "<f4"), "array 'w' is 1000000000000, the input 'w' is 128x256 bf16"),
        (((128, 256), "|O"), "array 'w' has dtype object, expected a number array for bf16"),
        (((128, 256), "<U8"), "array 'w' has dtype <U8, expected a number array for bf16"),
        (((128, 256), [("a", "<i2")]), "array 'w' has dtype [('a', '<i2')], expected a number array for bf16"),
    ],
    ids=["large", "huge", "object", "text", "record"],
)
def test_input_arrays_are_checked_from_their_headers(gemv_file, tmp_path, capsys, w, fragment):
    """A shape or dtype is refused before the data is read: a 20000x20000 array that the file only
    declares (as a compressed one would hold it) used to be decompressed first, and one of 10^12
    elements to be reported as the host out of memory."""
    bad = _npz_of_headers(tmp_path / "bad.npz", w=w, x=((1, 256), "<f4"))
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", bad)
    assert_one_line_error(status, err, f"bad.npz: error: {fragment}")


def test_an_npz_member_that_is_not_an_array_is_named(gemv_file, tmp_path, capsys):
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as archive:
        archive.writestr("w", b"hello")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", tmp_path / "bad.npz")
    assert_one_line_error(status, err, "bad.npz: error: 'w' is not a .npy array")
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as archive:
        archive.writestr("w.npy", b"\x93NUMPY\x01\x00\x10\x00{garbage      }\n")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", tmp_path / "bad.npz")
    assert_one_line_error(status, err, "bad.npz: error: array 'w' has a bad .npy header")
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as archive:  # numpy's tokenizer fails on it, not with ValueError
        archive.writestr("w.npy", b"\x93NUMPY\x01\x00\x02\x00{\n")
    status, _, err = run_main(capsys, gemv_file, "--backend", "sim", "--inputs", tmp_path / "bad.npz")
    assert_one_line_error(status, err, "bad.npz: error: array 'w' has a bad .npy header")


def test_a_program_that_is_not_a_regular_file_is_refused_unread(tmp_path, capsys):
    """``vdir-run /dev/zero`` used to read until the memory ran out; a pipe may never end either."""
    os.mkfifo(tmp_path / "pipe")  # opening it would wait for a writer
    for path in ("/dev/zero", tmp_path / "pipe"):
        status, _, err = run_main(capsys, path, "--backend", "sim")
        assert_one_line_error(status, err, f"{path}: error: not a regular file", "- reads standard input")


def _stdin(monkeypatch, text):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_dash_reads_the_program_from_standard_input(capsys, monkeypatch):
    """As for vdir-opt: ``-`` is standard input, and errors there are located in ``<stdin>``."""
    _stdin(monkeypatch, GEMV)
    status, out, err = run_main(capsys, "-", "--backend", "sim", "--check")
    assert status == 0, err
    assert "check passed" in out
    _stdin(monkeypatch, GEMV.replace("vdir.compute gemv", "vdir.compute gemv gemv"))
    status, _, err = run_main(capsys, "-", "--backend", "sim")
    assert_one_line_error(status, err, "<stdin>:4:")
    monkeypatch.setattr("sys.stdin", None)
    status, _, err = run_main(capsys, "-", "--backend", "sim")
    assert_one_line_error(status, err, "error: standard input is closed")


# ---------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------


def test_random_inputs_are_seeded_scaled_and_never_zero():
    buffers = [
        BufferInfo("w", (512, 2048), "bf16", False),
        BufferInfo("x", (1, 2048), "bf16", False),
        BufferInfo("acc", (1, 512), "f32", False),
        BufferInfo("y", (1, 512), "bf16", True, is_input=False),
        BufferInfo("r", (1, 512), "bf16", True, is_input=True),  # inout: needs initial data
        BufferInfo("tmp", (1, 512), "bf16", False, is_input=False),  # scratch
    ]
    a, b = random_inputs(buffers, 7), random_inputs(buffers, 7)
    assert set(a) == {"w", "x", "acc", "r"}  # out and scratch buffers are not inputs
    assert all(np.array_equal(a[k].view(np.uint8), b[k].view(np.uint8)) for k in a)
    assert a["w"].dtype == bfloat16 and a["acc"].dtype == np.float32
    rms = {k: float(np.sqrt(np.mean(np.square(v.astype(np.float64))))) for k, v in a.items()}
    assert rms["w"] == pytest.approx(1 / np.sqrt(2048), rel=0.5)
    assert rms["x"] == pytest.approx(0.5, rel=0.5) and rms["acc"] == pytest.approx(0.5, rel=0.1)
    assert all(np.all(np.isfinite(v.astype(np.float32))) for v in a.values())
    assert all(np.count_nonzero(v.astype(np.float32)) == v.size for k, v in a.items() if k != "acc")
    w = a["w"].astype(np.float32)
    assert 0.4 < np.mean(w > 0) < 0.6  # signs are balanced
    assert len(np.unique(w)) > 1000 and not np.array_equal(w[0], w[1])
    assert not np.array_equal(random_inputs(buffers, 8)["x"], a["x"])


def test_tolerances():
    y = np.array([[1.0, -2.0, 0.5, 1e-3]], dtype=np.float32).astype(bfloat16)
    one_ulp = y.copy()
    one_ulp.view(np.uint16)[0, 0] += 1  # 1 + 2^-7
    assert compare_outputs({"y": one_ulp}, {"y": y}, "sim") is None
    two_ulps = one_ulp.copy()
    two_ulps.view(np.uint16)[0, 0] += 1
    mismatch = compare_outputs({"y": two_ulps}, {"y": y}, "sim")
    assert mismatch is not None and mismatch.index == (0, 0) and mismatch.expected == 1.0
    # cuda: 2e-2 of the output's scale (2.0) absolute, plus 2e-2 relative
    near = (y.astype(np.float32) + 0.03).astype(bfloat16)
    assert compare_outputs({"y": near}, {"y": y}, "cuda") is None
    far = y.astype(np.float32).copy()
    far[0, 3] += 0.2
    mismatch = compare_outputs({"y": far.astype(bfloat16)}, {"y": y}, "cuda")
    assert mismatch is not None and mismatch.index == (0, 3) and "atol = rtol = 2e-2" in str(mismatch)
    nan = y.copy()
    nan[0, 2] = np.nan
    mismatch = compare_outputs({"y": nan}, {"y": y}, "sim")
    assert mismatch is not None and mismatch.index == (0, 2)


#: a doubling in f32: NaN stays NaN, 3e38 overflows to infinity
DOUBLE = """\
vdir.program @double(%x: !vdir.buffer<1x64xf32>, %y: !vdir.buffer<1x64xf32>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xf32> -> !vdir.tile<1x64xf32>
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x64xf32>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xf32>
  %s = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xf32>, !vdir.buffer<1x64xf32>
}
"""


def test_non_finite_outputs_equal_to_the_reference_pass_the_check_without_warnings(tmp_path, capsys):
    (tmp_path / "double.mlir").write_text(DOUBLE)
    x = np.ones((1, 64), np.float32)
    x[0, 3], x[0, 5], x[0, 6], x[0, 7] = np.nan, np.inf, -np.inf, 3e38
    np.savez(tmp_path / "in.npz", x=x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy warning would end the run as an internal error
        status, out, err = run_main(capsys, tmp_path / "double.mlir", "--backend", "sim", "--check",
                                    "--inputs", tmp_path / "in.npz")
    assert status == 0, err
    assert err == ""
    assert "y: 1x64 f32, max |x| 2, mean 2, 1 NaN, 3 infinite, first [2, 2, 2, nan, ...]" in out
    assert "check passed" in out


def test_non_finite_values_must_match_exactly():
    y = np.array([[1.0, np.nan, np.inf, -np.inf]], dtype=np.float32)
    assert compare_outputs({"y": y.copy()}, {"y": y}, "sim") is None
    assert compare_outputs({"y": y.copy()}, {"y": y}, "cuda") is None
    for index, value in ((1, 1.0), (2, -np.inf), (3, np.nan), (0, np.inf)):
        got = y.copy()
        got[0, index] = value
        for backend in ("sim", "cuda"):
            mismatch = compare_outputs({"y": got}, {"y": y}, backend)
            assert mismatch is not None and mismatch.index == (0, index)


def test_a_non_finite_reference_does_not_widen_the_tolerance():
    y = np.array([[np.inf, 1.0, 1.0, 1.0]], dtype=np.float32)
    got = y.copy()
    got[0, 1] = 1.1  # far more than 1 bf16 ulp of 1, and than 2e-2 of the finite scale (1)
    for backend in ("sim", "cuda"):
        mismatch = compare_outputs({"y": got}, {"y": y}, backend)
        assert mismatch is not None and mismatch.index == (0, 1)
