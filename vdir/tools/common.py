"""Parsing and verification with located diagnostics, shared by the tools.

xDSL's parser only keeps an operation's location when the text spells one
out; :class:`LocatingParser` records where each operation starts so that
verifier and pass errors can point at the line. :func:`verify_module` runs
every operation's verifier and reports the first failure as a one-line,
located :class:`~vdir.diagnostics.UserError`.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import math
import os
import re
import stat
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, VerificationContext
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from vdir.diagnostics import PassFailure, UserError, VdirError, located, location_of
from vdir.limits import DEFAULT_LIMITS, MAX_DENSE_ELEMENTS, Limits
from vdir.limits import OPTIONS as LIMIT_OPTIONS

#: The name of the operation whose text starts at a position (after its results).
_OP_NAME = re.compile(r'(?:%[^=]*=\s*)?"?([A-Za-z_][\w$.]*)')

#: An integer literal as the text writes it (decimal or hexadecimal, perhaps negative).
_NUMBER = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|[0-9]+)")

#: The deepest nesting of parentheses, brackets and braces an input may have.
#: xDSL parses nested constructs by recursion, so a deeper input would exhaust
#: Python's stack; real programs nest a few levels (a program, its repeats, an
#: affine expression), and every pass still has stack to spare at this depth.
MAX_NESTING = 64

#: The tokens that open and close a nesting level.
_OPENING = frozenset({MLIRTokenKind.L_PAREN, MLIRTokenKind.L_SQUARE, MLIRTokenKind.L_BRACE})
_CLOSING = frozenset({MLIRTokenKind.R_PAREN, MLIRTokenKind.R_SQUARE, MLIRTokenKind.R_BRACE})

#: The input file argument that means standard input (as for mlir-opt), for vdir-opt and vdir-run.
STDIN_ARG = "-"
#: The file name diagnostics use for standard input (as mlir-opt does).
STDIN_NAME = "<stdin>"


class LinearLexer(MLIRLexer):
    """xDSL's MLIR lexer, with a string-literal pattern that runs in linear time, and a nesting limit.

    xDSL's pattern nests a repeated character class inside a repetition, so an
    unterminated string backtracks exponentially in its length (a 40-character
    one does not finish). This pattern accepts the same literals -- runs of
    plain characters separated by the escapes ``\\n \\t \\\\ \\"`` and two hex
    digits -- but each character can be matched only one way.

    The lexer also counts the open ``(``, ``[`` and ``{`` and refuses a token
    that opens more than :data:`MAX_NESTING` levels, before xDSL's recursive
    parser could run out of stack. The parser sometimes backs up and lexes a
    stretch again; each token is counted the first time only.
    """

    _unescaped_characters_regex = re.compile(r'"[^"\\\n\v\f]*(?:\\(?:["nt\\]|[0-9A-Fa-f]{2})[^"\\\n\v\f]*)*"')

    def __init__(self, input: Input):
        super().__init__(input)
        self.depth = 0
        self.counted_to = 0  # the end of the last token counted

    def lex(self) -> MLIRToken:
        """The next token; one that opens a level beyond :data:`MAX_NESTING` is a ``ParseError``."""
        token = super().lex()
        if token.span.start >= self.counted_to:
            self.counted_to = token.span.end
            if token.kind in _OPENING:
                self.depth += 1
                if self.depth > MAX_NESTING:
                    raise ParseError(token.span, f"the input nests deeper than {MAX_NESTING} levels of (), [] and {{}}")
            elif token.kind in _CLOSING:
                self.depth = max(self.depth - 1, 0)
        return token

    def _lex_prefixed_ident(self, start_pos: int) -> MLIRToken:
        """A ``%``, ``^``, ``!`` or ``#`` name; one with no name after the sigil (``%ñ``) is an error naming
        the sigil (xDSL's message prints ``{first_char}`` unformatted)."""
        try:
            return super()._lex_prefixed_ident(start_pos)
        except ParseError as e:
            sigil = self.input.content[start_pos]
            raise ParseError(e.span, f"expected a name after '{sigil}' (letters, digits, $ . _ -)") from None

    def _lex_string_literal(self, start_pos: int) -> MLIRToken:
        """A string literal; one not closed on its line is an error at its opening quote."""
        if self._unescaped_characters_regex.match(self.input.content, start_pos) is None:
            span = Span(start_pos, start_pos + 1, self.input)
            raise ParseError(span, "the string is not closed before the end of its line (or has a bad escape)")
        return super()._lex_string_literal(start_pos)


def _check_signed(parser: Parser, value: int, type: Attribute, start: int) -> None:
    """Refuse, at the literal, an integer that does not fit its signless integer (or ``index``)
    type as a signed number: every integer vdir reads (repeat bounds, flow ids, offsets,
    parameters) is signed, and xDSL keeps one in [2^(n-1), 2^n) as its negative two's complement."""
    if isinstance(type, IndexType):
        width = 64
    elif isinstance(type, IntegerType) and type.signedness.data == Signedness.SIGNLESS and type.bitwidth > 1:
        width = type.bitwidth
    else:
        return
    if not -(1 << (width - 1)) <= value < 1 << (width - 1):
        written = _NUMBER.match(parser.lexer.input.content, start)
        shown = written.group(0) if written else str(value)
        parser.raise_error(f"integer {shown} does not fit in {type} (a signed {width}-bit integer)", start, parser.pos)


class LocatingParser(Parser):
    """A parser that stamps each operation with the file/line/column it starts at.

    It also keeps every parse failure located: a value must be defined before
    it is used (and used with its type), and a type that an op's declarative
    format rejects while parsing is reported at that op.
    """

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, "", name)  # xDSL's own lexer never sees the text: it reads it through LinearLexer
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        self._file_name = name
        self._line_offset = line_offset
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self._last_number: int | float | None = None  # the last number literal read, as written
        self._last_number_type: Attribute | None = None  # and the type it was given

    def _line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1 + self._line_offset, offset - self._line_starts[line] + 1

    def parse_optional_operation(self) -> Operation | None:
        start = self._current_token.span.start
        try:
            op = super().parse_optional_operation()
        except VerifyException as e:
            # A declarative assembly format checks the types it parsed against
            # the op's constraints while parsing; locate that failure at the op.
            name = _OP_NAME.match(self.lexer.input.content, start)
            prefix = f"{name.group(1)}: " if name else ""
            self.raise_error(prefix + one_line(str(e)), start, self._current_token.span.start)
        if op is not None and isinstance(op.location, UnknownLoc):
            line, col = self._line_col(start)
            op.location = FileLineColLoc(StringAttr(self._file_name), IntAttr(line), IntAttr(col))
        return op

    def _parse_block(self) -> Block:
        """A block of a region; where a region's next token starts neither an operation nor a block,
        say what was expected (xDSL's message is just " in block definition")."""
        token = self._current_token
        if token.kind is MLIRTokenKind.EOF:
            self.raise_error("the input ends inside a region: expected '}'", token.span)
        if token.kind is not MLIRTokenKind.CARET_IDENT:
            self.raise_error("expected an operation, a block label (^bb0) or '}' closing the region", token.span)
        return super()._parse_block()

    def parse_optional_number(self, *, allow_boolean: bool = False) -> int | float | None:
        """A number literal, remembered (as written) for :meth:`parse_optional_builtin_int_or_float_attr`."""
        self._last_number = value = super().parse_optional_number(allow_boolean=allow_boolean)
        return value

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        """A number attribute, as the text writes it, or a located error.

        A number too large for its float type (``1e300 : f32``) is refused, and
        so is an integer outside its signless type's signed range, which xDSL
        would wrap around (``18446744073709551615 : i64`` read as ``-1``).
        """
        start = self._current_token.span.start
        self._last_number = None
        try:
            attr = super().parse_optional_builtin_int_or_float_attr()
        except OverflowError:
            self.raise_error("the number is outside the range of its float type", start, self._current_token.span.start)
        except VerifyException:  # beyond even the unsigned range of its type: xDSL refuses it, unlocated
            if isinstance(self._last_number, int) and self._last_number_type is not None:
                _check_signed(self, self._last_number, self._last_number_type, start)
            raise
        if isinstance(attr, IntegerAttr) and isinstance(self._last_number, int):
            _check_signed(self, self._last_number, attr.type, start)
        return attr

    def _parse_attribute_type(self) -> Attribute:
        """The type after a number attribute's ``:``, remembered for the check above."""
        self._last_number_type = type = super()._parse_attribute_type()
        return type

    def _parse_typed_integer(
        self, type: IntegerType, allow_boolean: bool = True, allow_negative: bool = True, context_msg: str = ""
    ) -> int:
        """An element of a dense array (``array<i64: ...>``), within its signless type's signed range."""
        start = self._current_token.span.start
        value = super()._parse_typed_integer(type, allow_boolean, allow_negative, context_msg)
        _check_signed(self, value, type, start)
        return value

    def _parse_dense_literal_type(self):
        """A dense attribute's type, refused where it holds more than :data:`MAX_DENSE_ELEMENTS` elements:
        xDSL expands a splat (``dense<1> : tensor<30000000xi32>``) into one Python value per element,
        which takes minutes and gigabytes before anything could say the attribute is wrong."""
        start = self._current_token.span.start
        type = super()._parse_dense_literal_type()
        elements = math.prod(type.get_shape())
        if elements > MAX_DENSE_ELEMENTS:
            self.raise_error(f"a dense attribute of {elements} elements: at most {MAX_DENSE_ELEMENTS} are read",
                             start, self._current_token.span.start)
        return type

    def parse_affine_map(self) -> AffineMap:
        """An affine map; xDSL's folding of a constant division by zero, and its
        refusal of a non-constant divisor, become located errors."""
        start = self._current_token.span.start
        try:
            return super().parse_affine_map()
        except ZeroDivisionError:
            self.raise_error("the affine map divides by zero", start, self._current_token.span.start)
        except NotImplementedError as e:
            self.raise_error(f"the affine map is not supported: {e}", start, self._current_token.span.start)

    def resolve_operand(self, operand: UnresolvedOperand, type: Attribute) -> SSAValue:
        """Resolve a use of a value that the text has already defined.

        Program order is meaningful in a vdir program (memory dependencies
        follow it), so a value must be defined, in a visible scope, before it
        is used: a forward reference is an error here, at the use.
        """
        values = self.ssa_values.get(operand.operand_name)
        if values is None:
            self.raise_error(
                f"SSA value %{operand.operand_name} is not defined before this use", operand.span
            )
        if operand.index < len(values) and values[operand.index].type != type:
            self.raise_error(
                f"SSA value {operand.span.text} has type {values[operand.index].type}, "
                f"but is used as {type}",
                operand.span,
            )
        return super().resolve_operand(operand, type)

    def resolve_operands(
        self, args: Sequence[UnresolvedOperand], input_types: Sequence[Attribute], error_pos: int
    ) -> Sequence[SSAValue]:
        """Resolve a group of uses, reporting a count mismatch at its first operand
        (rather than after the whole op, where xDSL's formats report it)."""
        types = list(input_types)
        if len(args) != len(types):
            self.raise_error(
                f"{len(args)} operands but {len(types)} operand types",
                args[0].span if args else error_pos,
            )
        return super().resolve_operands(args, types, error_pos)


def default_context() -> Context:
    """A context with every xDSL dialect and the vdir dialects registered."""
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    register_vdir_dialects(ctx)
    return ctx


def register_vdir_dialects(ctx: Context) -> None:
    """Register the project's dialects (replacing none of xDSL's), unless its plugin already did."""
    from vdir.universe import DIALECTS

    for name, loader in DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, loader)


def one_line(message: str) -> str:
    """A verifier message on one line ("...does not verify: <reason>")."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    if not lines:
        return "verification failed"
    head, rest = lines[0], lines[1:]
    if rest:
        head = head.rstrip(":") + ": " + "; ".join(rest)
    return head


def exception_text(e: BaseException, empty: str = "no message") -> str:
    """``e``'s message on one line (:func:`one_line`), or ``empty`` where it has none."""
    return one_line(str(e)) if str(e).strip() else empty


def parse_error_message(e: ParseError) -> str:
    """``file:line:col: error: msg`` for an xDSL parse error."""
    loc = e.span.get_location()
    return f"{loc.file}:{loc.line}:{loc.col}: error: {e.msg}"


def parse_text(ctx: Context, text: str, name: str = "<input>", line_offset: int = 0) -> ModuleOp:
    """Parse ``text`` into a module; raise :class:`UserError` on bad input.

    A text with nothing but whitespace and comments is an empty module, as
    for mlir-opt.
    """
    if _is_blank(text):
        return ModuleOp([])
    parser: LocatingParser | None = None
    try:
        parser = LocatingParser(ctx, text, name, line_offset)
        return parser.parse_module()
    except ParseError as e:
        e.span = dataclasses.replace(e.span, line_offset=line_offset)
        raise UserError(parse_error_message(e)) from None
    except RecursionError:  # nesting that LinearLexer does not count (``tuple<tuple<...>>``)
        raise UserError(_parse_failure(parser, line_offset, "the input nests too deeply to parse")) from None
    except NotImplementedError as e:  # what xDSL reads but cannot hold (``array<i128: 1>``, ``f80`` elements)
        reason = exception_text(e, "xDSL cannot represent what is written here")
        raise UserError(_parse_failure(parser, line_offset, f"not supported: {reason}")) from None
    except MemoryError:
        raise UserError(_parse_failure(parser, line_offset, "too large to hold in memory")) from None


def _parse_failure(parser: LocatingParser | None, line_offset: int, reason: str) -> str:
    """The one-line message of a parse that failed outside xDSL's own errors, at the token reached."""
    assert parser is not None  # the parser's constructor reads nothing
    span = dataclasses.replace(parser._current_token.span, line_offset=line_offset)
    return parse_error_message(ParseError(span, reason))


def _is_blank(text: str) -> bool:
    """Whether ``text`` holds only whitespace and ``//`` comment lines."""
    return all(not line.strip() or line.lstrip().startswith("//") for line in text.splitlines())


def verify_module(module: ModuleOp) -> None:
    """Run every verifier; raise a located :class:`UserError` at the first failure.

    A module built in Python may nest deeper than the parser allows (see
    :data:`MAX_NESTING`); where that exhausts the stack (xDSL's walks and
    error printing recurse), the error is located at the op reached.
    """
    _check_unique_symbols(module)
    op: Operation = module
    try:
        for op in module.walk():
            _verify_op(op)
    except RecursionError:
        raise UserError(located("the module nests too deeply to verify", op)) from None


def _check_unique_symbols(module: ModuleOp) -> None:
    """Each top-level symbol is defined once; the second definition is the error's location (the module's
    own symbol-table check would report it at the module, which has no place in the file)."""
    first: dict[str, Operation] = {}
    for op in module.body.ops:
        name = op.properties.get("sym_name")
        if not isinstance(name, StringAttr):
            continue
        if name.data in first:
            where = location_of(first[name.data])
            also = f" (first defined at {where})" if where else ""
            raise UserError(located(f"symbol '{name.data}' is defined twice{also}", op))
        first[name.data] = op


def _verify_op(op: Operation) -> None:
    """Run ``op``'s own verifier; raise a located :class:`UserError` if it fails."""
    try:
        op.verify(verify_nested_ops=False)
    except DiagnosticException as e:  # a VerifyException (an OpVerifyException names its op) or a PassFailure
        at = getattr(e, "op", None) or op
        raise UserError(located(_failing_property(at) + one_line(str(e)), at)) from None


def _failing_property(op: Operation) -> str:
    """``"property 'upper' of vdir.repeat: "`` when one of ``op``'s properties breaks its declared constraint,
    else ``""``: xDSL's message (``Expected attribute i64 but got ui64``) does not say which property."""
    if not isinstance(op, IRDLOperation):
        return ""
    for name, prop in type(op).get_irdl_definition().properties.items():
        attr = op.properties.get(name)
        if attr is None:
            continue
        try:
            prop.constr.verify(attr, VerificationContext())
        except VerifyException:
            return f"property '{name}' of {op.name}: "
    return ""


def parse_module_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    """Read, parse and verify an IR file; raise :class:`UserError` on any problem."""
    with open_program_file(str(path)) as f:
        data = f.read()
    return parse_program_bytes(data, str(path), ctx)


def parse_program_bytes(data: bytes, name: str, ctx: Context | None = None) -> ModuleOp:
    """Decode, parse and verify a program's bytes read from ``name`` (its file, or ``<stdin>``); raise
    :class:`UserError` on any problem."""
    module = parse_text(ctx or default_context(), decode_program(data, name), name)
    verify_module(module)
    return module


def open_program_file(path: str) -> IO[bytes]:
    """The program file ``path``, open for reading its bytes. A folder or anything but a regular file is
    refused unread (:func:`check_program_path`), and a file that is missing or cannot be read is an error
    located at its path (:class:`UserError`)."""
    if not path:
        raise UserError("error: the program's file name is empty")
    check_program_path(path)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise UserError(f"{path}: error: no such file") from None
    except OSError as e:
        raise UserError(f"{path}: error: cannot read ({e.strerror})") from None


def decode_program(data: bytes, name: str) -> str:
    """A program's bytes as text, or the error located at ``name`` (its file, or ``<stdin>``) that they
    are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise not_utf8(name) from None


def not_utf8(name: str) -> UserError:
    """The error for a program read from ``name`` that is not UTF-8 text."""
    return UserError(f"{name}: error: the input is not UTF-8 text")


def failure_message(e: DiagnosticException, fallback: str, prefix: str = "") -> str:
    """``file:line:col: error: <prefix><reason>`` for a pass or verifier failure, at the best location known.

    A :class:`~vdir.diagnostics.PassFailure` names its op, or, for a fact
    with no op left to point at, carries the location as text; a verifier's
    error may name its op. ``fallback`` (the file name) is used when nothing
    in the failure is located.
    """
    message = prefix + one_line(str(e))
    if isinstance(e, PassFailure) and e.op is None and e.loc:
        return f"{e.loc}: error: {message}"
    return located(message, getattr(e, "op", None), fallback)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr (exit status 2, as argparse's)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def flag_error(flag: str, error: Exception) -> str:
    """``error``, caused by the command-line option ``flag``, as the one line a tool prints:
    ``error: --flag: what is wrong`` (a message that reads ``error: ...`` already is not prefixed twice)."""
    return f"error: {flag}: {str(error).removeprefix('error: ')}"


def check_output_path(path: str, option: str) -> None:
    """Say before the work, not after it, that ``option``'s file cannot be written (its folder is
    missing, or it is a folder, or the name is empty)."""
    if not path:
        raise UserError(f"error: {option}: the file name is empty")
    folder = Path(path).parent
    if not folder.is_dir():
        raise UserError(f"{path}: error: {option}: no such folder '{folder}' (create it first)")
    if Path(path).is_dir():
        raise UserError(f"{path}: error: {option}: is a folder; name the file to write")


def writes_over(path: str, other: "str | os.PathLike[str]") -> bool:
    """Whether writing ``path`` would replace the file ``other`` (the same path after links, or the same
    file by another name); a device such as ``/dev/null`` is written, never replaced."""
    if is_special_file(path):
        return False
    if os.path.realpath(path) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:  # either is missing (or cannot be looked at): not one file
        return False


def check_program_path(path: str) -> None:
    """Refuse, unread, a named program file that is a folder or not a regular file (a device such as
    ``/dev/zero``, a pipe: it may never end); a path that does not exist is left to the read."""
    if os.path.isdir(path):
        raise UserError(f"{path}: error: is a directory, not an IR file")
    if is_special_file(path):
        raise UserError(f"{path}: error: not a regular file; name the program's IR file (- reads standard input)")


def is_special_file(path: str) -> bool:
    """Whether ``path`` names something that exists and is not a regular file (a device, a pipe)."""
    return os.path.exists(path) and not os.path.isfile(path)


@contextlib.contextmanager
def replaced_on_success(path: str) -> Iterator[str]:
    """The path to write ``path``'s new content to: a temporary file beside it, renamed onto it
    (``os.replace``) when the block ends, removed if the block fails; so ``path`` holds either its
    old content or the whole new one, never part of it.

    A symbolic link's target is replaced (the link stays); a ``path`` that exists and is not a
    regular file (``/dev/null``, a pipe) has no content to keep and is written directly. The new
    file gets an existing file's permissions, else those ``open`` would give (the umask's).
    """
    if is_special_file(path):  # /dev/fd/N too, whose link realpath cannot follow
        yield path
        return
    target = os.path.realpath(path)
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.",
                                     suffix=".tmp")
    try:
        try:
            os.fchmod(fd, _new_file_mode(target))  # mkstemp's file is private
        finally:
            os.close(fd)
        yield temporary
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_whole(path: str, option: str, text: str) -> None:
    """Write ``text`` to ``option``'s file ``path`` whole or not at all (:func:`replaced_on_success`); a
    failure is a one-line :class:`UserError` naming the file and the option."""
    try:
        with replaced_on_success(path) as temporary, open(temporary, "w") as f:
            f.write(text)
    except OSError as e:
        raise UserError(f"{path}: error: {option}: cannot write it: {e.strerror or e}") from None


def _new_file_mode(path: str) -> int:
    """The permissions of the file at ``path``, or those a new file gets (0o666 less the umask)."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(os.stat(path).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The options that set the size limits (:mod:`vdir.limits`): ``--max-micro-ops``,
    ``--max-code-bytes``, ``--max-names-bytes``; read back by :func:`limits_from_args`.

    They are taken as text and checked there, so that a bad value is one
    line (argparse would print its usage too).
    """
    defaults = DEFAULT_LIMITS
    helps = {
        "max_micro_ops": "the most micro-ops a program may expand to (default: {:,})",
        "max_code_bytes": "the most bytes an encoded program's code may decompress to (default: {:,})",
        "max_names_bytes": "the most bytes an encoded program's micro-op names may decompress to (default: {:,})",
    }
    for name, option in LIMIT_OPTIONS.items():
        parser.add_argument(option, metavar="N", dest=name, help=helps[name].format(getattr(defaults, name)))


def ascii_integer(text: str) -> int:
    """``text`` as an integer written in ASCII (decimal, or 0x / 0o / 0b); ValueError otherwise.

    Python's ``int`` also reads other scripts' digits (``'٣'`` is 3), which a
    command line should not take silently.
    """
    if not text.isascii():
        raise ValueError(text)
    return int(text, 0)


def integer_option(text: str) -> int:
    """An argparse ``type`` for an integer option, read by :func:`ascii_integer`."""
    try:
        return ascii_integer(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None


def limits_from_args(args: argparse.Namespace) -> Limits:
    """The limits the options of :func:`add_limit_options` ask for (the defaults where not given);
    a value that is not a positive integer is a one-line :class:`UserError` naming the option."""
    given: dict[str, int | None] = {}
    for name, option in LIMIT_OPTIONS.items():
        text = getattr(args, name, None)
        if text is None:
            continue
        value = int(text) if re.fullmatch(r"[0-9]+", text) else 0  # plain digits: no '_', signs or other scripts
        if value < 1:
            raise UserError(f"error: {option}: expected a positive integer, got '{text}'")
        given[name] = value
    return DEFAULT_LIMITS.replace(**given)


def run_cli(build_parser: Callable[[], argparse.ArgumentParser], run: Callable[[argparse.Namespace], int],
            argv: Sequence[str] | None = None) -> int:
    """A console entry point's shell: parse, run, and turn every error into one line on stderr.

    vdir's own errors print as they are (prefixed ``error:`` unless located);
    anything else is reported as an internal error with what to report. Exit
    status: ``run``'s, 1 on an error, 130 on Ctrl-C.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        with warnings_as_lines():
            return run(args)
    except VdirError as e:  # UserError, RunError, ArgumentError, PlatformError, ModelError, ...
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        prefix = "" if ": error:" in message or message.startswith("error:") else "error: "
        print(f"{prefix}{message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except MemoryError as e:  # the buffers fit the device, but not this host (inputs, outputs, the simulator)
        print(f"error: not enough host memory for the program's arrays ({e})", file=sys.stderr)
        return 1
    except Exception as e:  # a bug: still one line, with what to report
        return report_internal_error(e)


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Within it, a warning (the library's, e.g. a cache it cannot write) prints as one line ``warning:
    ...`` on stderr, not as Python's file, line and source; the printer before is put back after."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ARG001  (the hook's)
        print(f"warning: {one_line(str(message))}", file=sys.stderr if file is None else file)

    saved, warnings.showwarning = warnings.showwarning, show
    try:
        yield
    finally:
        warnings.showwarning = saved


def report_internal_error(e: Exception) -> int:
    """Print ``e``, which no check of vdir's foresaw (a bug), as one line with what to report; returns the
    exit status, 1."""
    print(f"error: internal error: {type(e).__name__}: {exception_text(e)} (please report this)", file=sys.stderr)
    return 1
