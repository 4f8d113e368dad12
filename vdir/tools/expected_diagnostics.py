"""MLIR's ``--verify-diagnostics`` for ``vdir-opt``: check a run's diagnostics against the input's expectations.

An input states the diagnostics it expects in comments, as for mlir-opt::

    %t = vdir.load ...  // expected-error {{column offset 4 is not 16-byte aligned}}
    // expected-error @+1 {{region rows [12, 20) are out of the buffer's bounds}}
    // expected-warning @below {{...}}

A directive is ``expected-<kind>`` (``error``, ``warning``, ``note`` or
``remark``), an optional line designator (none: its own line; ``@+N`` /
``@-N``: N lines below / above; ``@below`` / ``@above``: the nearest line
below / above that holds no directive; ``@unknown``: a diagnostic with no
line), and the expected text in ``{{...}}``. A diagnostic the run produced
(vdir's are one line, ``file:line:col: kind: message``) matches an
expectation of its kind on its line whose text is part of its message. Each
diagnostic without a match, and each expectation without one, is one line of
the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vdir.diagnostics import UserError

#: The kinds of diagnostic a directive can expect, as they appear in a diagnostic line.
DIAGNOSTIC_KINDS = ("error", "warning", "note", "remark")

_KIND = "|".join(DIAGNOSTIC_KINDS)
#: The start of a directive; a line holding one must hold a whole directive.
_DIRECTIVE_START = re.compile(rf"expected-({_KIND})\b(?!-)")
#: A whole directive: kind, optional designator, and the text between the first ``{{`` and the last ``}}``.
_DIRECTIVE = re.compile(rf"expected-(?P<kind>{_KIND})\s*(?:@(?P<at>[+-]\d+|above|below|unknown))?\s*\{{\{{(?P<text>.*)\}}\}}")
#: A located diagnostic line: ``file:line:col: kind: message``.
_LOCATED = re.compile(rf"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<kind>{_KIND}): (?P<message>.*)$", re.DOTALL)
#: A diagnostic located in a file only, or nowhere: ``[file: ]kind: message``.
_UNLOCATED = re.compile(rf"^(?:(?P<file>[^:]*): )?(?P<kind>{_KIND}): (?P<message>.*)$", re.DOTALL)


@dataclass(frozen=True)
class ProducedDiagnostic:
    """One diagnostic of the run: its kind, message and line (``None`` where it has none)."""

    kind: str
    message: str
    line: int | None
    location: str

    @staticmethod
    def parse(text: str, file_name: str) -> ProducedDiagnostic:
        """Read ``file:line:col: kind: message`` (or a less located form); an unrecognised text is an error."""
        located = _LOCATED.match(text)
        if located:
            location = f"{located['file']}:{located['line']}:{located['col']}"
            return ProducedDiagnostic(located["kind"], located["message"], int(located["line"]), location)
        unlocated = _UNLOCATED.match(text)
        if unlocated:
            return ProducedDiagnostic(unlocated["kind"], unlocated["message"], None, unlocated["file"] or file_name)
        return ProducedDiagnostic("error", text, None, file_name)


@dataclass
class ExpectedDiagnostic:
    """One ``expected-<kind>`` directive: what it expects, on which line, and where it is written."""

    kind: str
    text: str
    line: int | None
    location: str
    matched: bool = False

    def accepts(self, produced: ProducedDiagnostic) -> bool:
        """Whether ``produced`` is this expectation's diagnostic (not yet matched, same kind and line, text in it)."""
        return (
            not self.matched
            and self.kind == produced.kind
            and self.line == produced.line
            and self.text in produced.message
        )


def expected_diagnostics(text: str, file_name: str, line_offset: int = 0) -> list[ExpectedDiagnostic]:
    """The directives in ``text`` (a chunk starting after ``line_offset`` lines of its file), in order.

    Raises a located :class:`UserError` for a malformed directive, or a
    designator that points at no line of the chunk.
    """
    lines = text.split("\n")
    has_directive = [_DIRECTIVE_START.search(line) is not None for line in lines]
    expected: list[ExpectedDiagnostic] = []
    for index, line in enumerate(lines):
        start = _DIRECTIVE_START.search(line)
        if start is None:
            continue
        location = f"{file_name}:{index + 1 + line_offset}:{start.start() + 1}"
        directive = _DIRECTIVE.match(line, start.start())
        if directive is None:
            raise UserError(f"{location}: error: malformed expected-{start[1]} directive: want {{{{text}}}}")
        target = _target_line(directive["at"], index, has_directive)
        if target is not None and not 0 <= target < len(lines):
            raise UserError(f"{location}: error: expected-{start[1]} @{directive['at']} points at no line of the input")
        line_number = None if target is None else target + 1 + line_offset
        expected.append(ExpectedDiagnostic(directive["kind"], directive["text"], line_number, location))
    return expected


def _target_line(designator: str | None, index: int, has_directive: list[bool]) -> int | None:
    """The 0-based line a directive on line ``index`` refers to (``None`` for ``@unknown``; -1 if none)."""
    if designator is None:
        return index
    if designator == "unknown":
        return None
    if designator == "below":
        return next((i for i in range(index + 1, len(has_directive)) if not has_directive[i]), -1)
    if designator == "above":
        return next((i for i in range(index - 1, -1, -1) if not has_directive[i]), -1)
    return index + int(designator)


def mismatches(expected: list[ExpectedDiagnostic], produced: list[ProducedDiagnostic]) -> list[str]:
    """Match ``produced`` against ``expected``; one report line per unexpected diagnostic or unmet expectation.

    Marks the matched expectations. An empty list means the run produced
    exactly the expected diagnostics.
    """
    report: list[str] = []
    for diagnostic in produced:
        match = next((e for e in expected if e.accepts(diagnostic)), None)
        if match is None:
            report.append(f"{diagnostic.location}: error: unexpected {diagnostic.kind}: {diagnostic.message}")
        else:
            match.matched = True
    for expectation in expected:
        if not expectation.matched:
            report.append(
                f'{expectation.location}: error: expected {expectation.kind} "{expectation.text}" was not produced'
            )
    return report
