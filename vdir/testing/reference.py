"""The reference evaluator: a program's meaning, tile by tile, in program order.

It runs the *unscheduled* program (after expansion) with the numpy semantics
of each family — no placement, no shared memory, no dependency bits — so it is
the oracle the simulator and the GPU backend are checked against.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from vdir.analysis.graph import Graph, build_graph
from vdir.diagnostics import VdirError
from vdir.families import DTYPES, get_family


class ReferenceInputError(VdirError, ValueError):
    """An input array does not match the program's signature."""


def check_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
    """Every argument present, with the declared shape and dtype."""
    for arg in graph.args:
        if arg.name not in inputs:
            raise ReferenceInputError(f"missing input '{arg.name}'")
        a = np.asarray(inputs[arg.name])
        if a.shape != tuple(arg.shape) or a.dtype != DTYPES[arg.dtype]:
            raise ReferenceInputError(
                f"input '{arg.name}': expected {arg.shape[0]}x{arg.shape[1]} {arg.dtype}, "
                f"got {'x'.join(map(str, a.shape))} {a.dtype}"
            )


def evaluate_graph(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the graph's nodes in program order; return every buffer after the run."""
    check_inputs(graph, inputs)
    buffers = [np.array(inputs[a.name], copy=True) for a in graph.args]
    tiles: dict[int, np.ndarray] = {}
    for node in sorted(graph.nodes, key=lambda n: n.seq):
        r, c = node.tile.shape  # type: ignore[union-attr]
        if node.kind == "load":
            tiles[node.id] = buffers[node.buffer][node.row : node.row + r, node.col : node.col + c].copy()
        elif node.kind == "compute":
            fam = get_family(node.family)
            ins = [tiles[i.id] for i in node.inputs]
            tiles[node.id] = fam.run(ins, node.params, node.tile.dtype)  # type: ignore[union-attr]
        elif node.kind == "store":
            buffers[node.buffer][node.row : node.row + r, node.col : node.col + c] = tiles[node.inputs[0].id]
    return {a.name: b for a, b in zip(graph.args, buffers, strict=True)}


def evaluate(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The program's output buffers (those it stores to) for ``inputs``."""
    graph = build_graph(module)
    result = evaluate_graph(graph, inputs)
    return {a.name: result[a.name] for a in graph.args if a.is_output}
