"""LoweringOptions: defaults, the mapping / string / ``ptx{...}`` forms, checks, derived facts.

The options are the one owner of every lowering option's name, type and
default; these tests pin the forms users write them in and the one-line
errors for bad ones, and that the defaults lower exactly as no options do.
"""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.utils.arg_spec import parse_spec

from vdir.diagnostics import UserError, VdirError
from vdir.lowering import lower_to_ptx
from vdir.lowering.options import MAX_COMPUTE_WARPS, LoweringOptionError, LoweringOptions
from vdir.testing.assembler import family_program
from vdir.tools.targets import PTXTarget


def test_defaults_are_the_tuned_choice():
    opts = LoweringOptions()
    assert (opts.split_copies, opts.load_path, opts.fetch_depth) == (1, "bulk", 8)
    assert (opts.compute_warps, opts.tensor_copies, opts.release_fence, opts.trace) == (0, True, False, False)
    assert opts.tensor_copies_enabled and not opts.lsu_loads
    assert opts.changed() == {}


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LoweringOptions().split_copies = 4  # type: ignore[misc]


def test_mapping_string_and_overrides_agree():
    want = LoweringOptions(load_path="lsu", split_copies=4, tensor_copies=False)
    assert LoweringOptions.from_mapping({"load_path": "lsu", "split-copies": 4, "tensor_copies": 0}) == want
    assert LoweringOptions.parse("load-path=lsu split_copies=4, tensor_copies=false") == want
    assert LoweringOptions.coerce("load_path=lsu split_copies=4 tensor_copies=0") == want
    overridden = LoweringOptions().with_overrides(load_path="lsu").with_overrides({"split_copies": "4"})
    assert overridden == dataclasses.replace(want, tensor_copies=True)
    assert LoweringOptions.coerce(want) is want and LoweringOptions.coerce(None) == LoweringOptions()
    assert want.changed() == {"split_copies": 4, "load_path": "lsu", "tensor_copies": False}


def test_a_variant_changes_only_the_options_its_text_names():
    """``with_text``: a set of options with some changed, in ``parse``'s form; an option set to its default
    still overrides the base (a variant is not a diff against the defaults), and a bad pair is refused."""
    base = LoweringOptions.parse("stream_ring=2 load_ring=4")
    variant = base.with_text("stream_ring=1")
    assert (variant.stream_ring, variant.load_ring) == (1, 4)
    assert base.with_text("load_ring=8, stream_ring=0").changed() == {}
    assert base.with_text("") == base
    with pytest.raises(LoweringOptionError, match="stream_ring must be in 0..8"):
        base.with_text("stream_ring=99")
    with pytest.raises(LoweringOptionError, match="key=value pairs"):
        base.with_text("stream_ring")


def test_tensor_copies_need_the_bulk_path():
    assert not LoweringOptions(load_path="lsu").tensor_copies_enabled
    assert not LoweringOptions(tensor_copies=False).tensor_copies_enabled
    assert LoweringOptions(load_path="lsu").lsu_loads


@pytest.mark.parametrize(
    "values, message",
    [
        ({"unroll": 3}, r"unknown lowering option 'unroll' \(known: split_copies, load_path, fetch_depth, "
                        r"load_ring, stream_ring, stream_evict_first, compute_warps, tensor_copies, bit_signal, release_fence, run_loops, control_warp, signal_warp, cluster_size, batch_releases, trace, uniform_checks\)"),
        ({"split_copies": 0}, r"split_copies must be in 1\.\.32, got 0"),
        ({"split_copies": 33}, r"split_copies must be in 1\.\.32, got 33"),
        ({"split_copies": "many"}, r"split_copies must be an integer, got 'many'"),
        ({"split_copies": True}, r"split_copies must be an integer, got True"),
        ({"load_path": "dma"}, r"load_path must be 'bulk' or 'lsu', got 'dma'"),
        ({"bit_signal": "xor16"}, r"bit_signal must be 'xor64' or 'xor32', got 'xor16'"),
        ({"fetch_depth": 0}, r"fetch_depth must be in 1\.\.32, got 0"),
        ({"fetch_depth": 100000}, r"fetch_depth must be in 1\.\.32, got 100000"),
        ({"load_ring": 0}, r"load_ring must be in 1\.\.8, got 0"),
        ({"load_ring": 16}, r"load_ring must be in 1\.\.8, got 16"),
        ({"load_ring": 6}, r"load_ring must be a power of two, got 6"),
        ({"stream_ring": 16}, r"stream_ring must be in 0\.\.8 \(0: the target's\), got 16"),
        ({"stream_ring": -1}, r"stream_ring must be in 0\.\.8 \(0: the target's\), got -1"),
        ({"stream_ring": 3}, r"stream_ring must be a power of two, got 3"),
        ({"compute_warps": MAX_COMPUTE_WARPS + 1},
         rf"compute_warps must be in 0\.\.{MAX_COMPUTE_WARPS} \(0: the target's\)"),
        ({"tensor_copies": 2}, r"tensor_copies must be true or false \(or 1 or 0\), got 2"),
        ({"release_fence": "yes"}, r"release_fence must be true or false \(or 1 or 0\), got 'yes'"),
        ({"trace": "on"}, r"trace must be true or false \(or 1 or 0\), got 'on'"),
        ({"stream_evict_first": "always"}, r"stream_evict_first must be true or false \(or 1 or 0\), got 'always'"),
        ({"cluster_size": 3}, r"cluster_size must be one of 1, 2, 4, 8, got 3"),
        ({"cluster_size": 16}, r"cluster_size must be one of 1, 2, 4, 8, got 16"),
    ],
)
def test_bad_options_are_one_line_errors(values, message):
    with pytest.raises(LoweringOptionError, match=message) as info:
        LoweringOptions.from_mapping(values)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, VdirError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: LoweringOptions.parse("trace=1 trace=0"), r"lowering option 'trace' is given twice in 'trace=1 trace=0'"),
        (lambda: LoweringOptions.parse("load-ring=4,load_ring=8"), r"lowering option 'load_ring' is given twice"),
        (lambda: LoweringOptions.from_mapping({"load-ring": 4, "load_ring": 8}),
         r"lowering option 'load_ring' is given twice"),
        (lambda: LoweringOptions().with_overrides({"trace": 1}, trace=0), r"lowering option 'trace' is given twice"),
    ],
)
def test_an_option_given_twice_is_refused(make, message):
    """Not the last value silently kept: a script that sets an option twice has a mistake in it."""
    with pytest.raises(LoweringOptionError, match=message) as info:
        make()
    assert "\n" not in str(info.value)


def test_constructor_checks_too():
    with pytest.raises(LoweringOptionError, match="load_path must be"):
        LoweringOptions(load_path="LSU")


@pytest.mark.parametrize("text", ["load_path", "=lsu", "load_path="])
def test_string_form_needs_pairs(text):
    with pytest.raises(LoweringOptionError, match="lowering options are key=value pairs"):
        LoweringOptions.parse(text)


def test_coerce_rejects_other_types():
    with pytest.raises(LoweringOptionError, match="got int"):
        LoweringOptions.coerce(3)  # type: ignore[arg-type]


def test_ptx_target_spec_round_trip():
    target = PTXTarget.from_spec(parse_spec("ptx{load-path=lsu split-copies=4 release-fence=true}"))
    assert target.options == LoweringOptions(load_path="lsu", split_copies=4, release_fence=True)
    assert PTXTarget.from_spec(parse_spec(str(target))) == target
    assert str(PTXTarget()) == "ptx"
    with pytest.raises(UserError, match="error: target 'ptx': unknown lowering option 'x'"):
        PTXTarget.from_spec(parse_spec("ptx{x=1}"))


def test_explicit_defaults_lower_as_no_options():
    prog = family_program("add", [(1, 64), (1, 64)], ["bf16", "bf16"], (1, 64))
    explicit = LoweringOptions.parse("split_copies=1 load_path=bulk trace=0")
    assert lower_to_ptx(prog, "h200") == lower_to_ptx(prog, "h200", explicit)
    assert lower_to_ptx(prog, "h200") != lower_to_ptx(prog, "h200", LoweringOptions(release_fence=True))
