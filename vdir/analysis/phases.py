"""Phases: how many hand-offs through global memory lie before each micro-op.

A node's phase is the most hand-offs (a load that depends on a store) on a
chain of tile edges and dependencies that reaches it. The micro-ops of one
phase can run together; a phase ends when its slowest SM does. ``vdir-place``
balances each phase over the SMs on its own, and the stream holds
(:mod:`vdir.analysis.stream_holds`) hold a weight tile only for a micro-op of
a later phase than the store it waits for.
"""

from __future__ import annotations

from vdir.analysis.graph import Node


def phase_of_nodes(nodes: list[Node]) -> list[int]:
    """Each node's phase, indexed by node id: the most hand-offs through global memory (a load that
    depends on a store) on a chain of tile edges and dependencies that reaches it. ``nodes`` in
    program order."""
    phase = [0] * (max((n.id for n in nodes), default=-1) + 1)
    group_phase: dict[int, tuple[int, int]] = {}  # by id of a dependency group: (for a store or compute, for a load)
    for n in nodes:
        p = 0
        for i in n.inputs:
            q = phase[i.id]
            if q > p:
                p = q
        if n.deps:
            load = n.kind == "load"
            for g in n.deps:
                gp = group_phase.get(id(g))
                if gp is None:
                    every = max((phase[m.id] for m in g), default=0)
                    stored = max((phase[m.id] for m in g if m.kind == "store"), default=-1)
                    gp = group_phase[id(g)] = (every, max(every, stored + 1))
                q = gp[1] if load else gp[0]
                if q > p:
                    p = q
        phase[n.id] = p
    return phase
