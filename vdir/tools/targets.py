"""Output targets of ``vdir-opt`` beyond xDSL's: ``-t ptx``.

``ptx`` prints the PTX of the persistent scheduler kernel for an encoded
program (run ``-p vdir-pipeline`` first, or any pipeline ending in
``vdir-encode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from vdir.diagnostics import UserError


@dataclass(frozen=True)
class PTXTarget(Target):
    """Emit the PTX kernel that runs the module's encoded program."""

    name = "ptx"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vdir.transforms.encode import encoded_programs
        from vdir.lowering.emit import lower_to_ptx
        from vdir.target import get_target

        programs = encoded_programs(module)
        if not programs:
            raise UserError(
                "error: -t ptx needs an encoded program; run '-p vdir-pipeline' (or end the "
                "pipeline with vdir-encode) first"
            )
        for program in programs:
            output.write(lower_to_ptx(program, get_target(program.target)))


PTX_TARGETS = {"ptx": lambda: PTXTarget}
