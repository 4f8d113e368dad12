"""Output targets of ``vdir-opt`` beyond xDSL's: ``-t ptx``, ``-t isa`` and ``-t queues``.

``isa`` prints the encoded queues as a readable listing; ``queues`` a table
of each SM's and engine's instructions, bytes, waits and releases; ``ptx`` prints the PTX of the persistent scheduler kernel for an encoded
program (run ``-p vdir-pipeline`` first, or any pipeline ending in
``vdir-encode``), or the text of ``ptx.module`` ops already in the module.
``ptx`` takes the lowering options in xDSL's option syntax:
``-t 'ptx{load-path=lsu split-copies=4}'``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.target import Target

from vdir.diagnostics import UserError
from vdir.lowering.options import LoweringOptionError, LoweringOptions


@dataclass(frozen=True)
class PTXTarget(Target):
    """Emit the PTX kernel that runs the module's encoded program, lowered as ``options`` say.

    A ``ptx.module`` already in the module prints as it is.
    """

    name = "ptx"

    options: LoweringOptions = LoweringOptions()

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> PTXTarget:
        """The target of ``ptx{key=value ...}``: each key a lowering option, with one value."""
        values = {}
        for key, given in spec.parameters.items():
            if len(given) != 1:
                raise UserError(f"error: target 'ptx': lowering option '{key}' takes one value")
            values[key] = given[0]
        try:
            return cls(LoweringOptions.from_mapping(values))
        except LoweringOptionError as e:
            raise UserError(f"error: target 'ptx': {e}") from None

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """``ptx{...}`` with the options that differ from the defaults (all of them with ``include_default``)."""
        chosen = dataclasses.asdict(self.options) if include_default else self.options.changed()
        return ArgSpec(self.name, {name.replace("_", "-"): (value,) for name, value in chosen.items()})

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vdir.dialects import ptx
        from vdir.lowering.emit import lower_to_ptx
        from vdir.target import get_target
        from vdir.transforms.encode import encoded_programs

        written = [op for op in module.walk() if isinstance(op, ptx.ModuleOp)]
        for op in written:
            output.write(ptx.print_ptx(op))
        if written:
            return
        programs = encoded_programs(module)
        if not programs:
            raise UserError(
                "error: -t ptx needs an encoded program; run '-p vdir-pipeline' (or end the "
                "pipeline with vdir-encode) first"
            )
        for program in programs:
            output.write(lower_to_ptx(program, get_target(program.target), self.options))


def _encoded(module: ModuleOp, target: str) -> list[tuple[str, object]]:
    """(name, encoded program) of each ``vdir.encoded_program`` op; a located hint when there is none."""
    from vdir.dialects.vdir import EncodedProgramOp
    from vdir.transforms.encode import encoded_programs

    ops = [op for op in module.walk() if isinstance(op, EncodedProgramOp)]
    if not ops:
        raise UserError(f"error: -t {target} needs an encoded program; run '-p vdir-pipeline' first")
    return [(f"@{op.sym_name.data}", program) for op, program in zip(ops, encoded_programs(module), strict=True)]


@dataclass(frozen=True)
class QueuesTarget(Target):
    """Print, per SM and engine, the work and the synchronisation of the encoded program's queues."""

    name = "queues"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vdir.analysis.queue_summary import queue_summary

        for name, program in _encoded(module, self.name):
            output.write(queue_summary(program, name))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ISATarget(Target):
    """Print the encoded program's queues as a readable listing."""

    name = "isa"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vdir.isa import disassemble

        for name, program in _encoded(module, self.name):
            output.write(disassemble(program, name))  # type: ignore[arg-type]

