"""``vdir-verify-deps``: build and check the dependency graph, report its costs.

Expands the program (every ``vdir.repeat`` iteration, every offset), checks
every region against its buffer, derives the memory dependencies, and rejects
an edge that points backwards in program order (a cycle). With
``annotate=true`` it records the graph's size and critical path on the
program, so a user can see what the scheduler will face.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, f64, i64
from xdsl.passes import ModulePass

from vdir.analysis.cost_model import node_time_us
from vdir.analysis.graph import Graph, build_graph, single_program
from vdir.analysis.queues import check_dependencies_point_forward


def critical_path_us(graph: Graph) -> float:
    """Longest chain of micro-op times through tile and ordering edges."""
    finish: dict[int, float] = {}
    for n in sorted(graph.nodes, key=lambda n: n.seq):
        ready = max([finish[p.id] for p in n.inputs] + [finish[p.id] for g in n.deps for p in g] + [0.0])
        finish[n.id] = ready + node_time_us(n, graph)
    return max(finish.values(), default=0.0)


def verify_dependencies(graph: Graph) -> None:
    """Reject dependency cycles (edges that point backwards)."""
    check_dependencies_point_forward(graph)


@dataclass(frozen=True)
class VerifyDepsPass(ModulePass):
    """Check the expanded dependency graph; ``annotate`` records its statistics."""

    name = "vdir-verify-deps"

    annotate: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = build_graph(op)
        verify_dependencies(graph)
        if self.annotate:
            program = single_program(op)
            program.attributes["vdir.micro_ops"] = IntegerAttr(len(graph.nodes), i64)
            edges = sum(len(n.inputs) + sum(len(g) for g in n.deps) for n in graph.nodes)
            program.attributes["vdir.edges"] = IntegerAttr(edges, i64)
            program.attributes["vdir.critical_path_us"] = FloatAttr(round(critical_path_us(graph), 3), f64)
