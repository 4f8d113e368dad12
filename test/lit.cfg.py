"""lit configuration for the vdir FileCheck suite.

Run everything with ``lit -v test/``. Tools are found on PATH, with the
directory of the running Python interpreter (a virtual environment's ``bin``)
first, so ``vdir-opt`` and ``filecheck`` are the project's own.
"""

import os
import sys

import lit.formats

config.name = "vdir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "pytest", "Inputs"]

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, os.environ.get("PATH", "")]
)
for var in ("HOME", "TMPDIR", "LANG", "LC_ALL"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# the tests compile on purpose and must not fill the user's cache of compiled programs
config.environment["VDIR_PROGRAM_CACHE"] = "0"

# Substitutions are applied in order and before lit's own (%s, %S, ...), so
# the expansions below may use %s.
config.substitutions.append(
    (
        "%roundtrip",
        "vdir-opt %s | vdir-opt | filecheck %s"
        " && vdir-opt %s --print-op-generic | vdir-opt | filecheck %s",
    )
)
config.substitutions.append(("%vdir-opt", "vdir-opt"))
