"""Every example program compiles to PTX that assembles for sm_90a.

Each ``examples/*.mlir`` goes through ``vdir-opt -p vdir-pipeline -t ptx``
(the command-line path, once per example, in a module-scoped fixture), and
the PTX is assembled for sm_90a: with ``ptxas`` when it is on PATH, else with
nvJitLink (``cuda.bindings.nvjitlink``, from the ``nvidia-nvjitlink`` wheel
of the test extra). The assembling test skips, saying why, only when neither
is available. A second test always goes through nvJitLink when it is
importable, so the fallback that CI may depend on is exercised here too.

No GPU is needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
ARCH = "sm_90a"

#: runs vdir-opt's entry point with the interpreter running the tests, so the
#: tool is the one of this environment whether or not its script is on PATH
VDIR_OPT = [sys.executable, "-c", "import sys; from vdir.tools.vdir_opt import main; sys.exit(main())"]


def _compile(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*VDIR_OPT, str(path), "-p", "vdir-pipeline", "-t", "ptx"],
        capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def example_ptx() -> dict[str, subprocess.CompletedProcess]:
    """name -> the finished ``vdir-opt`` run for that example (compiled once, in parallel)."""
    with ThreadPoolExecutor(max_workers=max(1, min(len(EXAMPLES), os.cpu_count() or 1))) as pool:
        runs = list(pool.map(_compile, EXAMPLES))
    return {p.name: r for p, r in zip(EXAMPLES, runs, strict=True)}


def _ptx(example_ptx: dict, name: str) -> str:
    r = example_ptx[name]
    assert r.returncode == 0, f"vdir-opt -p vdir-pipeline -t ptx failed on examples/{name}:\n{r.stderr}"
    assert r.stdout.strip(), f"no PTX printed for examples/{name}"
    return r.stdout


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink
    except Exception:  # noqa: BLE001 (missing wheel, or a broken install)
        return None
    return nvjitlink


def assemble_ptxas(text: str) -> int:
    """Assemble with ptxas; return the cubin size."""
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run(["ptxas", f"-arch={ARCH}", src, "-o", out], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"ptxas -arch={ARCH} rejected the PTX:\n{r.stderr}{r.stdout}"
        return os.path.getsize(out)


def assemble_nvjitlink(text: str) -> int:
    """Assemble with nvJitLink; return the linked cubin size (the error log on failure)."""
    nvjitlink = _nvjitlink()
    assert nvjitlink is not None
    opts = [f"-arch={ARCH}"]
    h = nvjitlink.create(len(opts), opts)
    try:
        data = text.encode()
        try:
            nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), "vdir.ptx")
            nvjitlink.complete(h)
        except nvjitlink.nvJitLinkError as e:
            n = nvjitlink.get_error_log_size(h)
            log = bytearray(n)
            if n:
                nvjitlink.get_error_log(h, log)
            pytest.fail(f"nvJitLink ({ARCH}) rejected the PTX: {e}\n{log.decode(errors='replace')}")
        size = nvjitlink.get_linked_cubin_size(h)
        cubin = bytearray(size)
        if size:
            nvjitlink.get_linked_cubin(h, cubin)
        # an ELF image
        assert cubin[:4] == b"\x7fELF", "nvJitLink returned something that is not a cubin"
        return size
    finally:
        nvjitlink.destroy(h)


def test_examples_exist():
    """The examples directory is where the tests expect it, and not empty."""
    assert EXAMPLES, f"no examples/*.mlir under {ROOT}"


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_example_ptx_structure(example_ptx, name):
    """The output is one sm_90a kernel, with at least one family body."""
    text = _ptx(example_ptx, name)
    assert f".target {ARCH}" in text
    assert text.count(".visible .entry vdir_persistent(") == 1
    assert "$L_fam" in text, "an example with compute ops emits its family bodies"


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_example_ptx_assembles(example_ptx, name):
    """The PTX assembles for sm_90a (ptxas when on PATH, else nvJitLink)."""
    text = _ptx(example_ptx, name)
    if shutil.which("ptxas"):
        size = assemble_ptxas(text)
    elif _nvjitlink() is not None:
        size = assemble_nvjitlink(text)
    else:
        pytest.skip("neither ptxas (on PATH) nor cuda.bindings.nvjitlink (pip install nvidia-nvjitlink "
                    "cuda-python) is available to assemble PTX")
    assert size > 0


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_example_ptx_links_with_nvjitlink(example_ptx, name):
    """The nvJitLink path on its own (what assembles the PTX where ptxas is missing)."""
    if _nvjitlink() is None:
        pytest.skip("cuda.bindings.nvjitlink is not importable (pip install nvidia-nvjitlink cuda-python)")
    assert assemble_nvjitlink(_ptx(example_ptx, name)) > 0


def test_assemblers_reject_bad_ptx():
    """The assembling helpers fail on PTX that does not assemble (so the tests above can fail)."""
    bad = f".version 8.0\n.target {ARCH}\n.address_size 64\n.visible .entry k()\n{{\n\tbogus.u32 %r1;\n}}\n"
    checked = 0
    if shutil.which("ptxas"):
        with pytest.raises(AssertionError, match="rejected"):
            assemble_ptxas(bad)
        checked += 1
    if _nvjitlink() is not None:
        with pytest.raises(pytest.fail.Exception, match="rejected"):
            assemble_nvjitlink(bad)
        checked += 1
    if not checked:
        pytest.skip("neither ptxas nor cuda.bindings.nvjitlink is available")
