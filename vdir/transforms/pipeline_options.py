"""The pass pipeline's options: one frozen, validated value that says how a program is compiled.

:class:`PipelineOptions` owns every ``vdir-pipeline`` option's name, type,
default and check. ``vdir-pipeline`` (the pass, whose fields they are),
:func:`vdir.transforms.pipeline.compile_to_encoded`, ``vdir.compile(...,
pipeline=...)``, ``LlamaDecoder(..., pipeline=...)`` and the bench tools all
take them; a mapping or a ``"key=value ..."`` string is read as
:mod:`vdir.options` says. Each option that a single pass also has is checked
as that pass checks it, and a bad one reads as ``vdir-opt`` prints it
(``error: vdir-pipeline: option 'prefetch' must be at most 64, got 99``).

Options change how fast a program runs and how long it takes to compile,
never its results.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from vdir.analysis.l2_prefetch import DEFAULT_BUDGET
from vdir.analysis.stages import require_option_choice, require_option_in_range
from vdir.diagnostics import UserError
from vdir.options import OptionError, OptionSet
from vdir.target import MIN_SMS, TargetDescription
from vdir.transforms.alloc_smem import STREAM_RUN_AHEAD, StreamRoom
from vdir.transforms.place import DEFAULT_SIDE_LOADS, SIDE_LOADS
from vdir.transforms.schedule import DEFAULT_PREFETCH, MAX_PREFETCH, MIN_PREFETCH

#: the pass whose options these are, as messages name it
PIPELINE_PASS = "vdir-pipeline"


class PipelineOptionError(OptionError, UserError):
    """A pipeline option is unknown or has a bad value: a ``ValueError`` for embedders, and the one-line
    message ``vdir-opt`` prints."""


@dataclass(frozen=True)
class PipelineOptions(OptionSet):
    """How the pass pipeline compiles a program (defaults: the measured choice; ``docs/passes.md``)."""

    KIND: ClassVar[str] = "pipeline"
    ERROR: ClassVar[type[OptionError]] = PipelineOptionError

    target: str = ""
    """The target description to compile for; empty: the program's own."""

    num_sms: int | None = None
    """SMs to place on, at least ``MIN_SMS``; None: every SM of the target."""

    fuse: bool = True
    """Run ``vdir-fuse`` first."""

    prefetch: int = DEFAULT_PREFETCH
    """Loads hoisted per group of waiting loads, as ``vdir-schedule``'s option (fewer where the tiles
    do not fit)."""

    reroll: bool = True
    """Write repeated runs of records as loop records, as ``vdir-encode``'s option."""

    l2_prefetch: int = DEFAULT_BUDGET
    """Bytes of L2 prefetch records per SM, as ``vdir-encode``'s option (0: none)."""

    stream_loads: bool = True
    """Put the weight tiles on a stream engine of their own, as ``vdir-place``'s option."""

    run_ahead: int = STREAM_RUN_AHEAD
    """Weight tiles the stream engine may hold beyond those in use, as ``vdir-alloc-smem``'s option."""

    weight_ring: int = 0
    """Slots of a ring for the weight tiles (0: none), as ``vdir-alloc-smem``'s option."""

    phase_balance: bool = True
    """Balance each phase over the SMs on its own, as ``vdir-place``'s option."""

    keep_trips: bool = False
    """Keep a layer loop's trips alike through placement and the passes after, as ``vdir-place``'s
    option."""

    stamp_trips: bool = True
    """With ``keep_trips``: compile the layer loop at two short trip counts and stamp the encoding to
    the full count where the checks allow it; False: compile every trip."""

    side_loads: str = DEFAULT_SIDE_LOADS
    """Where loads that wait on nothing go, as ``vdir-place``'s option (``none`` or ``idle``)."""

    flag_words: int = 0
    """Hand rows of at most this many bytes between SMs as flag words (``vdir-flag-words``' ``max-bytes``;
    0: none)."""

    hold_streams: int | None = None
    """Make the weight tile that would issue into a hand-off store's compute slot wait for the store,
    where the tile's readers come at least this many phases after it (``vdir-hold-streams``'
    ``phases``; 0: none; None, the default: the target's
    :attr:`~vdir.target.TargetDescription.stream_holds`, 1 on the H100 and 0 on the H200, where the
    holds with ``release_first`` gained and lost, docs/performance.md rounds 37 and 55): the store's
    release then finds no tile of that slot in flight."""

    release_first: bool | None = None
    """A store that releases a counter and whose bits a stream load on its SM waits for (a hold's, or a
    slot's reuse) releases before it toggles its bits, as ``vdir-encode``'s option (None, the default:
    the target's :attr:`~vdir.target.TargetDescription.release_first`, true on the H100; what makes
    ``hold_streams`` pay there but not on the H200, docs/performance.md rounds 36 and 37): the load then
    issues after the release's fence, not into it."""

    def __post_init__(self) -> None:
        try:
            if self.num_sms is not None:
                require_option_in_range(PIPELINE_PASS, "num-sms", self.num_sms, MIN_SMS)
            require_option_in_range(PIPELINE_PASS, "prefetch", self.prefetch, MIN_PREFETCH, MAX_PREFETCH)
            require_option_in_range(PIPELINE_PASS, "l2-prefetch", self.l2_prefetch, 0)
            self.stream_room.check(PIPELINE_PASS)
            require_option_choice(PIPELINE_PASS, "side-loads", self.side_loads, SIDE_LOADS)
            require_option_in_range(PIPELINE_PASS, "flag-words", self.flag_words, 0)
            if self.hold_streams is not None:
                require_option_in_range(PIPELINE_PASS, "hold-streams", self.hold_streams, 0)
        except UserError as e:
            raise PipelineOptionError(str(e)) from None
        self.check_types()  # what the checks above do not cover: the flags and the target's name

    def with_given(self, **given: object) -> PipelineOptions:
        """These options with ``given`` (options an entry point takes as arguments of its own: ``target``,
        ``num_sms``; None: not given) put in; one these options set to another value is a
        :class:`PipelineOptionError` naming both."""
        default = PipelineOptions()
        for name, value in given.items():
            mine = getattr(self, name)
            if value is not None and mine != getattr(default, name) and mine != value:
                dashed = name.replace("_", "-")
                raise PipelineOptionError(f"{dashed}={value} and the pipeline option {dashed}={mine} disagree")
        return self.with_overrides({name: value for name, value in given.items() if value is not None})

    def for_target(self, target: TargetDescription) -> PipelineOptions:
        """These options with what they leave to the target (None: ``hold_streams``, ``release_first``)
        taken from ``target``, the one the program is compiled for."""
        return replace(
            self,
            hold_streams=target.stream_holds if self.hold_streams is None else self.hold_streams,
            release_first=target.release_first if self.release_first is None else self.release_first,
        )

    @property
    def stream_room(self) -> StreamRoom:
        """``run_ahead`` and ``weight_ring`` as the one value ``vdir-alloc-smem`` takes."""
        return StreamRoom(self.run_ahead, self.weight_ring)
