"""``bench/ncu_sources.py``: Nsight Compute's source page read and summarised, on hand-made pages whose
sums are known, and its refusals of what is not such a page."""

from __future__ import annotations

import pytest

from bench import ncu_sources as ncu

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_wait","stall_barrier (Not Issued)"')


def _page(*rows: str) -> list[str]:
    return ['"Kernel Name","vdir_persistent",', HEADER, *rows]


PAGE = _page(
    '"0x7f0000001000","      LDC R1, c[0x0][0x28]","1","1","1","0","1","0"',
    '"0x7f0000001010","      BAR.SYNC.DEFER_BLOCKING 0x1, 0x100","2","2","8","0","2","0"',
    '"0x7f0000001020","      LDS R8, [UR4+0x8]","30","30","8","28","2","28"',
    '"0x7f0000001030","@P0   LDS.128 R4, [R8]","6","6","1","0","6","0"',
    '"0x7f0000001040","      EXIT","1","1","0","0","1","0"',
)


def test_the_page_is_read_with_offsets_from_the_first_instruction():
    instrs = ncu.read_source_page(PAGE)
    assert [i.offset for i in instrs] == [0, 0x10, 0x20, 0x30, 0x40]
    assert [i.executed for i in instrs] == [1, 8, 8, 1, 0]
    assert instrs[2].stalls == {"barrier": 28, "wait": 2}  # the "(Not Issued)" twin left out
    assert [i.opcode for i in instrs] == ["LDC", "BAR", "LDS", "LDS", "EXIT"]


def test_the_sums_by_reason_and_by_executions():
    instrs = ncu.read_source_page(PAGE)
    assert ncu.by_reason(instrs) == {"barrier": 28, "wait": 12}
    groups = ncu.by_executions(instrs)
    assert sorted(groups) == [1, 8] and [i.offset for i in groups[8]] == [0x10, 0x20]
    lines = ncu.report(instrs, top=1, classes=2)
    assert lines[0] == "5 instructions, 40 samples"
    assert lines[1] == "samples by stall reason: barrier 70.0%, wait 30.0%"
    assert "8x:     2 instructions,  80.0% of the samples; BAR 1, LDS 1" in lines[3]
    assert lines[-1].startswith("     0x20     30 (75.0%) x8") and lines[-1].endswith("barrier 28, wait 2")


def test_main_keeps_a_range_of_offsets(tmp_path, capsys):
    f = tmp_path / "page.csv"
    f.write_text("\n".join(PAGE))
    assert ncu.main([str(f), "--start", "0x10", "--end", "0x30", "--top", "1"]) == 0
    assert capsys.readouterr().out.startswith("2 instructions, 32 samples\n")


@pytest.mark.parametrize("lines, message", [
    (["not,a,page"], "no header row"),
    (['"Address","Source"', '"0x10","NOP"'], "lacks the column"),
    (_page('"zz","NOP","1","1","1","0","1","0"'), "line 3: no hexadecimal address"),
    (_page("", '"zz","NOP","1","1","1","0","1","0"'), "line 4: no hexadecimal address"),  # a blank line counted
])
def test_what_is_not_a_source_page_is_refused(lines, message):
    with pytest.raises(ncu.SourcePageError, match=message):
        ncu.read_source_page(lines)


def test_main_reports_a_bad_file_in_one_line(tmp_path, capsys):
    f = tmp_path / "x.csv"
    f.write_text("hello\n")
    assert ncu.main([str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ncu_sources: {f}: no header row") and err.count("\n") == 1
    assert ncu.main([str(tmp_path / "absent.csv")]) == 1
