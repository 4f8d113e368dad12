"""``bench/trace_decode.py`` on the CPU: the simulator's clock (``--sim POS``) and a trace read back.

The tool's tables (stages, hand-offs, releasing stores, the critical path)
are otherwise printed only from a GPU trace. Here the tiny step is modelled
at one position: the tables must list that layer's stages and hand-offs, the
path must add up, a position the step does not cover and a model that runs
out of memory are each said in one line, and the modelled trace written with ``--json`` must read back (``--from-json``)
to the same tables. ``--target`` names the target the step is compiled for.
"""

from __future__ import annotations

import re

import pytest

from bench import trace_decode
from vdir.target import DEFAULT_TARGET

TINY = ["--config", "tiny", "--layers", "1", "--handoffs", "--stores", "--path-layer", "1"]


def _modelled(capsys, *extra: str) -> str:
    assert trace_decode.main([*TINY, "--sim", "8", *extra]) == 0
    return capsys.readouterr().out


def test_the_modelled_step_lists_the_layers_stages_hand_offs_and_path(capsys):
    out = _modelled(capsys)
    stages = {line.split()[1] for line in out.splitlines() if re.match(r"\s+1 \S+\s+[\d.]+\s+[\d.]+\s+\d+", line)}
    assert {"xn_a", "qp", "s", "o", "gate", "->hs"} <= stages, stages
    assert re.search(r"^\s+1 x\s+counter\s+\d+", out, re.M)  # the residual row handed to layer 1's norm
    assert "stores that release a counter" in out
    path = out.split("critical path", 1)[1].split("on the path:", 1)[0].splitlines()[1:]
    spans = [tuple(map(float, line.split()[:2])) for line in path]
    assert len(spans) > 10 and {line.split()[4] for line in path} >= {"counter", "bits"}
    totals = re.search(r"on the path: ([\d.]+) us running, ([\d.]+) us .*?bits wait, ([\d.]+) us .*?counter wait, "
                       r"([\d.]+) us .*?queue wait", out)
    assert totals
    # running and waiting make up the path's span, from its first micro-op's start to its last one's end
    # (each of the four printed to 0.1 µs)
    span = max(end for _, end in spans) - min(start for start, _ in spans)
    assert sum(map(float, totals.groups())) == pytest.approx(span, abs=0.25)


def test_the_step_is_compiled_for_the_target_named(monkeypatch, capsys):
    """On the clock the default target's step, unless ``--target`` names another (a GPU run takes the GPU's)."""
    targets = []
    modelled_trace = trace_decode.modelled_trace

    def spy(cfg, program, pos):
        targets.append(program.target)
        return modelled_trace(cfg, program, pos)

    monkeypatch.setattr(trace_decode, "modelled_trace", spy)
    _modelled(capsys)
    _modelled(capsys, "--target", "h100")
    assert targets == [DEFAULT_TARGET, "h100"] and DEFAULT_TARGET != "h100"


def test_a_position_the_step_does_not_cover_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        trace_decode.main([*TINY, "--sim", "64"])
    assert e.value.code == 2
    assert "--sim 64: the step of tiny covers positions 0 to 63" in capsys.readouterr().err


def test_running_out_of_memory_in_the_model_is_said_in_one_line(monkeypatch):
    def out_of_memory(*_args):
        raise MemoryError

    monkeypatch.setattr(trace_decode, "modelled_trace", out_of_memory)
    with pytest.raises(SystemExit, match="memory ran out modelling the tiny step on the simulator"):
        trace_decode.main([*TINY, "--sim", "8"])


def _rows(out: str) -> list[tuple[list[str], list[float]]]:
    """Each line of ``out`` as its words and its numbers (the numbers apart, to compare them to a tolerance)."""
    rows = []
    for line in out.splitlines():
        words = line.split()
        numbers = [float(w) for w in words if re.fullmatch(r"-?\d+\.\d+", w)]
        rows.append(([w for w in words if not re.fullmatch(r"-?\d+\.\d+", w)], numbers))
    return rows


def _by_stage(rows: list[tuple[list[str], list[float]]]) -> dict[str, float]:
    """The path's running time by stage (the lines after its totals), by stage name."""
    return {words[0]: numbers[0] for words, numbers in rows}


def test_the_modelled_trace_reads_back_to_the_same_tables(tmp_path, capsys):
    """The same lines, stages, counts and path; the times to the export grid's rounding (0.1 µs as printed)."""
    path = tmp_path / "tiny.json"
    modelled = _rows(_modelled(capsys, "--json", str(path)))
    assert trace_decode.main([*TINY, "--from-json", str(path)]) == 0
    read_back = _rows(capsys.readouterr().out)
    # the tables and the path in order; the path's stages after its totals are listed by time, so stages
    # within the rounding of each other may swap places: compared by name
    end = next(i for i, (words, _) in enumerate(modelled) if words[:3] == ["on", "the", "path:"]) + 1
    assert [words for words, _ in read_back[:end]] == [words for words, _ in modelled[:end]]
    for (_, got), (_, want) in zip(read_back[:end], modelled[:end], strict=True):
        assert got == pytest.approx(want, abs=0.11)
    got, want = _by_stage(read_back[end:]), _by_stage(modelled[end:])
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=0.11) for k in want)
