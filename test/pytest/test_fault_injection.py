"""Faults planted in compiled programs: the simulator catches, in one run, every one that matters.

Each example program is compiled small, and for each fault class of
:mod:`vdir.testing.faults` a few faults are sampled deterministically. A
faulted program runs twice with seed 0: without race checks (does its
output differ from the intact program's, or does it not finish?) and with
them (is it reported?). A fault that changes an output must be reported; one
that does not may be. The summary table (``pytest -s``) is the one
``docs/runtime.md`` quotes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from vdir import isa
from vdir.device_runtime.platform import PlatformError
from vdir.device_runtime.sim import simulate
from vdir.families import DTYPES
from vdir.frontend import examples
from vdir.testing.faults import FAULT_CLASSES, Fault, enumerate_faults, sample_faults
from vdir.tools.common import parse_text, register_vdir_dialects
from vdir.tools.vdir_run import random_inputs
from vdir.transforms.pipeline import compile_to_encoded

#: faults sampled per class and program
PER_CLASS = 8
RUNTIME_VALUES_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runtime_values.mlir"


def _runtime_values_module():
    from xdsl.context import Context
    from xdsl.dialects.affine import Affine
    from xdsl.dialects.arith import Arith

    ctx = Context()
    register_vdir_dialects(ctx)
    ctx.load_dialect(Affine)
    ctx.load_dialect(Arith)
    return parse_text(ctx, RUNTIME_VALUES_EXAMPLE.read_text(), "examples/runtime_values.mlir")


#: name -> (module builder, SMs, launch scalars)
PROGRAMS = {
    "gemv": (lambda: examples.build_gemv(M=64, K=256, rows_per_tile=16, k_chunks=2), 2, ()),
    "rmsnorm_gemv": (lambda: examples.build_rmsnorm_gemv(M=64, K=256, rows_per_tile=16), 2, ()),
    "mlp": (lambda: examples.build_mlp_block(hidden=128, intermediate=256, up_rows=32, down_rows=32), 2, ()),
    "mlp_stack": (lambda: examples.build_mlp_stack(layers=2, hidden=128, intermediate=256, up_rows=32,
                                                    down_rows=32), 3, ()),
    "split_k_gemv": (lambda: examples.build_split_k_gemv(M=64, K=512, splits=2, rows_per_tile=32,
                                                          combine_cols=64), 2, ()),
    "runtime_values": (_runtime_values_module, 3, (10, 3)),
}


@dataclass(frozen=True)
class Outcome:
    """What one planted fault did."""

    program: str
    fault: Fault
    changed: bool  # the unchecked run's output differs, or the run did not finish
    caught: bool  # the checked run reported it
    report: str


def _run(program: isa.EncodedProgram, arrays: list[np.ndarray], scalars: tuple[int, ...],
         check: bool) -> tuple[list[np.ndarray] | None, str]:
    """The output buffers after one seed-0 launch, or None and the error's text."""
    copies = [a.copy() for a in arrays]
    try:
        simulate(program, copies, seed=0, check_races=check, scalars=scalars)
    except PlatformError as e:
        return None, f"{type(e).__name__}: {e}"
    return [a for a, b in zip(copies, program.buffers, strict=True) if b.is_output], ""


def _differs(outputs: list[np.ndarray] | None, reference: list[np.ndarray]) -> bool:
    if outputs is None:
        return True
    return any(not np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in zip(outputs, reference, strict=True))


@functools.cache
def outcomes(name: str) -> tuple[Outcome, ...]:
    """Plant the sampled faults of every class in program ``name`` and run each twice."""
    build, num_sms, scalars = PROGRAMS[name]
    program = compile_to_encoded(build(), target="h200", num_sms=num_sms).without_loops()
    values = random_inputs(program.buffers, 0, isa.index_ranges(program))
    arrays = [values[b.name] if b.is_input else np.zeros(b.shape, DTYPES[b.dtype]) for b in program.buffers]
    reference, error = _run(program, arrays, scalars, check=True)
    assert reference is not None, f"the intact {name} program fails: {error}"
    result = []
    for kind, faults in enumerate_faults(program).items():
        for fault in sample_faults(faults, PER_CLASS):
            faulted = fault.apply(program)
            unchecked, _ = _run(faulted, arrays, scalars, check=False)
            checked, report = _run(faulted, arrays, scalars, check=True)
            result.append(Outcome(name, fault, _differs(unchecked, reference), checked is None, report))
            assert kind == fault.kind
    return tuple(result)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_fault_that_changes_an_output_is_caught_in_one_run(name):
    missed = [f"{o.fault.kind}: {o.fault.description}" for o in outcomes(name) if o.changed and not o.caught]
    assert not missed, missed


def summary_table() -> tuple[str, dict[str, list[int]]]:
    """The per-class counts over every program: planted, output changed, caught in one run."""
    counts = {kind: [0, 0, 0] for kind in FAULT_CLASSES}
    for name in sorted(PROGRAMS):
        for o in outcomes(name):
            c = counts[o.fault.kind]
            c[0] += 1
            c[1] += o.changed
            c[2] += o.caught
    lines = [f"{'fault class':<22} {'planted':>8} {'changed output':>15} {'caught (1 run)':>15}"]
    lines += [f"{kind:<22} {p:>8} {ch:>15} {ca:>15}" for kind, (p, ch, ca) in counts.items()]
    return "\n".join(lines), counts


def test_summary_covers_every_fault_class(capsys):
    """Print the table; every class was planted somewhere, and what it changed was caught."""
    table, counts = summary_table()
    with capsys.disabled():
        print("\nfault injection, seed 0, one run per fault:\n" + table)
    for kind, (planted, changed, caught) in counts.items():
        assert planted > 0, f"no program admits a '{kind}' fault"
        assert caught >= changed, f"'{kind}': {changed} faults changed an output, {caught} were caught"
