"""Which later loads a load queue asks L2 to fetch ahead, and where (``vdir-encode``'s ``l2-prefetch``).

A load engine runs its queue in order, so while it waits on other SMs (a
load behind a global counter: an activation row another SM stores) it
issues nothing, and the weight tiles after it leave the HBM idle although
nothing keeps them from streaming. Shared memory cannot take them earlier
(``vdir-schedule`` already hoists as many as the tile slots allow). L2 can:
a *prefetch* record (``isa.OP_PREFETCH``) placed before the waiting load
starts those tiles towards L2, and when the engine reaches them their loads
read L2 instead of HBM.

The plan for one queue: at each *barrier* (the first of a run of loads that
wait on other SMs) keep a window of ``budget`` bytes of the queue's later
*candidates* asked for — a candidate is a load with a compile-time region,
no condition and no wait on another SM (weights, tables) of at least
``min_bytes`` — prefetching those of the window not asked for at an earlier
barrier. The window reaches across later barriers (the next phase's weights
stream while this phase waits); its size bounds what each SM keeps in
flight in L2 (``budget`` times the SMs: L2 must hold it until it is read).

A prefetch has no effect on any value: it reads memory the load will read
anyway, takes no tile slot, waits on nothing and signals nothing, so the
dependency protocol and the simulator (which checks its region and runs it
as a ``nop``) are unchanged by it.
"""

from __future__ import annotations

from vdir.analysis.graph import Node
from vdir.analysis.queues import waits_on_other_sms

#: loads smaller than this are not worth a record (a norm's weight row, a mask)
MIN_PREFETCH_BYTES = 4096
#: the budget ``vdir-encode`` and ``vdir-pipeline`` use unless told: none, since every budget
#: measured made the 1B decode step slower (docs/performance.md, decode-step round 2)
DEFAULT_BUDGET = 0


def is_candidate(node: Node, min_bytes: int = MIN_PREFETCH_BYTES) -> bool:
    """A load whose region is known at compile time and that does not wait on other SMs."""
    return (
        node.kind == "load"
        and node.dyn is None
        and node.guard is None
        and node.tile is not None
        and node.tile.nbytes >= min_bytes
        and not waits_on_other_sms(node)
    )


def plan_prefetches(queue: list[Node], budget: int, min_bytes: int = MIN_PREFETCH_BYTES) -> dict[int, list[Node]]:
    """Queue index of each barrier -> the candidates to prefetch right before it (see the module).

    ``budget`` 0 plans nothing.
    """
    plan: dict[int, list[Node]] = {}
    if budget <= 0:
        return plan
    candidates = [i for i, n in enumerate(queue) if is_candidate(n, min_bytes)]
    asked = 0  # candidates[:asked] have been prefetched
    first = 0  # candidates[first:] come after the current barrier
    for i, node in enumerate(queue):
        if node.kind != "load" or not waits_on_other_sms(node):
            continue
        if i > 0 and queue[i - 1].kind == "load" and waits_on_other_sms(queue[i - 1]):
            continue  # not the first of its run
        while first < len(candidates) and candidates[first] < i:
            first += 1
        asked = max(asked, first)
        window, end = 0, first
        while end < len(candidates):
            size = queue[candidates[end]].tile.nbytes  # type: ignore[union-attr]
            if window + size > budget:
                break
            window += size
            end += 1
        if end > asked:
            plan[i] = [queue[k] for k in candidates[asked:end]]
            asked = end
    return plan
