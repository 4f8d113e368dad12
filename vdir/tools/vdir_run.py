"""``vdir-run``: compile an IR file and run it on a backend.

::

    vdir-run prog.mlir|- [--backend sim|cuda] [--inputs in.npz] [--outputs out.npz]
                       [--seed N] [--check] [--trace trace.json] [--profile]
                       [--target h200] [--num-sms N] [--load-window N]
                       [--lowering 'key=value ...'] [--pipeline 'key=value ...']
                       [--max-micro-ops N] [--max-code-bytes N] [--max-names-bytes N]

Without ``--inputs`` the inputs are random (seeded, never zero) with the
scale 0.5 for activations and 1/sqrt(columns) for weight matrices (i32
inputs: uniform over the int32 range). ``--check``
compares every output with the reference evaluator and exits 1 on a
mismatch, printing the worst element and the tolerance. ``--outputs`` saves
the outputs as float32 arrays (bf16 widens exactly; i32 outputs stay int32). ``--trace`` writes the
launch's Chrome/Perfetto trace: the simulator's, or on ``cuda`` the measured one
(the lowering option ``trace`` is then turned on). ``--profile`` prints, from that trace, where
the launch's time went: each engine's busy share and the critical path's time by stage and by
wait (:mod:`vdir.device_runtime.profile`; on the simulator, its cost model's time, not a
measurement). ``--lowering`` sets the lowering options
of a backend that lowers the program (``cuda``; checked on every backend);
``--pipeline`` the pass pipeline's options (``vdir-pipeline``'s, e.g.
``'flag-words=4096 prefetch=1'``) for a source program.
The file holds a source ``vdir.program`` (compiled here) or the one
``vdir.encoded_program`` that ``vdir-opt -p vdir-pipeline`` prints (run as
it is; ``--check`` then needs the source form). The first output line names
the backend that ran. ``--max-micro-ops``, ``--max-code-bytes`` and
``--max-names-bytes`` set the size limits (:mod:`vdir.limits`) of the compile,
of reading an encoded program back and of ``--check``'s reference evaluator.
The program is read from standard input when the file is ``-`` (as for
``vdir-opt``); anything but a regular file is refused unread. ``--inputs``'
arrays are checked from their .npy headers before their data is read.
``--outputs`` and ``--trace`` write the path named, whole or not at all (a
temporary file renamed into place), and never the program, the inputs or
each other's file.
Every error is one line on stderr and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
from numpy.lib import format as npy_format
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from vdir import installed_version
from vdir.compiler import compile_module
from vdir.device_runtime import backend_names, default_backend
from vdir.device_runtime.executable import Executable
from vdir.diagnostics import UserError, VdirError, located
from vdir.dialects.vdir import EncodedProgramOp, ProgramOp
from vdir.dialects.vdir_sched import Stage
from vdir.families import DTYPES
from vdir.isa import BufferInfo, EncodedProgram, LoopFormError, ScalarInfo, index_ranges
from vdir.limits import limits_in_effect
from vdir.target import MIN_SMS, get_target
from vdir.testing.compare import TOLERANCES, compare_outputs
from vdir.tools.common import (
    STDIN_ARG,
    STDIN_NAME,
    OneLineParser,
    add_limit_options,
    ascii_integer,
    check_output_path,
    failure_message,
    flag_error,
    integer_option,
    is_special_file,
    limits_from_args,
    parse_module_file,
    parse_program_bytes,
    replaced_on_success,
    run_cli,
    writes_over,
)

if TYPE_CHECKING:
    from vdir.lowering.options import LoweringOptions
    from vdir.transforms.pipeline_options import PipelineOptions


class RunError(VdirError):
    """A problem this tool reports as one line (bad option values, unreadable files)."""


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = OneLineParser(prog="vdir-run", description="Compile a vdir IR file and run it on a backend.")
    p.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    p.add_argument("file", help="the IR file (.mlir); - reads standard input")
    p.add_argument("--backend", choices=backend_names(), help="default: cuda when a GPU is usable, else sim")
    p.add_argument("--inputs", metavar="NPZ", help="input arrays by argument name (default: random)")
    p.add_argument("--outputs", metavar="NPZ", help="save the outputs (as float32; i32 and i64 as integers) to this .npz file")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs and of the simulator's interleaving")
    p.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                   help="a launch-time scalar's value (repeatable; default: random in its range)")
    p.add_argument("--check", action="store_true", help="compare the outputs with the reference evaluator")
    p.add_argument("--trace", metavar="JSON",
                   help="write the launch's Chrome/Perfetto trace (cuda: lowered with the trace option)")
    p.add_argument("--profile", action="store_true",
                   help="print where the launch's time went: engines busy, the critical path by stage "
                        "(sim: modelled; cuda: lowered with the trace option)")
    p.add_argument("--target", default=None, help="target description (default: the program's, h200 unless it says otherwise)")
    p.add_argument("--num-sms", type=integer_option, help="use only this many SMs")
    p.add_argument("--load-window", type=integer_option, help="simulator: loads in flight per load engine")
    p.add_argument("--lowering", metavar="OPTIONS",
                   help="lowering options, e.g. 'load_path=lsu split_copies=4'")
    p.add_argument("--pipeline", metavar="OPTIONS",
                   help="vdir-pipeline options for a source program, e.g. 'flag-words=4096 prefetch=1'")
    add_limit_options(p)
    return p


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def random_inputs(
    buffers: Sequence[BufferInfo], seed: int, offset_ranges: Mapping[tuple[int, int], tuple[int, int]] | None = None
) -> dict[str, np.ndarray]:
    """Seeded random values for every input buffer, never zero.

    A weight-like matrix (at least :data:`MATRIX_ROWS` rows) gets the scale
    1/sqrt(columns), so that its products with an activation of unit scale
    stay of unit scale; anything smaller (activations, norm weights, a
    residual stream of a few rows) gets the scale 0.5. f32 buffers are
    ``normal * scale``; bf16 buffers use :func:`random_bf16`, which is as
    fast as filling memory (a 16-layer model has gigabytes of weights);
    i32 buffers are uniform over the whole int32 range, except the elements
    the program reads as runtime offsets (``offset_ranges``, from
    :func:`vdir.isa.index_ranges`): those are uniform over the values every
    reader accepts, so random inputs never stop the launch.
    """
    rng = np.random.default_rng(seed)
    arrays = {}
    for b, info in enumerate(buffers):
        if not info.is_input:
            continue
        columns = info.shape[-1]
        rows = info.shape[0] if len(info.shape) > 1 else 1
        scale = 1.0 / np.sqrt(columns) if rows >= MATRIX_ROWS else 0.5
        if info.dtype == "bf16":
            arrays[info.name] = random_bf16(rng, tuple(info.shape), scale)
        elif info.dtype in INT_RANGES:  # token ids, positions, fixed-point sums: any bit pattern
            low, high = INT_RANGES[info.dtype]
            ints = rng.integers(low, high, info.shape, dtype=DTYPES[info.dtype], endpoint=True)
            for (buffer, element), (lo, hi) in (offset_ranges or {}).items():
                if buffer == b:
                    ints.reshape(-1)[element] = rng.integers(lo, hi, endpoint=True)
            arrays[info.name] = ints
        else:
            values = rng.standard_normal(info.shape, dtype=np.float32)
            arrays[info.name] = (values * np.float32(scale)).astype(DTYPES[info.dtype])
    return arrays


#: each integer dtype's range: what random inputs cover, and what an input array's values must lie in
INT_RANGES = {name: (int(np.iinfo(DTYPES[name]).min), int(np.iinfo(DTYPES[name]).max)) for name in ("i32", "i64")}

#: buffers with at least this many rows are treated as weight matrices by :func:`random_inputs`.
MATRIX_ROWS = 64


def random_bf16(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Random bf16 values of magnitude ~``scale``: random sign and mantissa, 4 binades.

    Built from one random u16 per element (sign bit, 7 mantissa bits, 2 bits
    choosing one of four consecutive binades), so no value is zero and none
    is rounded. Four binades from 2^e on have a root mean square of about
    1.7 * 2^(e+2); e is picked to bring that within a factor sqrt(2) of ``scale``.
    """
    lowest = int(np.round(np.log2(scale / 1.7))) - 2 + 127  # biased exponent of the lowest binade
    out = np.empty(shape, dtype=np.uint16)
    flat = out.reshape(-1)
    chunk = 1 << 24
    for start in range(0, flat.size, chunk):
        count = min(chunk, flat.size - start)
        bits = rng.bit_generator.random_raw(-(-count // 4)).view(np.uint16)[:count]
        bits &= np.uint16(0x81FF)  # sign, two binade bits, mantissa
        bits += np.uint16(lowest << 7)  # binade bits + lowest = the exponent (no carry: <= 255)
        flat[start : start + count] = bits
    return out.view(DTYPES["bf16"])


def read_inputs(path: str, buffers: Sequence[BufferInfo]) -> dict[str, np.ndarray]:
    """Input arrays from an .npz file, converted to each buffer's dtype.

    Each array's name, shape and dtype are checked against its input from
    the array's .npy header before any data is read (an array too large is
    an error, not gigabytes decompressed). Floating-point arrays are rounded
    to the buffer dtype; raw 2-byte arrays (bf16 saved by numpy) are
    reinterpreted as bf16. An i32 buffer takes integer arrays whose values
    fit in int32, nothing else.
    """
    if not Path(path).is_file():
        raise RunError(f"{path}: error: no such file")
    if not zipfile.is_zipfile(path):
        raise RunError(f"{path}: error: not an .npz file (np.savez writes one)")
    headers = _npz_headers(path)
    inputs = {b.name: b for b in buffers if b.is_input}
    unknown = sorted(set(headers) - set(inputs))
    if unknown:
        raise RunError(f"{path}: error: the program has no input named '{unknown[0]}' (inputs: {', '.join(inputs)})")
    missing = [name for name in inputs if name not in headers]
    if missing:
        raise RunError(f"{path}: error: no array for input '{missing[0]}'")
    for name, (shape, dtype) in headers.items():
        want = tuple(inputs[name].shape)
        if shape != want:
            raise RunError(f"{path}: error: array '{name}' is {_shape_text(shape)}, "
                           f"the input '{name}' is {_shape_text(want)} {inputs[name].dtype}")
        _check_dtype(path, name, dtype, inputs[name].dtype)
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = {k: npz[k] for k in npz.files}
    except _UNREADABLE_NPZ as e:
        raise RunError(f"{path}: error: not a readable .npz file ({e})") from None
    return {name: _to_dtype(path, name, array, inputs[name].dtype) for name, array in stored.items()}


#: what reading a damaged .npz raises: zipfile's errors (an encrypted member: RuntimeError; an unknown
#: compression: NotImplementedError; a damaged deflate stream: zlib.error) and numpy's (a bad .npy header)
_UNREADABLE_NPZ = (OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error)

#: the .npy header readers by format version (3.0 differs from 2.0 only in structured dtypes' field names)
_NPY_HEADER_READERS = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}


def _npz_headers(path: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Each array's (shape, dtype) by name (as ``np.load`` names it), read from its .npy header alone."""
    headers = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                name = member.removesuffix(".npy")
                if name in headers:
                    raise RunError(f"{path}: error: holds two arrays named '{name}'")
                with archive.open(member) as f:
                    headers[name] = _npy_header(path, name, f)
    except _UNREADABLE_NPZ as e:
        raise RunError(f"{path}: error: not a readable .npz file ({e})") from None
    return headers


def _npy_header(path: str, name: str, f: IO[bytes]) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the .npy header at the start of ``f``; an error naming the array if there is none."""
    try:
        version = npy_format.read_magic(f)
    except ValueError:
        raise RunError(f"{path}: error: '{name}' is not a .npy array (np.savez writes one per array)") from None
    reader = _NPY_HEADER_READERS.get(version)
    if reader is None:
        raise RunError(f"{path}: error: array '{name}' is in .npy format version {version[0]}.{version[1]}; "
                       "expected 1.0 or 2.0 (np.savez writes them)")
    try:
        shape, _, dtype = reader(f)
    except Exception:  # noqa: BLE001  numpy's header parser raises ValueError, SyntaxError or tokenize's
        # TokenError, its reason quoting the parser's objects: any of them is a bad header, said without it
        raise RunError(f"{path}: error: array '{name}' has a bad .npy header") from None
    return tuple(shape), dtype


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "a scalar"


def _saved_bf16(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is how a .npy file holds bf16 (which numpy does not know): two plain bytes, not a
    record of named fields."""
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.fields is None


def _check_dtype(path: str, name: str, dtype: np.dtype, want: str) -> None:
    """Say, from its header, that an array of ``dtype`` cannot be an input of dtype ``want``
    (an integer input's values are checked once read: :func:`_to_int`)."""
    if dtype == DTYPES[want] or (want == "bf16" and _saved_bf16(dtype)):
        return
    kinds, what = ("iu", "an integer array") if want in INT_RANGES else ("fiu", "a number array")
    if dtype.kind not in kinds:
        raise RunError(f"{path}: error: array '{name}' has dtype {dtype}, expected {what} for {want}")


def _to_dtype(path: str, name: str, array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` as an input of ``dtype`` (its dtype already accepted by :func:`_check_dtype`)."""
    want = DTYPES[dtype]
    if array.dtype == want:
        return np.ascontiguousarray(array)
    if dtype == "bf16" and _saved_bf16(array.dtype):
        return np.ascontiguousarray(array).view(want)
    if dtype in INT_RANGES:
        return _to_int(path, name, array, dtype)
    return np.ascontiguousarray(array.astype(want))


def _to_int(path: str, name: str, array: np.ndarray, dtype: str) -> np.ndarray:
    """An integer array, as ``dtype`` (i32 or i64); values outside its range are an error."""
    lo, hi = INT_RANGES[dtype]
    if array.size and (int(array.min()) < lo or int(array.max()) > hi):
        raise RunError(f"{path}: error: array '{name}' has values outside the {DTYPES[dtype]} range")
    return np.ascontiguousarray(array.astype(DTYPES[dtype]))


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


#: the pass that takes a program from each stage (in :class:`Stage` order) to the next, the last to encoded
STAGE_PASSES = ("vdir-place", "vdir-schedule", "vdir-alloc-smem", "vdir-layout-deps", "vdir-encode")


def compile_file(path: str, target: str | None, num_sms: int | None, pipeline: PipelineOptions | None = None,
                 ) -> tuple[ModuleOp | None, EncodedProgram]:
    """Parse and verify ``path`` and return (source module, encoded program).

    A source program (one ``vdir.program``) is compiled (with the pipeline
    options ``pipeline``, None: the defaults); an already encoded
    one (one ``vdir.encoded_program``, as ``vdir-opt -p vdir-pipeline``
    prints) is read back as it is, and the source module is then None: the
    encoded form keeps no source for the reference evaluator.
    """
    module = _parse_program(path)
    name = program_name(path)
    encoded = [op for op in module.ops if isinstance(op, EncodedProgramOp)]
    if encoded and not any(isinstance(op, ProgramOp) for op in module.ops):
        if pipeline is not None:
            raise UserError(located("--pipeline applies when compiling; the program is already encoded", encoded[0],
                                    name))
        return None, _encoded_program(name, encoded, target, num_sms)
    for op in module.ops:
        if isinstance(op, ProgramOp) and op.stage is not Stage.SOURCE:
            rest = ",".join(STAGE_PASSES[list(Stage).index(op.stage):])
            raise UserError(located(
                f"vdir-run compiles a source program or runs an encoded one; this one is at stage "
                f"'{op.stage.value}': finish it first with vdir-opt -p '{rest}'", op))
    try:  # the module stays as parsed: the reference evaluator runs it
        program = compile_module(module, target=target, num_sms=num_sms, pipeline=pipeline)
    except DiagnosticException as e:  # a PassFailure, or a verifier's error inside a pass: located as vdir-opt does
        raise UserError(failure_message(e, name)) from None
    return module, program


def program_name(path: str) -> str:
    """The name errors locate the program in: its path, or ``<stdin>`` for ``-`` (as ``vdir-opt`` names it)."""
    return STDIN_NAME if path == STDIN_ARG else path


def _parse_program(path: str) -> ModuleOp:
    """Read, parse and verify the program: the file ``path``, or standard input for ``-`` (as ``vdir-opt``).

    A folder, or anything but a regular file (a device such as ``/dev/zero``,
    a pipe, which may never end), is refused before it is read
    (:func:`~vdir.tools.common.parse_module_file`, as ``vdir-opt`` refuses it).
    """
    if path != STDIN_ARG:
        return parse_module_file(path)
    if sys.stdin is None:
        raise UserError("error: standard input is closed: name the program's IR file")
    return parse_program_bytes(sys.stdin.buffer.read(), STDIN_NAME)


def _encoded_program(
    path: str, ops: Sequence[EncodedProgramOp], target: str | None, num_sms: int | None
) -> EncodedProgram:
    """The one encoded program of ``ops``; the compile-time options must not ask for another."""
    from vdir.transforms.encode import program_of

    if len(ops) != 1:
        raise UserError(located(f"expected one vdir.encoded_program in the module, found {len(ops)}", ops[1], path))
    op = ops[0]
    if target is not None and get_target(target).name != op.target.data:
        raise UserError(located(
            f"--target {target}: the program is already encoded for '{op.target.data}'", op, path))
    if num_sms is not None:
        raise UserError(located("--num-sms applies when compiling; the program is already encoded", op, path))
    program = program_of(op)
    try:
        program.check_loops()
    except LoopFormError as e:
        raise UserError(located(str(e), op, path)) from None
    return program


def run(args: argparse.Namespace) -> int:
    """Compile, run, optionally save / trace / check; return the exit status."""
    backend = args.backend or default_backend()
    limits = limits_from_args(args)
    if args.num_sms is not None and args.num_sms < MIN_SMS:
        raise RunError(f"error: --num-sms must be at least {MIN_SMS}")
    if args.target is not None:
        get_target(args.target, args.num_sms)  # an unknown target or too many SMs: say so before compiling
    lowering = _lowering_options(args.lowering, trace=bool(args.trace or args.profile) and backend != "sim")
    pipeline = _pipeline_options(args.pipeline, args.target, args.num_sms)
    _check_paths(args)
    with limits_in_effect(limits), np.errstate(all="ignore"):  # NaN and infinities are data:
        return _compile_and_run(args, backend, lowering, pipeline)  # the summary and --check report them


def _check_paths(args: argparse.Namespace) -> None:
    """Before anything is compiled: no path is empty, each output file can be written, and none is a
    file that the run reads (the program, ``--inputs``) or that the other output option writes."""
    if args.file == "":
        raise RunError("error: the program's path is empty; name its IR file (- reads standard input)")
    for option in ("--inputs", "--trace", "--outputs"):
        if getattr(args, option[2:]) == "":
            raise RunError(f"error: {option}: the path is empty; name the file")
    taken = [("the program file", None if args.file == STDIN_ARG else args.file), ("the --inputs file", args.inputs)]
    for option, path in (("--trace", args.trace), ("--outputs", args.outputs)):
        if path is None:
            continue
        check_output_path(path, option)
        if option == "--outputs" and is_special_file(path):  # /dev/null included: zipfile seeks back in what it writes
            raise RunError(f"{path}: error: --outputs: not a regular file; name the .npz file to write")
        for what, other in taken:
            if other is not None and writes_over(path, other):
                raise RunError(f"{path}: error: {option}: is {what}; name another file to write")
        taken.append((f"the {option} file", path))


def _compile_and_run(args: argparse.Namespace, backend: str, lowering: LoweringOptions | None,
                     pipeline: PipelineOptions | None) -> int:
    """Compile, run, optionally save / trace / check (the options already checked); return the exit status."""
    module, program = compile_file(args.file, args.target, args.num_sms, pipeline)
    if module is None and args.check:  # said before the run, which may be long
        raise RunError(f"{program_name(args.file)}: error: --check needs the source program: the encoded form keeps "
                       "no source for the reference evaluator (run vdir-run on the file given to vdir-opt)")
    if args.check and not any(b.is_output for b in program.buffers):
        raise RunError(f"{program_name(args.file)}: error: --check: the program has no outputs (it stores to no buffer), "
                       "so there is nothing to compare with the reference evaluator")
    if args.inputs is not None:
        arrays = read_inputs(args.inputs, program.buffers)
    else:
        arrays = random_inputs(program.buffers, args.seed, index_ranges(program))
    scalars = parse_scalars(args.scalar, program.scalars, args.seed)
    if scalars:
        print("scalars: " + ", ".join(f"{k} = {v}" for k, v in scalars.items()))
    launch_options = {"seed": args.seed} if backend == "sim" else {}  # the simulator's interleaving
    if args.load_window is not None:
        launch_options["load_window"] = args.load_window
    with Executable(program, backend=backend, target=program.target, options=lowering, **launch_options) as exe:
        print(backend_line(backend, exe.platform))
        result = exe(**arrays, **scalars)
        outputs = result if isinstance(result, dict) else {exe.outputs[0].name: result}
        if args.trace:
            _write_trace(exe, args.trace)
        profiled = exe.profile() if args.profile else None
    for name, array in outputs.items():
        print(_summary(name, array))
    if profiled is not None:
        print("\n".join(profiled.lines()))
    if args.outputs:
        _save(args.outputs, outputs)
    if module is not None and args.check:
        return _check(module, program, arrays, scalars, outputs, backend)
    return 0


def _seed(text: str) -> int:
    """``--seed``'s value: a non-negative integer (numpy's generators take no other)."""
    try:
        value = ascii_integer(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a seed is a non-negative integer")
    return value


def parse_scalars(given: Sequence[str], scalars: Sequence[ScalarInfo], seed: int) -> dict[str, int]:
    """The ``--scalar NAME=VALUE`` values; a scalar not given is random in its range (from ``seed``)."""
    known = {s.name: s for s in scalars}
    values: dict[str, int] = {}
    for item in given:
        name, sep, text = item.partition("=")
        if not sep or name not in known:
            names = ", ".join(known) or "none"
            raise RunError(f"error: --scalar {item}: expected NAME=VALUE with NAME one of the program's scalars ({names})")
        if name in values:
            raise RunError(f"error: --scalar {item}: scalar '{name}' is already given ({name}={values[name]})")
        try:
            values[name] = ascii_integer(text)
        except ValueError:
            raise RunError(f"error: --scalar {item}: '{text}' is not an integer") from None
    rng = np.random.default_rng(seed)
    return {s.name: values[s.name] if s.name in values else int(rng.integers(s.lo, s.hi)) for s in scalars}


def backend_line(backend: str, platform: object) -> str:
    """``backend: NAME`` and, where the backend names its device, ``(DEVICE)``: which backend ran."""
    device_name = getattr(platform, "device_name", None)
    device = device_name() if callable(device_name) else ""
    return f"backend: {backend}" + (f" ({device})" if device else "")


def _lowering_options(text: str | None, trace: bool = False) -> LoweringOptions | None:
    """The ``--lowering`` options, checked before anything is compiled (None: not given);
    with ``trace``, the lowering option ``trace`` on (a GPU kernel that stamps its trace)."""
    if text is None and not trace:
        return None
    from vdir.lowering.options import LoweringOptions  # the lowering is imported only when asked for

    try:
        options = LoweringOptions.parse(text or "")
    except VdirError as e:
        raise RunError(flag_error("--lowering", e)) from None
    return options.with_overrides(trace=True) if trace else options


def _pipeline_options(text: str | None, target: str | None, num_sms: int | None) -> PipelineOptions | None:
    """The ``--pipeline`` options, checked before anything is compiled (None: not given); a target or an
    SM count other than ``--target``'s or ``--num-sms``' is refused."""
    if text is None:
        return None
    from vdir.transforms.pipeline_options import PipelineOptions

    try:
        return PipelineOptions.parse(text).with_given(target=target, num_sms=num_sms)
    except VdirError as e:
        raise RunError(flag_error("--pipeline", e)) from None


def _summary(name: str, array: np.ndarray) -> str:
    """One line per output: shape, dtype, magnitude and the first values."""
    values = array.astype(np.float32)
    dtype = next((k for k, v in DTYPES.items() if v == array.dtype), str(array.dtype))
    if values.size == 0:
        return f"{name}: {'x'.join(map(str, array.shape))} {dtype}, empty"
    head = ", ".join(f"{v:.4g}" for v in values.reshape(-1)[:4])
    finite = values[np.isfinite(values)]
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    odd = "".join(f", {count} {what}" for count, what in ((nan, "NaN"), (inf, "infinite")) if count)
    stats = f"max |x| {np.abs(finite).max():.4g}, mean {finite.mean():.4g}" if finite.size else "no finite value"
    return f"{name}: {'x'.join(map(str, array.shape))} {dtype}, {stats}{odd}, first [{head}{', ...' if values.size > 4 else ''}]"


def _write_trace(exe: Executable, path: str) -> None:
    """Write the launch's trace, whole or not at all; a write failure is one line naming the file."""
    try:
        with replaced_on_success(path) as temporary:
            exe.trace(temporary)
    except OSError as e:
        raise RunError(f"{path}: error: cannot write the trace ({e.strerror or e})") from None


def _save(path: str, outputs: dict[str, np.ndarray]) -> None:
    """Write the outputs to the .npz file ``path`` (that name, no suffix added), whole or not at all:
    float outputs widened to float32, integer outputs as they are."""
    saved = {name: a if a.dtype.kind == "i" else a.astype(np.float32) for name, a in outputs.items()}
    try:
        with replaced_on_success(path) as temporary, open(temporary, "wb") as f:
            # numpy's stub matches the unpacked names against savez's allow_pickle flag
            np.savez(f, **saved)  # pyright: ignore[reportArgumentType]
    except OSError as e:
        raise RunError(f"{path}: error: cannot write ({e.strerror or e})") from None


def _check(
    module: ModuleOp,
    program: EncodedProgram,
    arrays: dict[str, np.ndarray],
    scalars: dict[str, int],
    outputs: dict[str, np.ndarray],
    backend: str,
) -> int:
    """Compare ``outputs`` with the reference evaluator; print the verdict, return the status."""
    from vdir.testing.reference import evaluate

    reference_inputs = dict(arrays)
    for info in program.buffers:
        if info.name not in reference_inputs:  # out and scratch buffers start zeroed, as in the executable
            reference_inputs[info.name] = np.zeros(info.shape, dtype=DTYPES[info.dtype])
    expected = evaluate(module, reference_inputs, scalars)
    mismatch = compare_outputs(outputs, {k: v for k, v in expected.items() if k in outputs}, backend)
    if mismatch is not None:
        print(f"check failed: {mismatch}", file=sys.stderr)
        return 1
    tolerance = TOLERANCES.get(backend, TOLERANCES["cuda"])
    print(f"check passed: {', '.join(outputs)} equal the reference evaluator's; tolerance: {tolerance}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status (errors are one line on stderr)."""
    return run_cli(build_parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
