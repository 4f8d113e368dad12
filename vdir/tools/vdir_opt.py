"""``vdir-opt``: run vdir (and xDSL) pass pipelines on IR files.

Built on xDSL's ``xDSLOptMain``: every xDSL dialect and pass is available,
plus the vdir dialects, the vdir passes (``vdir-fuse``, ``vdir-place``, ...,
``vdir-pipeline``) and the ``ptx`` target (``-t 'ptx{load-path=lsu}'`` takes
the lowering options). xDSL's driver supplies the options and the input;
each step of a chunk reports a failure as a :class:`~vdir.diagnostics.UserError`
(an xDSL ``DiagnosticException``) with one located line, and :meth:`VdirOptMain.run`
runs the chunks. Unlike the stock driver, every error — a parse or verify
failure, a pass that cannot apply, an unknown pass or option, a missing file —
prints that one line on stderr and exits non-zero; with ``--split-input-file``
every chunk runs, and the good chunks' output is still written. One of xDSL's
own targets (``-t wgsl``, ``x86-asm``, ...) that fails on a vdir program, or
prints nothing for it, is such an error too, naming vdir's targets. The
diagnostics flags are mlir-opt's: ``--verify-diagnostics`` checks the errors
against the input's ``expected-error`` comments (see
:mod:`vdir.tools.expected_diagnostics`); ``--print-diagnostics`` (or xDSL's
``--parsing-diagnostics``) prints each error in place of its chunk's output
and exits 0. Without ``--split-input-file`` nothing is written (to stdout or
``-o``) unless the input succeeded.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import time
import typing
import warnings
from collections.abc import Sequence
from io import BytesIO
from typing import IO, ClassVar, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import PipelineLexer, SpecTokenKind, parse_pipeline, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from vdir import installed_version
from vdir.diagnostics import UserError, VdirError
from vdir.limits import limits_in_effect
from vdir.tools.common import (
    STDIN_ARG,
    STDIN_NAME,
    add_limit_options,
    check_output_path,
    decode_program,
    exception_text,
    failure_message,
    limits_from_args,
    one_line,
    open_program_file,
    parse_text,
    register_vdir_dialects,
    report_internal_error,
    verify_module,
    warnings_as_lines,
    write_text_whole,
)
from vdir.tools.expected_diagnostics import ProducedDiagnostic, expected_diagnostics, mismatches
from vdir.universe import VDIR_UNIVERSE

#: What separates the chunks of ``--split-input-file``, in the input and in the output.
CHUNK_SEPARATOR = "// -----\n"
#: The targets that print vdir programs: vdir's own and the IR's text form.
VDIR_TARGETS = (*VDIR_UNIVERSE.all_targets, "mlir")
#: What a failure of any other target adds.
_FOREIGN_TARGET = f"it is one of xDSL's targets, for other dialects (vdir's: {', '.join(VDIR_TARGETS)})"
#: The most characters of a foreign target's or pass's own reason that a diagnostic quotes.
_MAX_FOREIGN_REASON = 120


class VdirOptMain(xDSLOptMain):
    """The ``vdir-opt`` driver."""

    #: xDSL fills in only ``{xdsl_version}``; vdir's own version is fixed here
    version_format: ClassVar[str] = f"vdir-opt {installed_version()} (xDSL {{xdsl_version}})"

    def __init__(self, description: str = "vdir modular optimizer driver", args: Sequence[str] | None = None):
        super().__init__(description=description, args=args)

    def register_all_dialects(self):
        super().register_all_dialects()
        register_vdir_dialects(self.ctx)

    def register_all_passes(self):
        """xDSL's passes and vdir's (already there when vdir's plugin entry point is installed)."""
        super().register_all_passes()
        for name, factory in VDIR_UNIVERSE.all_passes.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        """xDSL's targets and vdir's (already there when vdir's plugin entry point is installed)."""
        super().register_all_targets()
        self.available_targets.update(VDIR_UNIVERSE.all_targets)

    def setup_pipeline(self):
        """Build the pipeline, the target and the size limits once, so that bad options fail
        before any input is read.

        Verification runs in :meth:`apply_passes`, with located errors.
        """
        self.limits = limits_from_args(self.args)
        if self.args.output_file is not None:
            check_output_path(self.args.output_file, "-o")
        if (repeated := _repeated_option(self.args.passes)) is not None:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {repeated}")
        if (bare := _valueless_option(self.args.passes)) is not None:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {bare}")
        if (repeated := _repeated_option(self.args.target)) is not None:
            raise UserError(f"error: bad target '{self.args.target}': {repeated}")
        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes)
        except UserError:  # a pass's own check of its options: its message says which pass and option
            raise
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {_dashed_option_names(str(e))}") from None
        except ArgSpecParseError as e:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {_spec_error(e)}") from None
        spec = parse_spec(self.args.target)
        self.target_name = spec.name
        try:
            factory = self.available_targets[spec.name]
            if not inspect.signature(factory).parameters:  # a Target class (not a legacy printing function)
                # xDSL types a target as one of two callables told apart by arity, as checked above
                factory().from_spec(spec)  # pyright: ignore[reportCallIssue]
        except ValueError as e:
            raise UserError(f"error: bad target '{self.args.target}': {e}") from None
        except ImportError as e:  # one of xDSL's targets whose Python package is not installed
            raise UserError(f"error: target '{spec.name}' needs the Python package '{e.name}', "
                            "which is not installed") from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input file's bytes, or standard input when the file is ``-`` or not given.

        The file is read as MLIR text whatever its name ends in (as ``mlir-opt`` does: vdir has no
        other frontend). A folder, or anything but a regular file (a device such as ``/dev/zero``, a
        pipe, which may never end), is refused unread, as ``vdir-run`` refuses it.
        """
        path = self.args.input_file
        if path in (None, STDIN_ARG):
            if sys.stdin is None:
                raise UserError("error: standard input is closed: name an input file")
            return sys.stdin.buffer, "mlir"
        return open_program_file(path), "mlir"

    def get_input_name(self) -> str:
        """The name diagnostics locate errors in: the file's path, or ``<stdin>``."""
        if self.args.input_file in (None, STDIN_ARG):
            return STDIN_NAME
        return self.args.input_file

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp:
        """Parse and verify one chunk, each operation located at its line in the whole file.

        ``--disable-verify`` skips the verifiers here too, as after each pass
        (the parser's own checks, types and SSA names, still apply).
        """
        text = decode_program(chunk.read(), self.get_input_name())
        module = parse_text(self.ctx, text, self.get_input_name(), start_offset)
        if not self.args.disable_verify:
            verify_module(module)
        return module

    def apply_passes(self, prog: ModuleOp) -> None:
        """Apply the passes in order, verifying after each; a failure names the pass and the operation.

        ``--time-passes`` adds each pass's wall time to :attr:`pass_times`;
        ``--print-between-passes`` prints the IR after each pass to stderr.
        """
        for p in self.pipeline.passes:
            start = time.perf_counter()
            try:
                p.apply(self.ctx, prog)
            except DiagnosticException as e:  # a PassFailure, or a verifier's error inside a pass
                raise UserError(self._pass_failure(p.name, e)) from None
            except Exception as e:
                if p.name in VDIR_UNIVERSE.all_passes and not self.args.disable_verify:
                    raise  # a bug in the pass: main reports it as an internal error
                if p.name in VDIR_UNIVERSE.all_passes:  # the verifiers would have refused what it met
                    reason = _clipped(exception_text(e))
                    raise UserError(f"{self.get_input_name()}: error: {p.name}: failed on a program that was "
                                    f"not verified: {type(e).__name__}: {reason}; without --disable-verify, "
                                    "the verifiers say what is wrong") from None
                reason = _clipped(one_line(str(e)) or type(e).__name__)  # one of xDSL's passes, off its path
                raise UserError(f"{self.get_input_name()}: error: {p.name}: {reason}; "
                                "it is one of xDSL's passes, and failed on this program") from None
            if self.args.time_passes:
                self.pass_times.append((p.name, time.perf_counter() - start))
            if not self.args.disable_verify:
                verify_module(prog)
            if self.args.print_between_passes:
                _dump_ir_after(p.name, prog)

    def _pass_failure(self, pass_name: str, e: DiagnosticException) -> str:
        """The one-line message of pass ``pass_name`` failing with ``e``, at the best location known."""
        return failure_message(e, self.get_input_name(), prefix=f"{pass_name}: ")

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The target's text for ``prog``; a target that cannot print it, or one of xDSL's that
        prints nothing for a program that is not empty (it knows none of its operations), is one
        located error."""
        foreign = self.target_name not in VDIR_TARGETS  # parsed once, in setup_pipeline
        where = f"{self.get_input_name()}: error: target '{self.args.target}'"
        try:
            with warnings.catch_warnings():
                if foreign:  # xDSL's printers warn about the operations they do not know, on stderr
                    warnings.simplefilter("ignore")
                text = super().output_resulting_program(prog)
        except UserError:
            raise
        except Exception as e:
            reason = one_line(str(e)) or type(e).__name__
            if foreign:  # its reason may quote the whole program
                raise UserError(f"{where} failed: {_clipped(reason)}; {_FOREIGN_TARGET}") from None
            raise UserError(f"{where} failed: {reason}") from None
        if foreign and not text.strip() and prog.body.block.ops:
            raise UserError(f"{where} printed nothing for this program; {_FOREIGN_TARGET}")
        return text

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        """xDSL's arguments, with MLIR's meaning of ``--verify-diagnostics`` and vdir's ``--print-diagnostics``;
        a usage error (an unknown flag or target, a flag without its value) is one line, exit status 2."""
        super().register_all_arguments(arg_parser)

        def one_line_error(message: str) -> NoReturn:
            print(f"{arg_parser.prog}: error: {message}", file=sys.stderr)
            raise SystemExit(2)

        arg_parser.error = one_line_error  # argparse would print its whole usage first
        for action in arg_parser._actions:
            if action.dest == "verify_diagnostics":
                action.help = (
                    "check the diagnostics against the input's expected-error/-warning/-note comments "
                    "(as mlir-opt does); report each mismatch and exit 1 if there is any"
                )
            elif action.dest == "parsing_diagnostics":
                action.help = "the same as --print-diagnostics"
        arg_parser.add_argument(
            "--list-passes",
            default=False,
            action="store_true",
            help="list the vdir passes and targets, with their options and defaults, and exit",
        )
        arg_parser.epilog = (
            "The vdir passes and targets are listed, with what they do and their options, by "
            "'vdir-opt --list-passes'; the other passes and targets are xDSL's and mostly do not apply to vdir programs."
        )
        arg_parser.add_argument(
            "--print-diagnostics",
            default=False,
            action="store_true",
            help="print each chunk's diagnostic in place of its output (on stdout) and exit 0",
        )
        add_limit_options(arg_parser)

    def run(self) -> int:  # type: ignore[override]
        """Run every chunk; write the output (stdout or ``-o``); return the exit status.

        Without a diagnostics flag each failing chunk's error goes to stderr
        and the status is 1 if any chunk failed; the good chunks' output is
        still written (with ``--split-input-file``), ``// -----`` apart.
        ``--print-diagnostics`` puts each error in place of its chunk's
        output and returns 0; ``--verify-diagnostics`` checks the errors
        against the input's ``expected-*`` comments (see
        :mod:`vdir.tools.expected_diagnostics`) and reports the mismatches.
        """
        if self.args.list_passes:
            sys.stdout.write(vdir_listing())
            return 0
        with limits_in_effect(self.limits):
            return self._run_all_chunks()

    def _run_all_chunks(self) -> int:
        """:meth:`run`, with the size limits in effect."""
        self.pass_times: list[tuple[str, float]] = []
        chunks, self.file_extension = self.prepare_input()
        outputs: list[str] = []
        failed = False
        try:
            for chunk, offset in chunks:
                with chunk:
                    source = _read_all(chunk, self.get_input_name())
                output, chunk_failed = self._run_chunk(source, offset)
                outputs.append(output)
                failed = failed or chunk_failed
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if self.args.time_passes:
                _print_pass_times(self.pass_times)
        if not failed or len(outputs) > 1:
            self._write_output(CHUNK_SEPARATOR.join(outputs))
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        return 1 if failed else 0

    def _run_chunk(self, source: bytes, offset: int) -> tuple[str, bool]:
        """One chunk's output text, and whether it failed (as the diagnostics mode judges)."""
        if self.args.verify_diagnostics:
            return self._verify_chunk(source, offset)
        try:
            return self._compile_chunk(source, offset), False
        except DiagnosticException as e:
            message = _diagnostic_text(e)
            if self.args.print_diagnostics or self.args.parsing_diagnostics:
                return message + "\n", False
            print(message, file=sys.stderr)
            return "", True

    def _verify_chunk(self, source: bytes, offset: int) -> tuple[str, bool]:
        """Run one chunk and check its diagnostics against its ``expected-*`` comments; print the mismatches."""
        name = self.get_input_name()
        expected = expected_diagnostics(decode_program(source, name), name, offset)
        produced: list[ProducedDiagnostic] = []
        output = ""
        try:
            output = self._compile_chunk(source, offset)
        except DiagnosticException as e:
            produced.append(ProducedDiagnostic.parse(_diagnostic_text(e), name))
        report = mismatches(expected, produced)
        for line in report:
            print(line, file=sys.stderr)
        return output, bool(report)

    def _compile_chunk(self, source: bytes, offset: int) -> str:
        """Parse, transform and print one chunk; a failure is a ``DiagnosticException``."""
        module = self.parse_chunk(BytesIO(source), self.file_extension, offset)
        self.apply_passes(module)
        return self.output_resulting_program(module)

    def _write_output(self, text: str) -> None:
        """Write ``text`` to ``-o``'s file, whole or not at all, or to stdout."""
        if self.args.output_file is None:
            if sys.stdout is None:
                raise UserError("error: standard output is closed: write the result to a file with -o")
            sys.stdout.write(text)
            return
        write_text_whole(self.args.output_file, "-o", text)  # a failed write leaves the file as it was


def vdir_listing() -> str:
    """The ``--list-passes`` text: each vdir pass and target, what it does, and its options with their defaults."""
    sections = [("vdir passes", VDIR_UNIVERSE.all_passes), ("vdir targets", VDIR_UNIVERSE.all_targets)]
    lines: list[str] = []
    for title, factories in sections:
        lines.append(f"{title}:")
        for name, factory in factories.items():
            cls = factory()
            lines.append(f"  {name:<{_NAME_WIDTH}} {_summary(cls)}")
            for option, values in cls().spec(include_default=True).parameters.items():
                lines.append(f"      {option.replace('_', '-')}={_option_value(values)}")
        lines.append("")
    return "\n".join(lines)


#: The width of the name column of :func:`vdir_listing`.
_NAME_WIDTH = 18
#: A trailing pointer to further documentation in a docstring's first line, left out of the listing.
_DOC_POINTER = re.compile(r"\s*\(see [^)]*\)(?=\.?$)")


def _summary(cls: type) -> str:
    """The first line of ``cls``'s docstring, as plain text."""
    doc = (cls.__doc__ or "").strip()
    first = doc.splitlines()[0] if doc else ""
    return _DOC_POINTER.sub("", first.replace("``", "'"))


def _option_value(values: Sequence[object]) -> str:
    """An option's default as written on the command line; ``<unset>`` for none."""
    if not values:
        return "<unset>"
    return ",".join(_spelled(v) for v in values)


def _spelled(value: object) -> str:
    """One option value as written on the command line (``true``, ``""``, ``2``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    return str(value)


def _diagnostic_text(e: DiagnosticException) -> str:
    """The diagnostic of ``e``: its message, then any notes xDSL attached, one per line."""
    return "\n".join([str(e), *getattr(e, "__notes__", [])])


#: A quoted option name in xDSL's messages about pass options ("min_benefit").
_QUOTED_OPTION = re.compile(r'"([a-z][a-z0-9_]*)"')


def _dashed_option_names(message: str) -> str:
    """xDSL's option message with each option spelled as on the command line (``min-benefit``)."""
    return _QUOTED_OPTION.sub(lambda m: '"' + m.group(1).replace("_", "-") + '"', message)


def _dump_ir_after(pass_name: str, module: ModuleOp) -> None:
    """Print ``module`` to stderr under mlir-opt's ``IR Dump After`` header."""
    print(f"// -----// IR Dump After {pass_name} //----- //", file=sys.stderr)
    Printer(stream=sys.stderr).print_op(module)
    print("\n", file=sys.stderr)


def _print_pass_times(pass_times: list[tuple[str, float]]) -> None:
    """Print each pass's wall time and the total to stderr, as a table like mlir-opt's ``-mlir-timing``."""
    total = sum(seconds for _, seconds in pass_times)
    rule = "=" * 58
    print(rule, file=sys.stderr)
    print(f"{'... Pass execution timing report ...':^58}", file=sys.stderr)
    print(rule, file=sys.stderr)
    print(f"  Total Execution Time: {total:.4f} seconds\n", file=sys.stderr)
    print("  ----Wall Time----  ----Name----", file=sys.stderr)
    for name, seconds in pass_times:
        share = 100 * seconds / total if total else 0.0
        print(f"  {seconds:8.4f} ({share:5.1f}%)  {name}", file=sys.stderr)
    print(f"  {total:8.4f} (100.0%)  Total", file=sys.stderr)


def _read_all(chunk: IO[bytes], name: str) -> bytes:
    """The bytes of ``chunk``, read from the input ``name``; a read that fails is an error at ``name``
    (a file that opens but cannot be read, such as ``/proc/self/mem``)."""
    try:
        return chunk.read()
    except OSError as e:
        raise UserError(f"{name}: error: cannot read ({e.strerror or e})") from None


def _valueless_option(spec: str) -> str | None:
    """What is wrong if an option of one of vdir's passes in ``spec`` is given without a value, else None.

    xDSL reads ``vdir-pipeline{num-sms}`` or ``{release-first}`` as the option
    left at its default (every SM; the target's choice), and refuses ``{fuse}``
    only with a message about Python types. A spec that does not parse is left
    to xDSL's parser to report.
    """
    try:
        specs = list(parse_pipeline(spec))
    except (Exception, ArgSpecParseError):  # noqa: BLE001  (xDSL's parser reports it, located, right after)
        return None  # (ArgSpecParseError is a BaseException)
    for pass_spec in specs:
        if pass_spec.name not in VDIR_UNIVERSE.all_passes:
            continue
        for name, values in pass_spec.parameters.items():
            if values == ():
                hint = "true or false" if _is_flag(pass_spec.name, name) else "..."
                return f"{pass_spec.name}: option '{name}' needs a value ({name}={hint})"
    return None


def _is_flag(pass_name: str, option: str) -> bool:
    """Whether ``option`` of vdir pass ``pass_name`` is a flag (typed ``bool`` or ``bool | None``)."""
    hints = typing.get_type_hints(VDIR_UNIVERSE.all_passes[pass_name]())
    return hints.get(option.replace("-", "_")) in (bool, bool | None)


def _repeated_option(spec: str) -> str | None:
    """What is wrong if a pass (or the target) of ``spec`` is given one option twice, else None.

    xDSL's spec parser keeps the last value of a repeated option without a
    word (``vdir-place{num-sms=2 num-sms=4}`` places on 4 SMs), and so would
    ``num-sms`` and ``num_sms``, its spellings of one option. A spec that does
    not lex is left to xDSL's parser to report.
    """
    lexer = PipelineLexer(spec)
    owner, seen, in_options, at_name = "", set[str](), False, False
    try:
        while (token := lexer.lex()).kind is not SpecTokenKind.EOF:
            kind, text = token.kind, token.span.text
            if not in_options:
                if kind is SpecTokenKind.IDENT:
                    owner = text
                elif kind is SpecTokenKind.L_BRACE:
                    in_options, at_name, seen = True, True, set()
            elif kind is SpecTokenKind.R_BRACE:
                in_options = False
            elif kind is SpecTokenKind.SPACE:
                at_name = True
            elif kind is SpecTokenKind.IDENT and at_name:
                name = text.replace("_", "-")
                if name in seen:
                    return f"option '{name}' of {owner} is given twice"
                seen.add(name)
                at_name = False
            else:
                at_name = False
    except ArgSpecParseError:
        return None
    return None


def _clipped(reason: str) -> str:
    """``reason`` cut to :data:`_MAX_FOREIGN_REASON` characters, marked where cut."""
    return reason if len(reason) <= _MAX_FOREIGN_REASON else reason[:_MAX_FOREIGN_REASON] + "..."


def _spec_error(e: ArgSpecParseError) -> str:
    """The reason in xDSL's multi-line option-syntax error (its last line)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else "bad option syntax"


def _target_argument(argv: Sequence[str]) -> str:
    """The ``-t``/``--target`` value in ``argv`` (the driver's own parse failed on it)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("-t", "--target", default="mlir")
    try:
        return parser.parse_known_args(list(argv))[0].target
    except argparse.ArgumentError:
        return "-t"


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status."""
    try:
        with warnings_as_lines():
            return VdirOptMain(description="vdir modular optimizer driver", args=argv).run()
    except VdirError as e:
        message = str(e)
        print(message if "error:" in message else f"error: {message}", file=sys.stderr)
        return 1
    except ArgSpecParseError as e:  # xDSL parses the -t spec before any vdir code runs
        target = _target_argument(sys.argv[1:] if argv is None else argv)
        print(f"error: bad target '{target}': {_spec_error(e)}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"{e.filename}: error: no such file", file=sys.stderr)
        return 1
    except UnicodeDecodeError:
        print("error: the input is not UTF-8 text", file=sys.stderr)
        return 1
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("error: not enough memory for this program", file=sys.stderr)
        return 1
    except Exception as e:  # a bug: still one line, with what to report
        return report_internal_error(e)


if __name__ == "__main__":
    sys.exit(main())
