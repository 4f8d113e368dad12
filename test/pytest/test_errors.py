"""Every exception vdir defines derives from ``VdirError`` and keeps the base its callers rely on."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from xdsl.utils.exceptions import DiagnosticException, PassFailedException

import vdir
from vdir.analysis.runtime_values import RuntimeValueError
from vdir.compiler import InvalidModuleError
from vdir.device_runtime.executable import ArgumentError
from vdir.device_runtime.platform import BackendUnavailable, LaunchOptionError, PlatformError
from vdir.device_runtime.sim import SimBoundsError, SimDeadlockError, SimProgramError, SimRaceError
from vdir.device_runtime.trace import TraceError
from vdir.diagnostics import PassFailure, UserError, VdirError
from vdir.families import FamilyError, UnknownFamilyError
from vdir.lowering.options import LoweringOptionError
from vdir.target import UnknownTargetError
from vdir.testing.reference import ReferenceBoundsError, ReferenceInputError
from vdir.tools.vdir_run import RunError


def vdir_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a vdir module (all modules imported)."""
    found = []
    for info in pkgutil.walk_packages(vdir.__path__, "vdir."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def test_every_vdir_exception_has_the_one_root():
    classes = vdir_exception_classes()
    assert len(classes) >= 10  # the discovery itself works (a broken walk would find none)
    assert [c.__qualname__ for c in classes if not issubclass(c, VdirError)] == []


@pytest.mark.parametrize(
    "cls, base",
    [
        (ReferenceInputError, ValueError), (ArgumentError, ValueError), (UnknownTargetError, ValueError),
        (FamilyError, ValueError), (UnknownFamilyError, FamilyError), (LoweringOptionError, ValueError),
        (PlatformError, RuntimeError), (BackendUnavailable, PlatformError), (SimProgramError, PlatformError),
        (SimRaceError, PlatformError), (SimDeadlockError, PlatformError), (SimBoundsError, PlatformError),
        (RuntimeValueError, ValueError), (ReferenceBoundsError, IndexError), (RunError, VdirError),
        (PassFailure, PassFailedException), (UserError, DiagnosticException), (InvalidModuleError, ValueError),
        (LaunchOptionError, ValueError), (TraceError, ValueError),
    ],
)
def test_secondary_bases_are_kept(cls, base):
    assert issubclass(cls, VdirError) and issubclass(cls, base)


def test_pass_failure_carries_its_place():
    e = PassFailure("cannot place", loc="prog.mlir:3:5")
    assert str(e) == "cannot place" and e.op is None and e.loc == "prog.mlir:3:5"
