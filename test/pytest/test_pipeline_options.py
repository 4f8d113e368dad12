"""The pass pipeline's options (``vdir.transforms.pipeline_options``): one owner for vdir-pipeline, the
embedding entry points and the tools.

What is checked: the pass's options are the dataclass's (names, defaults, the
pass spelling them with dashes); a program compiles to the same bytes
whichever way its options are given; a bad option is one error, the same
text from Python as from vdir-opt, before anything is compiled; and
``vdir.compile`` takes them, refusing a contradiction.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.utils.arg_spec import parse_spec

import vdir
from vdir.diagnostics import UserError
from vdir.frontend.examples import build_mlp_block
from vdir.options import OptionError
from vdir.transforms.pipeline import PipelinePass, compile_to_encoded
from vdir.transforms.pipeline_options import PipelineOptionError, PipelineOptions


def _block():
    return build_mlp_block(256, 512)


def _same(a, b) -> None:
    assert np.array_equal(a.instrs, b.instrs) and a.queues == b.queues and a.num_counters == b.num_counters
    assert a.flag_word_bytes == b.flag_word_bytes and a.smem_bytes == b.smem_bytes


def test_the_pass_options_are_the_dataclass_fields_with_their_defaults():
    """vdir-pipeline declares no option of its own: adding one to PipelineOptions adds it to the pass."""
    pass_fields = {f.name: f.default for f in dataclasses.fields(PipelinePass)}
    option_fields = {f.name: f.default for f in dataclasses.fields(PipelineOptions)}
    assert pass_fields == option_fields
    assert PipelinePass().options() == PipelineOptions()


def test_the_pass_spelling_and_the_text_form_give_the_same_options():
    spelled = PipelinePass.from_spec(parse_spec("vdir-pipeline{num-sms=4 flag-words=64 keep-trips=true}"))
    assert spelled.options() == PipelineOptions.parse("num-sms=4, flag_words=64 keep-trips=1")
    assert spelled.options().changed() == {"num_sms": 4, "keep_trips": True, "flag_words": 64}


def test_a_program_compiles_to_the_same_bytes_however_its_options_are_given():
    by_name = compile_to_encoded(_block(), num_sms=4, flag_words=4096)
    for spelled in (PipelineOptions(num_sms=4, flag_words=4096), {"num-sms": 4, "flag_words": 4096},
                    "num-sms=4 flag-words=4096"):
        _same(compile_to_encoded(_block(), spelled), by_name)
    _same(compile_to_encoded(_block(), "num-sms=2", num_sms=4, flag_words=4096), by_name)  # names override
    assert by_name.flag_word_bytes > 0 and by_name.num_sms == 4


@pytest.mark.parametrize(
    ("spelled", "message"),
    [
        ({"prefech": 1}, r"^unknown pipeline option 'prefech' \(known: target, num_sms, fuse, prefetch, "),
        ({"prefetch": 1, "prefetch_": 2}, None),
        ("prefetch", r"^pipeline options are key=value pairs, got 'prefetch' in 'prefetch'$"),
        ("prefetch=1 prefetch=2", r"^pipeline option 'prefetch' is given twice in 'prefetch=1 prefetch=2'$"),
        ({"prefetch": 1, "Prefetch": 2}, r"^unknown pipeline option 'Prefetch'"),
        ({"fuse": "maybe"}, r"^pipeline option fuse must be true or false \(or 1 or 0\), got 'maybe'$"),
        ({"prefetch": "two"}, r"^pipeline option prefetch must be an integer, got 'two'$"),
        ({"side_loads": "all"}, r"^error: vdir-pipeline: option 'side-loads' must be one of none, idle, got 'all'$"),
        ({"run_ahead": 9}, r"^error: vdir-pipeline: option 'run-ahead' must be at most 8, got 9$"),
        ({"flag_words": -1}, r"^error: vdir-pipeline: option 'flag-words' must be at least 0, got -1$"),
        ({"num_sms": "none", "target": 5}, r"^pipeline option target must be a string, got 5$"),
        (3, r"^pipeline options must be PipelineOptions, a dict or a 'key=value ...' string, got int$"),
    ],
)
def test_a_bad_option_is_one_error_before_anything_is_compiled(spelled, message):
    """A ValueError for embedders and a UserError (vdir-opt's one line) alike, from every entry point."""
    if message is None:  # 'prefetch_' is no option either
        message = r"^unknown pipeline option 'prefetch_'"
    for attempt in (lambda: PipelineOptions.coerce(spelled), lambda: compile_to_encoded(_block(), spelled),
                    lambda: vdir.compile(_block(), pipeline=spelled)):
        with pytest.raises(PipelineOptionError, match=message) as info:
            attempt()
        assert isinstance(info.value, ValueError) and isinstance(info.value, UserError)
        assert isinstance(info.value, OptionError) and "\n" not in str(info.value)


def test_vdir_compile_takes_pipeline_options_and_refuses_a_contradiction():
    exe = vdir.compile(_block(), num_sms=4, pipeline="flag-words=4096")
    _same(exe.program, compile_to_encoded(_block(), num_sms=4, flag_words=4096))
    assert vdir.compile(_block(), num_sms=4, pipeline={"num_sms": 4}).program.num_sms == 4
    with pytest.raises(PipelineOptionError, match="num-sms=4 and the pipeline option num-sms=2 disagree"):
        vdir.compile(_block(), num_sms=4, pipeline={"num_sms": 2})
    with pytest.raises(PipelineOptionError, match="target=h200 and the pipeline option target=nope disagree"):
        vdir.compile(_block(), target="h200", pipeline="target=nope")
    with pytest.raises(PipelineOptionError, match="an encoded program is compiled already"):
        vdir.compile(exe.program, pipeline="prefetch=1")


# -- property: every spelling of a valid option set reads back to it ----------------------------------------------

_VALID = {
    "target": st.sampled_from(["h200", "h100"]),  # (the default, "", is written by leaving it out)
    "num_sms": st.none() | st.integers(1, 132),
    "fuse": st.booleans(), "reroll": st.booleans(), "stream_loads": st.booleans(),
    "phase_balance": st.booleans(), "keep_trips": st.booleans(), "stamp_trips": st.booleans(),
    "prefetch": st.integers(0, 64), "l2_prefetch": st.integers(0, 1 << 20),
    "run_ahead": st.integers(0, 8), "weight_ring": st.integers(0, 8),
    "side_loads": st.sampled_from(["none", "idle"]), "flag_words": st.integers(0, 1 << 16),
    "hold_streams": st.none() | st.integers(0, 8), "release_first": st.none() | st.booleans(),
}


def _spelled(value: object) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({}, optional=_VALID), st.booleans(), st.booleans())
def test_every_spelling_of_valid_options_reads_back_to_them(values, dashed, commas):
    """A mapping, its text (names with - or _, pairs between spaces or commas) and the vdir-opt spelling
    give one value; what differs from the defaults is what was given, less what equals a default."""
    options = PipelineOptions(**values)
    assert set(PipelineOptions.names()) == set(_VALID)  # a new option needs a strategy here
    name = (lambda n: n.replace("_", "-")) if dashed else (lambda n: n)
    text = ("," if commas else " ").join(f"{name(k)}={_spelled(v)}" for k, v in values.items())
    assert PipelineOptions.parse(text) == options == PipelineOptions.coerce(values)
    assert options.changed() == {k: v for k, v in values.items() if v != getattr(PipelineOptions(), k)}
    flags = " ".join(f"{k.replace('_', '-')}={_spelled(v)}" for k, v in values.items() if v is not None)
    assert PipelinePass.from_spec(parse_spec(f"vdir-pipeline{{{flags}}}")).options() == options
