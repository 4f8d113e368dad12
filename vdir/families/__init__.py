"""Compute op families: one object per family, shared by every layer.

A family is what a ``vdir.compute`` micro-op computes. Each one is a single
:class:`Family` value that owns everything the layers need to know about it,
so that they cannot drift apart and no layer keeps its own list of family
names:

* the dialect's verifier and the builder check operand shapes, dtypes and
  parameters with :meth:`Family.check` (which infers the result);
* the cost model (fusion, placement) reads :meth:`Family.cost`;
* the reference evaluator and the CPU simulator run :meth:`Family.run`;
* placement reads :attr:`Family.role` (a weight-streaming gemv is anchored
  to one SM; anything else may be recomputed on each SM that needs it);
* ``vdir-fuse`` builds one pattern per fused family from its
  :attr:`Family.fusion` rule (:class:`Prologue` or :class:`Epilogue`);
* the encoder writes :attr:`Family.opcode` and the words of
  :meth:`Family.encode_params`; the simulator and the hand-built programs
  of the tests get the operand shapes back from
  :meth:`Family.decode_operands`;
* the PTX lowering emits :meth:`Family.ptx_emitter`'s body for every family
  a program uses and dispatches on the opcode.

The built-in families are defined in :mod:`vdir.families.builtin` and
registered on import; :func:`register_family` adds another one (a context
manager that removes it again), see "Adding an op family" in
``docs/architecture.md``.

Layering: this package is compiler core. It imports neither
``vdir.device_runtime`` nor ``vdir.lowering``: the simulator and the
lowering ask the family objects, not the other way round. The PTX bodies
live in ``vdir/lowering/families/`` (they need the PTX builder), so a
built-in family refers to its body lazily, as a ``"module:function"``
string that the lowering imports the first time it emits that family;
a family defined elsewhere (a test, a plug-in) may hand over the emitter
function itself. The family stays the one place that says which body is
its own, and compiling or simulating a program never loads the lowering.
"""

from vdir.families.builtin import BUILTIN_FAMILIES, gemv_f32, rmsnorm_f32, silu
from vdir.families.core import (
    BF16,
    DTYPE_BYTES,
    DTYPES,
    F32,
    FAMILIES,
    FAMILY_BY_OPCODE,
    FIXED_POINT_BITS,
    FIXED_SCALE,
    I32,
    I64,
    ComputeSignature,
    Epilogue,
    Family,
    FamilyError,
    FamilyRegistration,
    ParamSpec,
    ParamWords,
    Prologue,
    Role,
    TileSig,
    UnknownFamilyError,
    family_by_opcode,
    from_fixed,
    get_family,
    register_family,
    round_to,
    to_fixed,
)

__all__ = [
    "BF16", "BUILTIN_FAMILIES", "DTYPE_BYTES", "DTYPES", "F32", "FAMILIES", "FIXED_POINT_BITS", "FIXED_SCALE", "I32", "I64",
    "FAMILY_BY_OPCODE",
    "ComputeSignature", "Epilogue", "Family", "FamilyError", "FamilyRegistration", "ParamSpec", "ParamWords",
    "Prologue", "Role", "TileSig", "UnknownFamilyError", "family_by_opcode", "gemv_f32", "get_family",
    "register_family", "rmsnorm_f32", "round_to", "silu", "from_fixed", "to_fixed",
]
