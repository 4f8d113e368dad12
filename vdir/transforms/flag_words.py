"""``vdir-flag-words``: hand-offs between SMs through flag words instead of counters.

Marks the loads and stores of the dependency groups that
:func:`vdir.analysis.flag_words.plan_flag_words` finds (loads of at most
``max-bytes``): each such store also writes its bytes into the sync block
as 8-byte words of 4 data bytes and the launch's epoch, and each such
load polls those words instead of waiting for the group's counter
(``vdir-layout-deps`` then gives the group no counter and no bits). Why, and
which groups qualify: the analysis module.

Runs on an allocated program (after ``vdir-alloc-smem``, before
``vdir-layout-deps``); ``vdir-pipeline{flag-words=N}`` runs it in place.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.flag_words import DEFAULT_MAX_BYTES, mark_flag_words, plan_flag_words
from vdir.analysis.stages import require_option_in_range, run_stage


@dataclass(frozen=True)
class FlagWordsPass(ModulePass):
    """Mark the hand-offs between SMs that can carry flag words instead of a counter.

    Option ``max-bytes`` (default 4096): the largest load that polls flag words (the probe measured
    the gain on 4 KiB rows and a loss on 16 KiB ones).
    """

    name = "vdir-flag-words"

    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        require_option_in_range(self.name, "max-bytes", self.max_bytes, 1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "allocated", "allocated", lambda graph: mark_flag_words(graph, plan_flag_words(graph, self.max_bytes)))
