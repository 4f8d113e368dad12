"""Option sets: frozen, validated dataclasses built from what a user wrote.

vdir has two: the lowering options (:class:`vdir.lowering.options.LoweringOptions`,
how the kernel is built) and the pipeline options
(:class:`vdir.transforms.pipeline_options.PipelineOptions`, how the passes
compile a program). Each is an :class:`OptionSet`: its fields own the
options' names, types and defaults, its ``__post_init__`` their checks, and
this base owns how one is built from

* a mapping, ``{"load_path": "lsu", "split_copies": 4}`` (:meth:`OptionSet.from_mapping`);
* a string of ``key=value`` pairs, ``"load_path=lsu split_copies=4"`` (:meth:`OptionSet.parse`);
* either of those, the options themselves or None (:meth:`OptionSet.coerce`).

Names may be spelled with ``-`` or ``_``. Values may be given typed or as
text (``"4"``, ``"true"``/``"false"``/``"1"``/``"0"`` for the flags); an
unknown name, a name given twice or a value of the wrong type is an
:class:`OptionError` (a ``ValueError``) that names it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from vdir.diagnostics import VdirError


class OptionError(VdirError, ValueError):
    """An option is unknown or has a bad value; the message says which and why."""


#: field annotations (strings: option modules use postponed evaluation) -> the Python type, and
#: whether None is allowed
_FIELD_TYPES: dict[str, tuple[type, bool]] = {
    "int": (int, False), "str": (str, False), "bool": (bool, False), "int | None": (int, True),
    "bool | None": (bool, True),
}

#: what a value of each type is called in a message
_TYPE_WORDS = {bool: "true or false (or 1 or 0)", int: "an integer", str: "a string"}


@dataclass(frozen=True)
class OptionSet:
    """Base of vdir's option dataclasses: building one from a mapping or text, overriding, reporting.

    A subclass is a frozen dataclass whose fields are its options (typed
    ``int``, ``str``, ``bool``, ``int | None`` or ``bool | None``; None, written ``none``, leaves the
    choice to something else, such as the target), and sets :attr:`KIND` (the
    word its messages use) and :attr:`ERROR` (the exception they raise).
    """

    #: what the messages call these options ("lowering", "pipeline")
    KIND: ClassVar[str] = "vdir"
    #: the exception a bad option raises
    ERROR: ClassVar[type[OptionError]] = OptionError

    # -- checks a subclass's __post_init__ runs ------------------------------
    def check_types(self) -> None:
        """Refuse a field whose value is not of its declared type (``bool`` is not an integer here)."""
        for f in dataclasses.fields(self):
            kind, optional = _FIELD_TYPES[str(f.type)]
            value = getattr(self, f.name)
            if optional and value is None:
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise self.ERROR(f"{self.KIND} option {f.name} must be {_TYPE_WORDS[kind]}, got {value!r}")

    def check_range(self, name: str, low: int, high: int | None, note: str = "") -> None:
        """Refuse option ``name`` outside ``low .. high`` (None: no upper bound); ``note`` ends the bounds."""
        value = getattr(self, name)
        if value < low or (high is not None and value > high):
            bounds = f"in {low}..{high}" if high is not None else f"at least {low}"
            raise self.ERROR(f"{self.KIND} option {name} must be {bounds}{note}, got {value}")

    # -- construction --------------------------------------------------------
    @classmethod
    def names(cls) -> list[str]:
        """Every option name, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> Self:
        """The defaults overridden by ``values`` (names with ``-`` or ``_``; typed or text values)."""
        return cls().with_overrides(values)

    @classmethod
    def parse(cls, text: str) -> Self:
        """Options from ``"key=value key=value"`` (spaces or commas between the pairs)."""
        return cls().with_text(text)

    def with_text(self, text: str) -> Self:
        """These options with those ``text`` names (:meth:`parse`'s form) changed: a variant of a set."""
        pairs: dict[str, str] = {}
        for item in text.replace(",", " ").split():
            key, eq, value = item.partition("=")
            if not eq or not key or not value:
                raise self.ERROR(f"{self.KIND} options are key=value pairs, got {item!r} in {text!r}")
            if key in pairs:  # (other spellings of one name: with_overrides)
                raise self.ERROR(f"{self.KIND} option '{key}' is given twice in {text!r}")
            pairs[key] = value
        return self.with_overrides(pairs)

    @classmethod
    def coerce(cls, value: Self | Mapping[str, Any] | str | None) -> Self:
        """``value`` as options: options as they are, a mapping or a string parsed, None the defaults."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping):
            return cls.from_mapping(value)
        raise cls.ERROR(
            f"{cls.KIND} options must be {cls.__name__}, a dict or a 'key=value ...' string, "
            f"got {type(value).__name__}"
        )

    def with_overrides(self, values: Mapping[str, Any] | None = None, **more: Any) -> Self:
        """These options with some changed; unknown names are rejected, listing the known ones."""
        changes: dict[str, Any] = {}
        types = {f.name: str(f.type) for f in dataclasses.fields(self)}  # annotations are text here
        for key, value in [*(values or {}).items(), *more.items()]:
            name = str(key).replace("-", "_")
            if name not in types:
                raise self.ERROR(f"unknown {self.KIND} option '{key}' (known: {', '.join(types)})")
            if name in changes:  # 'load-ring' and 'load_ring', or one name in both arguments
                raise self.ERROR(f"{self.KIND} option '{key}' is given twice")
            changes[name] = self._converted(name, value, types[name])
        return dataclasses.replace(self, **changes)

    def changed(self) -> dict[str, Any]:
        """The options that differ from the defaults, by name (for reports and specs)."""
        default = type(self)()
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) != getattr(default, n)}

    def _converted(self, name: str, value: Any, annotation: str) -> Any:
        """``value`` as option ``name``'s type where it is written as text (or a 0/1 flag); else as it is."""
        kind, optional = _FIELD_TYPES[annotation]
        if optional and isinstance(value, str) and value.lower() == "none":
            return None
        if kind is bool:
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
                return value.lower() in ("true", "1")
            if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
                return bool(value)
        elif kind is int and isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                raise self.ERROR(f"{self.KIND} option {name} must be an integer, got {value!r}") from None
        return value
