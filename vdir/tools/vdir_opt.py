"""``vdir-opt``: run vdir (and xDSL) pass pipelines on IR files.

Built on xDSL's ``xDSLOptMain``: every xDSL dialect and pass is available,
plus the vdir dialects, the vdir passes (``vdir-fuse``, ``vdir-place``, ...,
``vdir-pipeline``) and the ``ptx`` target (``-t 'ptx{load-path=lsu}'`` takes
the lowering options). xDSL's driver loop runs the chunks; vdir supplies the
steps, each of which reports a failure as a :class:`~vdir.diagnostics.UserError`
(an xDSL ``DiagnosticException``) with one located line. Unlike the stock
driver, every error — a parse or verify failure, a pass that cannot apply, an
unknown pass or option, a missing file — prints that one line and exits
non-zero; with ``--verify-diagnostics`` or ``--parsing-diagnostics`` every
such line is printed in place of its chunk's output instead. Nothing is
written (to stdout or ``-o``) unless every chunk succeeded.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import time
from collections.abc import Sequence
from io import StringIO
from typing import IO, ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from vdir import installed_version
from vdir.diagnostics import UserError, VdirError
from vdir.tools.common import failure_message, one_line, parse_text, register_vdir_dialects, verify_module

#: The input file argument that means standard input (as for mlir-opt).
STDIN_ARG = "-"
#: The file name diagnostics use for standard input (as mlir-opt does).
STDIN_NAME = "<stdin>"


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
        super().register_all_passes()
        from vdir.transforms import PASSES

        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        from vdir.tools.targets import PTX_TARGETS

        for name, factory in PTX_TARGETS.items():
            self.available_targets[name] = factory

    def setup_pipeline(self):
        """Build the pipeline and the target once, so that bad options fail before any input is read.

        Verification runs in :meth:`apply_passes`, with located errors.
        """
        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes)
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {_dashed_option_names(str(e))}") from None
        except ArgSpecParseError as e:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {_spec_error(e)}") from None
        spec = parse_spec(self.args.target)
        factory = self.available_targets[spec.name]
        if not inspect.signature(factory).parameters:  # a Target class (not a legacy printing function)
            try:
                # xDSL types a target as one of two callables told apart by arity, as checked above
                factory().from_spec(spec)  # pyright: ignore[reportCallIssue]
            except ValueError as e:
                raise UserError(f"error: bad target '{self.args.target}': {e}") from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input file's bytes, or standard input when the file is ``-`` or not given."""
        if self.args.input_file in (None, STDIN_ARG):
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        """The name diagnostics locate errors in: the file's path, or ``<stdin>``."""
        if self.args.input_file in (None, STDIN_ARG):
            return STDIN_NAME
        return self.args.input_file

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp:
        """Parse and verify one chunk, each operation located at its line in the whole file."""
        text = chunk.read().decode("utf-8", errors="strict")
        module = parse_text(self.ctx, text, self.get_input_name(), start_offset)
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
        """The target's text for ``prog``; a target that cannot print it is one located error."""
        try:
            return super().output_resulting_program(prog)
        except UserError:
            raise
        except Exception as e:
            reason = one_line(str(e)) or type(e).__name__
            raise UserError(f"{self.get_input_name()}: error: target '{self.args.target}' failed: {reason}") from None

    def prepare_output(self) -> IO[str]:
        """Output goes to the buffer :meth:`run` installs as stdout; it is written out at the end."""
        return sys.stdout

    def run(self) -> None:  # type: ignore[override]
        """Run xDSL's chunk loop into a buffer; write it (stdout or ``-o``) only if every chunk succeeded.

        Every vdir diagnostic is a ``DiagnosticException``, which xDSL's loop
        prints in place under ``--verify-diagnostics``; ``--parsing-diagnostics``
        asks for the same (parse errors are located diagnostics too).
        """
        self.args.verify_diagnostics = self.args.verify_diagnostics or self.args.parsing_diagnostics
        self.pass_times: list[tuple[str, float]] = []
        buffer = StringIO()
        try:
            with contextlib.redirect_stdout(buffer):
                super().run()
        finally:
            if self.args.time_passes:
                _print_pass_times(self.pass_times)
        if self.args.output_file is None:
            sys.stdout.write(buffer.getvalue())
        else:
            with open(self.args.output_file, "w") as f:
                f.write(buffer.getvalue())


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


def _spec_error(e: ArgSpecParseError) -> str:
    """The reason in xDSL's multi-line option-syntax error (its last line)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else "bad option syntax"


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status."""
    try:
        VdirOptMain(description="vdir modular optimizer driver", args=argv).run()
        return 0
    except VdirError as e:
        message = str(e)
        print(message if "error:" in message else f"error: {message}", file=sys.stderr)
        return 1
    except ArgSpecParseError as e:  # xDSL parses the -t spec before any vdir code runs
        print(f"error: bad option syntax: {_spec_error(e)}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
