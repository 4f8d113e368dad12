"""The compiler core never imports a backend.

The core (dialects, passes, lowering, ISA, families, targets) must build and
lower a program on a machine with no device runtime; backends live in
``vdir.device_runtime`` and sit above it, as do ``vdir.compiler`` (the
``vdir.compile`` entry point) and ``vdir.testing``. Two checks, each also run
against a planted violation to show that it can fail:

* every core module is imported in a fresh interpreter, which must not have
  loaded any ``vdir.device_runtime`` module afterwards (import-time imports,
  direct or transitive);
* every core source file is scanned with ``ast`` for an import of a backend
  anywhere, including inside functions (lazy imports) and through
  ``importlib.import_module("...")``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: the packages and modules of the compiler core
CORE = ("vdir.dialects", "vdir.analysis", "vdir.transforms", "vdir.lowering", "vdir.isa", "vdir.families", "vdir.target")

#: the backends' package: nothing in the core may import it
BACKENDS = "vdir.device_runtime"


def module_files(names: tuple[str, ...], root: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every module in the packages/modules ``names`` under ``root``."""
    found: dict[str, Path] = {}
    for name in names:
        path = root.joinpath(*name.split("."))
        if path.with_suffix(".py").is_file():
            found[name] = path.with_suffix(".py")
            continue
        for file in sorted(path.rglob("*.py")):
            parts = file.relative_to(root).with_suffix("").parts
            dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[dotted] = file
    return found


def backend_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of :data:`BACKENDS` in ``source``, lazy ones included."""
    hits: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        if any(n == BACKENDS or n.startswith(BACKENDS + ".") for n in names):
            hits.append((node.lineno, names[0]))
    return sorted(hits)


#: run in a fresh interpreter: import each module in turn and report which
#: backend modules appeared in ``sys.modules`` with it
_PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    seen, blame = set(), {}
    for name in json.loads(sys.argv[1]):
        importlib.import_module(name)
        new = sorted(m for m in sys.modules if m.startswith(sys.argv[2]) and m not in seen)
        if new:
            blame[name] = new
            seen.update(new)
    print(json.dumps(blame))
    """
)


def backends_loaded_by(modules: list[str], extra_path: Path | None = None) -> dict[str, list[str]]:
    """Core module -> the backend modules importing it loaded, in one fresh interpreter."""
    path = [str(extra_path)] if extra_path else []
    code = f"import sys; sys.path[:0] = {path!r}; " + _PROBE
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(modules), BACKENDS],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_core_modules_load_no_backend():
    modules = sorted(module_files(CORE, REPO))
    assert "vdir.lowering.emit" in modules and "vdir.transforms.pipeline" in modules
    assert backends_loaded_by(modules) == {}


def test_core_sources_import_no_backend():
    offenders = {
        name: hits
        for name, file in module_files(CORE, REPO).items()
        if (hits := backend_imports(file.read_text()))
    }
    assert offenders == {}


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A tmp package ``fakecore`` whose ``eager`` module imports a backend at import time
    and whose ``lazy`` module does it inside a function."""
    pkg = tmp_path / "fakecore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "clean.py").write_text("import vdir.isa\n")
    (pkg / "eager.py").write_text("from vdir.device_runtime.platform import Platform\n")
    (pkg / "lazy.py").write_text(
        "import importlib\n\ndef run():\n    from vdir.device_runtime import get_platform\n"
        "    return importlib.import_module('vdir.device_runtime.sim')\n"
    )
    return tmp_path


def test_import_check_catches_a_planted_violation(planted: Path):
    modules = sorted(module_files(("fakecore",), planted))
    assert modules == ["fakecore", "fakecore.clean", "fakecore.eager", "fakecore.lazy"]
    blame = backends_loaded_by(modules, planted)
    assert list(blame) == ["fakecore.eager"]
    assert "vdir.device_runtime.platform" in blame["fakecore.eager"]


def test_source_scan_catches_a_planted_violation(planted: Path):
    files = module_files(("fakecore",), planted)
    assert backend_imports(files["fakecore.clean"].read_text()) == []
    assert backend_imports(files["fakecore.eager"].read_text()) == [(1, "vdir.device_runtime.platform")]
    assert backend_imports(files["fakecore.lazy"].read_text()) == [
        (4, "vdir.device_runtime"), (5, "vdir.device_runtime.sim")
    ]


#: the one pass that composes the others (as MLIR's pass pipelines do), and its options, which are
#: the passes' options (their defaults and ranges stay with each pass)
PIPELINE_PASS = "vdir.transforms.pipeline"
PIPELINE_OPTIONS = "vdir.transforms.pipeline_options"


def pass_imports(source: str) -> list[str]:
    """The ``vdir.transforms`` modules that ``source`` imports (helpers live in ``vdir.analysis``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("vdir.transforms"):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("vdir.transforms")]
    return found


def test_passes_do_not_import_passes():
    offenders = {
        name: hits
        for name, file in module_files(("vdir.transforms",), REPO).items()
        if name not in (PIPELINE_PASS, PIPELINE_OPTIONS, "vdir.transforms") and (hits := pass_imports(file.read_text()))
    }
    assert offenders == {}


def test_pass_import_check_catches_a_violation():
    assert pass_imports("from vdir.transforms.schedule import queues_of\n") == ["vdir.transforms.schedule"]
    assert pass_imports("from vdir.analysis.queues import queues_of\n") == []
