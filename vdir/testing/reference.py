"""The reference evaluator: a program's meaning, tile by tile, in program order.

It runs the *unscheduled* program (after expansion) with the numpy semantics
of each family — no placement, no shared memory, no dependency bits — so it is
the oracle the simulator and the GPU backend are checked against.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from vdir.analysis.graph import Graph, Node, build_graph
from vdir.analysis.runtime_values import RuntimeSource
from vdir.diagnostics import VdirError
from vdir.families import DTYPES, get_family


class ReferenceInputError(VdirError, ValueError):
    """An input array does not match the program's signature."""


def check_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
    """Every argument present, with the declared shape and dtype (a ``scratch`` one may be left out: the
    program writes its bytes before it reads them)."""
    for arg in graph.args:
        if arg.name not in inputs:
            if arg.scratch:
                continue
            raise ReferenceInputError(f"missing input '{arg.name}'")
        a = np.asarray(inputs[arg.name])
        if a.shape != tuple(arg.shape) or a.dtype != DTYPES[arg.dtype]:
            raise ReferenceInputError(
                f"input '{arg.name}': expected {arg.shape[0]}x{arg.shape[1]} {arg.dtype}, "
                f"got {'x'.join(map(str, a.shape))} {a.dtype}"
            )


class ReferenceBoundsError(VdirError, IndexError):
    """A runtime offset left the range that keeps its region inside the buffer (a device error on a backend)."""


def _value(source: RuntimeSource, buffers: list[np.ndarray], scalars: tuple[int, ...]) -> int:
    """A runtime value: a scalar, or the i32 element a ``vdir.read`` names (its value now)."""
    if source.is_scalar:
        return scalars[source.index]
    return int(buffers[source.buffer].reshape(-1)[source.index])


def _origin(node: Node, buffers: list[np.ndarray], scalars: tuple[int, ...]) -> tuple[int, int]:
    """The region's (row, column), its runtime offset resolved and checked."""
    row_col = [node.row, node.col]
    if node.dyn is not None:
        v = _value(node.dyn.source, buffers, scalars)
        if not node.dyn_range[0] <= v <= node.dyn_range[1]:
            lo, hi = node.dyn_range
            raise ReferenceBoundsError(f"{node.name}: {node.dyn.source.name} = {v} is outside {lo}..{hi}")
        row_col[node.dyn_axis] = node.dyn.coeff * v + node.dyn.const
    return row_col[0], row_col[1]


def evaluate_graph(
    graph: Graph, inputs: Mapping[str, np.ndarray], scalars: tuple[int, ...] = ()
) -> dict[str, np.ndarray]:
    """Run the graph's nodes in program order; return every buffer after the run.

    ``scalars`` are the launch-time scalars in slot order. A micro-op whose
    condition fails does nothing.
    """
    check_inputs(graph, inputs)
    if len(scalars) != len(graph.scalars):
        raise ReferenceInputError(f"the program takes {len(graph.scalars)} scalars, got {len(scalars)}")
    buffers = [np.array(inputs[a.name], copy=True) if a.name in inputs else np.zeros(a.shape, DTYPES[a.dtype])
               for a in graph.args]
    tiles: dict[int, np.ndarray] = {}
    for node in sorted(graph.nodes, key=lambda n: n.seq):
        if node.guard is not None and not node.guard.holds(_value(node.guard.source, buffers, scalars)):
            continue
        r, c = node.tile.shape  # type: ignore[union-attr]
        if node.kind == "load":
            row, col = _origin(node, buffers, scalars)
            tiles[node.id] = buffers[node.buffer][row : row + r, col : col + c].copy()
        elif node.kind == "compute":
            fam = get_family(node.family)
            ins = [tiles[i.id] for i in node.inputs]
            tiles[node.id] = fam.run(ins, node.params, node.tile.dtype)  # type: ignore[union-attr]
        elif node.kind == "store":
            row, col = _origin(node, buffers, scalars)
            if node.reduce is not None:  # reduce add: f32 in program order; i64 wraps (any order, same bits)
                buffers[node.buffer][row : row + r, col : col + c] += tiles[node.inputs[0].id]
            else:
                buffers[node.buffer][row : row + r, col : col + c] = tiles[node.inputs[0].id]
    return {a.name: b for a, b in zip(graph.args, buffers, strict=True)}


def evaluate(
    module: ModuleOp, inputs: Mapping[str, np.ndarray], scalars: Mapping[str, int] | None = None
) -> dict[str, np.ndarray]:
    """The program's output buffers (those it stores to) for ``inputs`` and the launch-time ``scalars``."""
    graph = build_graph(module)
    given = dict(scalars or {})
    missing = [s.name for s in graph.scalars if s.name not in given]
    if missing:
        raise ReferenceInputError(f"missing scalar{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    result = evaluate_graph(graph, inputs, tuple(int(given[s.name]) for s in graph.scalars))
    return {a.name: result[a.name] for a in graph.args if a.is_output}
