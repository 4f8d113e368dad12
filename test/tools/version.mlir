// --version prints vdir's version and xDSL's; vdir.__version__ is the installed package's.

// RUN: vdir-opt --version | filecheck %s
// RUN: python -c "import importlib.metadata as m, vdir; assert vdir.__version__ == m.version('vdir'); print('vdir', vdir.__version__)" | filecheck %s --check-prefix=PKG

// CHECK: vdir-opt {{[0-9]+[^ ]*}} (xDSL {{[0-9]+[^ ]*}})
// PKG: vdir {{[0-9]+[^ ]*}}
