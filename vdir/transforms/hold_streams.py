"""``vdir-hold-streams``: a weight tile waits for the hand-off store on its SM, so that the store's
release finds no tile of its own slot in flight.

Which tiles and why: :mod:`vdir.analysis.stream_holds`. Runs on an
allocated program (after ``vdir-alloc-smem``, whose slot reuse says which
tile would issue into the store's compute's slot; before
``vdir-layout-deps``, which turns each hold into a dependency bit);
``vdir-pipeline{hold-streams=N}`` runs it in place with ``phases`` N (0: not at all; by default the
target's, ``TargetDescription.stream_holds``: with ``release-first``, on an H100 0.8-4.2% off the
16-layer MLP stacks and up to 1.8% off the decode steps, so one phase there; 2% slower on the 1B
step on the H200, so none; alone slower: docs/performance.md rounds 36, 37 and 55).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.graph import Graph, Node
from vdir.analysis.stages import require_option_in_range, run_stage
from vdir.analysis.stream_holds import add_stream_holds, hold_facts, plan_stream_holds


def hold_streams(graph: Graph, phases: int = 1) -> int:
    """Place every SM's stream holds in ``graph`` (of tiles read at least ``phases`` phases after their
    store); returns how many."""
    facts = hold_facts(graph, phases)
    by_sm: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        by_sm[n.sm].append(n)
    holds = [pair for sm in sorted(by_sm) for pair in plan_stream_holds(by_sm[sm], facts)]
    add_stream_holds(holds)
    return len(holds)


@dataclass(frozen=True)
class HoldStreamsPass(ModulePass):
    """Make the stream load that would issue into a hand-off store's compute slot wait for the store.

    Option ``phases`` (default 1, at least 1): hold only tiles whose readers come at least this many
    phases after the store (``vdir.analysis.stream_holds``).
    """

    name = "vdir-hold-streams"

    phases: int = 1

    def __post_init__(self) -> None:
        require_option_in_range(self.name, "phases", self.phases, 1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def stage(graph: Graph) -> None:
            hold_streams(graph, self.phases)

        run_stage(op, "allocated", "allocated", stage)
