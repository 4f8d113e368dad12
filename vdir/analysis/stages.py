"""Glue shared by the scheduling passes: read the graph, check the stage, write back."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from vdir.analysis.graph import STAGES, Graph, build_graph, replace_program
from vdir.analysis.queues import check_scheduled_order
from vdir.diagnostics import PassFailure, UserError
from vdir.target import TargetDescription, UnknownTargetError, get_target


def require_option_in_range(pass_name: str, option: str, value: int, minimum: int, maximum: int | None = None) -> None:
    """Reject an integer pass option outside ``minimum .. maximum`` (None: no upper bound), or not an integer
    (xDSL reads ``num-sms=true`` as a bool), before the pass runs: one line, naming the option as spelled."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise UserError(f"error: {pass_name}: option '{option}' must be an integer, got {shown}")
    if value < minimum:
        raise UserError(f"error: {pass_name}: option '{option}' must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise UserError(f"error: {pass_name}: option '{option}' must be at most {maximum}, got {value}")


def require_option_choice(pass_name: str, option: str, value: str, choices: tuple[str, ...]) -> None:
    """Reject a pass option that is not one of ``choices``, before the pass runs: one line, naming the
    option as spelled and the values it takes."""
    if not isinstance(value, str) or value not in choices:
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise UserError(f"error: {pass_name}: option '{option}' must be one of {', '.join(choices)}, got {shown}")


def resolve_target(name: str, num_sms: int | None, graph_target: TargetDescription) -> TargetDescription:
    """The pass's target: its ``target`` option, else the program's; ``num-sms`` (None: all) restricts it."""
    try:
        return get_target(name or graph_target.name, num_sms)
    except UnknownTargetError as e:
        raise PassFailure(str(e)) from None


def run_stage(
    module: ModuleOp, needs: str, produces: str, stage: Callable[[Graph], None]
) -> Graph:
    """Build the graph, check it is at stage ``needs``, run ``stage``, write it back."""
    graph = build_graph(module)
    have, want = STAGES.index(graph.stage), STAGES.index(needs)
    if have < want:
        missing = STAGES[have + 1 : want + 1]
        raise PassFailure(
            f"this pass needs a program at stage '{needs}' (it is '{graph.stage}'); "
            f"run the passes producing {', '.join(repr(s) for s in missing)} first",
            graph.program_op,
        )
    if have > want:
        raise PassFailure(
            f"the program is already at stage '{graph.stage}'; this pass expects '{needs}'",
            graph.program_op,
        )
    if have >= STAGES.index("scheduled"):
        check_scheduled_order(graph)
    stage(graph)
    replace_program(module, graph, produces)
    return graph
