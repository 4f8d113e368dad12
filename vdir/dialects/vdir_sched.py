"""The typed attributes of the scheduled form of a ``vdir.program``.

The scheduling passes (``docs/passes.md``) record what they decide on the
program itself, so that each pass can run on its own from ``vdir-opt``:

* ``vdir.stage = #vdir.stage<placed>`` on the program: how far the program
  has been compiled (:class:`Stage`);
* ``vdir.layout = #vdir.layout<...>`` on the program: the facts about the
  whole program (:class:`LayoutAttr`: SMs, shared-memory bytes, counters,
  buffer roles);
* ``vdir.sched = #vdir.sched<...>`` on every micro-op: where and when it runs
  and how it synchronises (:class:`ScheduleAttr`).

The attributes check what they can on their own (non-negative numbers,
parities of 0 or 1, pairs written as pairs) while they are parsed, with
located errors; the program's verifier checks them against each other, the
stage and the target (``vdir.dialects.vdir``). Absent facts are omitted, both
in the text and in the attribute (``NoneAttr``, empty arrays).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import I64, ArrayAttr, DenseArrayBase, IntAttr, NoneAttr, StringAttr, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from vdir.isa import ROLE_FLAGS

#: discardable attribute names of the scheduled form
STAGE_KEY = "vdir.stage"
LAYOUT_KEY = "vdir.layout"
SCHED_KEY = "vdir.sched"

#: the roles of a program argument, as the encoding records them (``vdir.isa.buffer_role``)
BUFFER_ROLES = tuple(ROLE_FLAGS)


class Stage(StrEnum):
    """How far a program has been compiled, in pipeline order."""

    SOURCE = "source"
    PLACED = "placed"
    SCHEDULED = "scheduled"
    ALLOCATED = "allocated"
    LAID_OUT = "laid-out"

    @property
    def rank(self) -> int:
        """Position in pipeline order (``source`` is 0)."""
        return _STAGE_ORDER.index(self)

    def reached(self, other: "Stage") -> bool:
        """Whether this stage is ``other`` or later."""
        return self.rank >= other.rank


_STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)

#: the stage whose pass first records each fact of ``#vdir.sched``; a
#: micro-op of an earlier stage cannot have it
SCHED_FACT_STAGE: dict[str, Stage] = {
    "id": Stage.PLACED,
    "seq": Stage.PLACED,
    "after": Stage.PLACED,
    "sm": Stage.PLACED,
    "hoist": Stage.SCHEDULED,
    "pos": Stage.SCHEDULED,
    "smem": Stage.ALLOCATED,
    "trip": Stage.PLACED,
    "template": Stage.PLACED,
    "flag_words": Stage.PLACED,
    "wait": Stage.LAID_OUT,
    "signal": Stage.LAID_OUT,
    "wait_counters": Stage.LAID_OUT,
    "release": Stage.LAID_OUT,
}

#: the same for the facts of ``#vdir.layout``
LAYOUT_FACT_STAGE: dict[str, Stage] = {
    "num_sms": Stage.PLACED,
    "buffer_roles": Stage.PLACED,
    "smem_bytes": Stage.ALLOCATED,
    "counter_counts": Stage.LAID_OUT,
}


def _parse_dashed_word(parser: AttrParser) -> tuple[str, int, int]:
    """A word that may contain dashes (``laid-out``), with its start and end positions."""
    start = parser.pos
    word = parser.parse_identifier("a stage name")
    while parser.parse_optional_punctuation("-") is not None:
        word += "-" + parser.parse_identifier("a stage name")
    return word, start, parser.pos


@irdl_attr_definition
class StageAttr(EnumAttribute[Stage]):
    """``#vdir.stage<scheduled>``: the program's :class:`Stage`."""

    name = "vdir.stage"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Stage:
        with parser.in_angle_brackets():
            word, start, end = _parse_dashed_word(parser)
        if word not in Stage._value2member_map_:
            known = ", ".join(s.value for s in Stage)
            parser.raise_error(f"unknown stage '{word}' (known: {known})", start, end)
        return Stage(word)


# --------------------------------------------------------------------------
# Shared parsing helpers: `key = value` lists with located errors
# --------------------------------------------------------------------------

#: a check of one parsed value: an error message, or None when the value is fine
Check = Callable[[object], "str | None"]


def _parse_fields(
    parser: AttrParser, what: str, parsers: Mapping[str, Callable[[AttrParser, str], object]]
) -> dict[str, object]:
    """``<key = value, ...>`` with each key at most once, parsed by ``parsers[key]``."""
    fields: dict[str, object] = {}

    def one() -> None:
        start = parser.pos
        key = parser.parse_identifier(f"a {what} field name")
        if key not in parsers:
            parser.raise_error(
                f"unknown {what} field '{key}' (known: {', '.join(parsers)})", start, parser.pos
            )
        if key in fields:
            parser.raise_error(f"{what} field '{key}' is given twice", start, parser.pos)
        parser.parse_punctuation("=")
        fields[key] = parsers[key](parser, key)

    parser.parse_comma_separated_list(parser.Delimiter.ANGLE, one)
    return fields


def _checked(parser: AttrParser, parse: Callable[[], object], check: Check) -> object:
    """Parse a value and raise a located error when ``check`` rejects it."""
    start = parser.pos
    value = parse()
    message = check(value)
    if message is not None:
        parser.raise_error(message, start, parser.pos)
    return value


def _checked_int(parser: AttrParser, check: Check) -> int:
    """An integer literal that ``check`` accepts."""
    return _checked(parser, lambda: parser.parse_integer(allow_boolean=False), check)  # type: ignore[return-value]


def _int_parser(check: Check) -> Callable[[AttrParser, str], int]:
    def parse(parser: AttrParser, key: str) -> int:
        return _checked_int(parser, check)

    return parse


def _int_list_parser(check: Check, distinct: bool = True) -> Callable[[AttrParser, str], list[int]]:
    def parse(parser: AttrParser, key: str) -> list[int]:
        def item() -> int:
            return _checked_int(parser, check)

        start = parser.pos
        values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, item)
        if distinct and len(set(values)) != len(values):
            parser.raise_error(f"{key} lists an entry twice", start, parser.pos)
        return values

    return parse


def _pair_list_parser(
    first: str, second: str, check: Callable[[int, int], "str | None"], distinct: bool = True
) -> Callable[[AttrParser, str], list[tuple[int, int]]]:
    """``[a : b, ...]``: pairs that the syntax keeps together (with distinct
    first elements when ``distinct``)."""

    def parse(parser: AttrParser, key: str) -> list[tuple[int, int]]:
        def pair() -> tuple[int, int]:
            start = parser.pos
            a = parser.parse_integer(allow_boolean=False)
            if parser.parse_optional_punctuation(":") is None:
                parser.raise_error(f"{key} entries are '{first} : {second}' pairs", start, parser.pos)
            b = parser.parse_integer(allow_boolean=False)
            message = check(a, b)
            if message is not None:
                parser.raise_error(message, start, parser.pos)
            return a, b

        start = parser.pos
        pairs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, pair)
        if distinct and len({a for a, _ in pairs}) != len(pairs):
            parser.raise_error(f"{key} names a {first} twice", start, parser.pos)
        return pairs

    return parse


def _non_negative(what: str) -> Check:
    def check(v: object) -> str | None:
        return None if isinstance(v, int) and v >= 0 else f"{what} must be non-negative, got {v}"

    return check


def _positive(what: str) -> Check:
    def check(v: object) -> str | None:
        return None if isinstance(v, int) and v > 0 else f"{what} must be positive, got {v}"

    return check


def _negative_hoist(v: object) -> str | None:
    if isinstance(v, int) and v < 0:
        return None
    return f"hoist counts the places a load moved ahead and must be negative, got {v}"


def _wait_pair(bit: int, parity: int) -> str | None:
    if bit < 0:
        return f"wait bit must be non-negative, got {bit}"
    if parity not in (0, 1):
        return f"wait parity of bit {bit} must be 0 or 1, got {parity}"
    return None


def _counter_pair(counter: int, count: int) -> str | None:
    if counter < 0:
        return f"wait counter must be non-negative, got {counter}"
    if count <= 0:
        return f"wait count of counter {counter} must be positive, got {count}"
    return None


def _array(values: Iterable[int]) -> DenseArrayBase[I64]:
    return DenseArrayBase.from_list(i64, list(values))


def _opt_int(value: int | None) -> IntAttr | NoneAttr:
    return NoneAttr() if value is None else IntAttr(value)


def _int_or_none(attr: IntAttr | NoneAttr) -> int | None:
    return attr.data if isinstance(attr, IntAttr) else None


def _pairs(flat: Sequence[int]) -> list[tuple[int, int]]:
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def _print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _print_pairs(printer: Printer, pairs: Sequence[tuple[int, int]]) -> None:
    printer.print_string("[" + ", ".join(f"{a} : {b}" for a, b in pairs) + "]")


# --------------------------------------------------------------------------
# Per micro-op: #vdir.sched
# --------------------------------------------------------------------------

#: checks of the scalar facts, by their name in the text
_SCALAR_CHECKS: dict[str, Check] = {
    "id": _non_negative("id"),
    "seq": _non_negative("seq"),
    "hoist": _negative_hoist,
    "sm": _non_negative("sm"),
    "pos": _non_negative("pos"),
    "smem": _non_negative("smem"),
    "trip": _non_negative("trip"),
    "template": _non_negative("template"),
    "flag_words": lambda v: None if v == 1 else f"flag_words is 1 where present, got {v}",
}


def _after_parser(parser: AttrParser, key: str) -> list[list[int]]:
    """``[[1, 2], [0]]``: dependency groups, each naming at least one micro-op id."""

    def group() -> list[int]:
        start = parser.pos
        ids = _int_list_parser(_non_negative("an after id"), distinct=False)(parser, "an after group")
        if not ids:
            parser.raise_error("an after group names at least one micro-op", start, parser.pos)
        return ids

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, group)


_SCHED_PARSERS: dict[str, Callable[[AttrParser, str], object]] = {
    **{key: _int_parser(check) for key, check in _SCALAR_CHECKS.items()},
    "wait": _pair_list_parser("bit", "parity", _wait_pair),
    "signal": _int_list_parser(_non_negative("signal bit")),
    "wait_counters": _pair_list_parser("counter", "count", _counter_pair, distinct=False),
    "release": _int_list_parser(_non_negative("release counter"), distinct=False),
    "after": _after_parser,
    "label": lambda parser, key: parser.parse_str_literal("the micro-op's readable name"),
}


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """``#vdir.sched<...>``: what the scheduling passes decided for one micro-op.

    ``#vdir.sched<id = 3, sm = 0, pos = 2, smem = 4096, wait = [3 : 1],
    signal = [2], wait_counters = [0 : 4], release = [1], after = [[1, 2], [0]]>``

    * ``id``: the micro-op's id (unique in the program; ``after`` names ids);
    * ``seq``: its place in program order when it differs from ``id`` (a
      rematerialised copy shares its original's); ``hoist``: how many places
      ``vdir-schedule`` moved a load ahead of others of equal ``seq``;
    * ``sm``: the SM it runs on; ``pos``: its position in its (SM, engine)
      queue; ``smem``: the shared-memory offset of the tile it produces;
    * ``trip``, ``template``: where ``vdir-place`` placed the trips of the
      program's layer loop alike (``keep-trips``), the micro-op's trip of that
      loop and its index among one trip's micro-ops (both or neither), which
      the later passes read to keep the trips alike;
    * ``flag_words = 1``: a load that polls its bytes' flag words instead of
      waiting for its group of stores into its buffer, or a store that also
      writes its bytes as flag words (``vdir-flag-words``,
      ``vdir.analysis.flag_words``);
    * ``wait``: ``bit : parity`` pairs of the SM's dependency bitmap it waits
      for; ``signal``: the bits it toggles when it completes;
    * ``wait_counters``: ``counter : count`` pairs of global counters it waits
      for (count per launch); ``release``: the counters it increments;
    * ``after``: its dependency groups, each a list of producer ids that it
      waits for as a whole;
    * ``label``: the micro-op's readable name where its SSA name does not say
      it all (``"%wt[i=3]"`` for a copy of a ``vdir.repeat`` body), so that
      diagnostics and listings name it the same after the text round trip.

    Which facts a micro-op has depends on the program's stage; the program
    verifier checks that, and the ranges that depend on the program.
    """

    name = "vdir.sched"

    uop_id: IntAttr
    seq: IntAttr | NoneAttr
    hoist: IntAttr | NoneAttr
    sm: IntAttr | NoneAttr
    pos: IntAttr | NoneAttr
    smem: IntAttr | NoneAttr
    trip: IntAttr | NoneAttr
    template: IntAttr | NoneAttr
    flag_words: IntAttr | NoneAttr
    wait: DenseArrayBase[I64]  # (bit, parity) pairs, flattened
    signal: DenseArrayBase[I64]
    wait_counters: DenseArrayBase[I64]  # (counter, count) pairs, flattened
    release: DenseArrayBase[I64]
    after: ArrayAttr[DenseArrayBase[I64]]
    label: StringAttr | NoneAttr

    #: text name -> Python field of the scalar facts, in printing order
    SCALARS: ClassVar[dict[str, str]] = {
        "id": "uop_id", "seq": "seq", "hoist": "hoist", "sm": "sm", "pos": "pos", "smem": "smem",
        "trip": "trip", "template": "template", "flag_words": "flag_words",
    }

    def __init__(
        self,
        uop_id: int,
        *,
        seq: int | None = None,
        hoist: int | None = None,
        sm: int | None = None,
        pos: int | None = None,
        smem: int | None = None,
        trip: int | None = None,
        template: int | None = None,
        flag_words: int | None = None,
        wait: Mapping[int, int] | Iterable[tuple[int, int]] = (),
        signal: Iterable[int] = (),
        wait_counters: Iterable[tuple[int, int]] = (),
        release: Iterable[int] = (),
        after: Iterable[Iterable[int]] = (),
        label: str | None = None,
    ):
        super().__init__(*self._parameters(
            uop_id, seq, hoist, sm, pos, smem, trip, template, flag_words, wait, signal, wait_counters, release,
            after, label,
        ))

    @staticmethod
    def _parameters(
        uop_id: int,
        seq: int | None,
        hoist: int | None,
        sm: int | None,
        pos: int | None,
        smem: int | None,
        trip: int | None,
        template: int | None,
        flag_words: int | None,
        wait: Mapping[int, int] | Iterable[tuple[int, int]],
        signal: Iterable[int],
        wait_counters: Iterable[tuple[int, int]],
        release: Iterable[int],
        after: Iterable[Iterable[int]],
        label: str | None = None,
    ) -> tuple[Attribute, ...]:
        """The attribute's parameters from Python values (not verified yet)."""
        # cast: isinstance cannot tell a Mapping[int, int] from an iterable of pairs that is a Mapping
        pairs = cast(Iterable[tuple[int, int]], wait.items() if isinstance(wait, Mapping) else wait)
        return (
            IntAttr(uop_id), _opt_int(seq), _opt_int(hoist), _opt_int(sm), _opt_int(pos), _opt_int(smem),
            _opt_int(trip), _opt_int(template), _opt_int(flag_words),
            _array(x for bp in pairs for x in bp),
            _array(signal),
            _array(x for cc in wait_counters for x in cc),
            _array(release),
            ArrayAttr([_array(g) for g in after]),
            NoneAttr() if label is None else StringAttr(label),
        )

    # -- Python values -------------------------------------------------------
    def fact(self, key: str) -> int | None:
        """A scalar fact by its name in the text (``"sm"``), or None when absent."""
        return _int_or_none(getattr(self, self.SCALARS[key]))

    def present_facts(self) -> list[str]:
        """The names (as in the text) of the facts this attribute holds."""
        present = [key for key in self.SCALARS if self.fact(key) is not None]
        lists = (("wait", self.wait), ("signal", self.signal), ("wait_counters", self.wait_counters),
                 ("release", self.release))
        present += [key for key, flat in lists if len(flat)]
        if self.after.data:
            present.append("after")
        return present

    @property
    def wait_bits(self) -> dict[int, int]:
        """bit -> parity it waits for."""
        return dict(_pairs(self.wait.get_values()))

    @property
    def signal_bits(self) -> list[int]:
        return list(self.signal.get_values())

    @property
    def counter_waits(self) -> list[tuple[int, int]]:
        """(counter, count per launch) pairs it waits for."""
        return _pairs(self.wait_counters.get_values())

    @property
    def released_counters(self) -> list[int]:
        return list(self.release.get_values())

    @property
    def after_groups(self) -> list[list[int]]:
        return [list(g.get_values()) for g in self.after.data]

    @property
    def label_text(self) -> str | None:
        """The readable name, or None when the SSA name is it."""
        return self.label.data if isinstance(self.label, StringAttr) else None

    # -- text --------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        fields = _parse_fields(parser, "vdir.sched", _SCHED_PARSERS)
        if "id" not in fields:
            parser.raise_error("#vdir.sched needs an id", start, parser.pos)
        # The parser checked every field; xDSL verifies the attribute it builds from these.
        lists = ("wait", "signal", "wait_counters", "release", "after")
        return cls._parameters(
            *(fields.get(key) for key in cls.SCALARS),  # type: ignore[arg-type]
            *(fields.get(key, ()) for key in lists),  # type: ignore[arg-type]
            fields.get("label"),  # type: ignore[arg-type]
        )

    def print_parameters(self, printer: Printer) -> None:
        parts = [f"{key} = {v}" for key in self.SCALARS if (v := self.fact(key)) is not None]
        printer.print_string("<" + ", ".join(parts))
        if (label := self.label_text) is not None:  # last of the scalars: it reads as the micro-op's name
            printer.print_string(", label = ")
            printer.print_string_literal(label)
        lists: list[tuple[str, Sequence, Callable[[Printer, Sequence], None]]] = [
            ("wait", sorted(self.wait_bits.items()), _print_pairs),
            ("signal", self.signal_bits, _print_int_list),
            ("wait_counters", self.counter_waits, _print_pairs),
            ("release", self.released_counters, _print_int_list),
        ]
        for key, values, print_values in lists:
            if values:
                printer.print_string(f", {key} = ")
                print_values(printer, values)
        if self.after.data:
            printer.print_string(", after = [")
            printer.print_list(self.after_groups, lambda g: _print_int_list(printer, g))
            printer.print_string("]")
        printer.print_string(">")

    def verify(self) -> None:
        """The checks of the parser, for attributes built from Python."""
        for key, check in _SCALAR_CHECKS.items():
            value = self.fact(key)
            if value is not None and (message := check(value)) is not None:
                raise VerifyException(message)
        if (self.fact("trip") is None) != (self.fact("template") is None):
            raise VerifyException("#vdir.sched has a trip and a template of the layer loop, or neither")
        for flat, key, pair_check in (
            (self.wait, "wait", _wait_pair), (self.wait_counters, "wait_counters", _counter_pair)
        ):
            values = flat.get_values()
            if len(values) % 2:
                raise VerifyException(f"#vdir.sched {key} holds pairs; got {len(values)} numbers")
            if key == "wait" and len(set(values[::2])) != len(values) // 2:
                raise VerifyException("#vdir.sched wait names a bit twice")
            for a, b in _pairs(values):
                if (message := pair_check(a, b)) is not None:
                    raise VerifyException(message)
        signal, release = self.signal_bits, self.released_counters
        if any(v < 0 for v in signal) or len(set(signal)) != len(signal):
            raise VerifyException("#vdir.sched signal must list distinct non-negative bits")
        if any(v < 0 for v in release):
            raise VerifyException("#vdir.sched release must list non-negative counters")
        if any(not g or min(g) < 0 for g in self.after_groups):
            raise VerifyException("#vdir.sched after groups name at least one micro-op id each")


# --------------------------------------------------------------------------
# Per program: #vdir.layout
# --------------------------------------------------------------------------


def _roles_parser(parser: AttrParser, key: str) -> list[str]:
    def role() -> str:
        start = parser.pos
        word = parser.parse_identifier("a buffer role")
        if word not in BUFFER_ROLES:
            parser.raise_error(
                f"unknown buffer role '{word}' (known: {', '.join(BUFFER_ROLES)})", start, parser.pos
            )
        return word

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, role)


_LAYOUT_PARSERS: dict[str, Callable[[AttrParser, str], object]] = {
    "num_sms": _int_parser(_positive("num_sms")),
    "smem_bytes": _int_parser(_non_negative("smem_bytes")),
    "counter_counts": _int_list_parser(_positive("a counter's count"), distinct=False),
    "buffer_roles": _roles_parser,
}


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """``#vdir.layout<...>``: the facts the scheduling passes record for a whole program.

    ``#vdir.layout<num_sms = 2, smem_bytes = 65536, counter_counts = [2, 1],
    buffer_roles = [in, in, out]>``

    * ``num_sms``: the SMs the program is placed on (``vdir-place``);
    * ``buffer_roles``: per argument, ``in`` (read before the program writes
      it), ``out`` (written), ``inout`` or ``scratch`` (``vdir-place``);
    * ``smem_bytes``: the shared memory each SM's tiles use (``vdir-alloc-smem``);
    * ``counter_counts``: per global counter, the releases it receives per
      launch (``vdir-layout-deps``); their number is the number of counters.
    """

    name = "vdir.layout"

    num_sms: IntAttr
    smem_bytes: IntAttr | NoneAttr
    counter_counts: DenseArrayBase[I64]
    buffer_roles: ArrayAttr[StringAttr]

    def __init__(
        self,
        num_sms: int,
        buffer_roles: Sequence[str],
        smem_bytes: int | None = None,
        counter_counts: Sequence[int] = (),
    ):
        super().__init__(
            IntAttr(num_sms), _opt_int(smem_bytes), _array(counter_counts),
            ArrayAttr([StringAttr(r) for r in buffer_roles]),
        )

    def present_facts(self) -> list[str]:
        """The names of the facts this attribute holds."""
        present = ["num_sms", "buffer_roles"]
        if isinstance(self.smem_bytes, IntAttr):
            present.append("smem_bytes")
        if self.counts:
            present.append("counter_counts")
        return present

    @property
    def counts(self) -> list[int]:
        """Per counter, the releases it receives per launch."""
        return list(self.counter_counts.get_values())

    @property
    def roles(self) -> list[str]:
        return [r.data for r in self.buffer_roles.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        fields = _parse_fields(parser, "vdir.layout", _LAYOUT_PARSERS)
        missing = [k for k in ("num_sms", "buffer_roles") if k not in fields]
        if missing:
            parser.raise_error(f"#vdir.layout needs {' and '.join(missing)}", start, parser.pos)
        return (
            IntAttr(fields["num_sms"]),  # type: ignore[arg-type]
            _opt_int(fields.get("smem_bytes")),  # type: ignore[arg-type]
            _array(fields.get("counter_counts", ())),  # type: ignore[arg-type]
            ArrayAttr([StringAttr(r) for r in fields["buffer_roles"]]),  # type: ignore[union-attr]
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<num_sms = {self.num_sms.data}")
        if isinstance(self.smem_bytes, IntAttr):
            printer.print_string(f", smem_bytes = {self.smem_bytes.data}")
        if self.counts:
            printer.print_string(", counter_counts = ")
            _print_int_list(printer, self.counts)
        printer.print_string(f", buffer_roles = [{', '.join(self.roles)}]>")

    def verify(self) -> None:
        """The checks of the parser, for attributes built from Python."""
        if self.num_sms.data <= 0:
            raise VerifyException(f"num_sms must be positive, got {self.num_sms.data}")
        if isinstance(self.smem_bytes, IntAttr) and self.smem_bytes.data < 0:
            raise VerifyException(f"smem_bytes must be non-negative, got {self.smem_bytes.data}")
        if any(c <= 0 for c in self.counts):
            raise VerifyException("every counter's count must be positive")
        for role in self.roles:
            if role not in BUFFER_ROLES:
                raise VerifyException(f"unknown buffer role '{role}' (known: {', '.join(BUFFER_ROLES)})")
