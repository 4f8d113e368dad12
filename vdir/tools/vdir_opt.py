"""``vdir-opt``: run vdir (and xDSL) pass pipelines on IR files.

Built on xDSL's ``xDSLOptMain``: every xDSL dialect and pass is available,
plus the vdir dialects, the vdir passes (``vdir-fuse``, ``vdir-place``, ...,
``vdir-pipeline``) and the ``ptx`` target. Unlike the stock driver, every
error — a parse or verify failure, a pass that cannot apply, an unknown pass
or option, a missing file — prints one located line and exits non-zero, and
``-o`` is only written when every input chunk succeeded.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from vdir.diagnostics import PassFailure, UserError, located
from vdir.tools.common import one_line, parse_text, register_vdir_dialects, verify_module


class VdirOptMain(xDSLOptMain):
    """The ``vdir-opt`` driver."""

    version_format = "vdir-opt (xDSL {xdsl_version})"

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
        """Build the pipeline; verification runs in :meth:`_apply` with located errors."""
        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes)
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"error: bad pass pipeline '{self.args.passes}': {e}") from None

    def _apply(self, module: ModuleOp) -> None:
        for p in self.pipeline.passes:
            try:
                p.apply(self.ctx, module)
            except PassFailure as e:
                where = e.loc if e.loc and e.op is None else None
                if where:
                    raise UserError(f"{where}: error: {p.name}: {e}") from None
                raise UserError(located(f"{p.name}: {e}", e.op, self.get_input_name())) from None
            except (VerifyException, DiagnosticException) as e:
                msg = one_line(str(e))
                raise UserError(f"{self.get_input_name()}: error: {p.name}: {msg}") from None
            if not self.args.disable_verify:
                verify_module(module)

    def _process_chunk(self, text: str, name: str, offset: int) -> str:
        module = parse_text(self.ctx, text, name, offset)
        verify_module(module)
        self._apply(module)
        try:
            return self.output_resulting_program(module)
        except UserError:
            raise
        except Exception as e:  # a target that cannot print this module
            raise UserError(f"{name}: error: target '{self.args.target}' failed: {one_line(str(e)) or type(e).__name__}") from None

    def run(self) -> int:  # type: ignore[override]
        """Process every chunk; return the exit status."""
        chunks, _ = self.prepare_input()
        name = self.get_input_name()
        diagnostics_mode = self.args.verify_diagnostics or self.args.parsing_diagnostics
        pieces: list[str] = []
        for i, (chunk, offset) in enumerate(chunks):
            text = chunk.read().decode("utf-8", errors="strict")
            chunk.close()
            if i > 0:
                pieces.append("// -----\n")
            try:
                pieces.append(self._process_chunk(text, name, offset))
            except UserError as e:
                if not diagnostics_mode:
                    print(str(e), file=sys.stderr)
                    return 1
                pieces.append(str(e) + "\n")
        output = "".join(pieces)
        if self.args.output_file is None:
            sys.stdout.write(output)
        else:
            with open(self.args.output_file, "w") as f:
                f.write(output)
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status."""
    try:
        driver = VdirOptMain(description="vdir modular optimizer driver", args=argv)
        return driver.run()
    except UserError as e:
        print(str(e), file=sys.stderr)
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
