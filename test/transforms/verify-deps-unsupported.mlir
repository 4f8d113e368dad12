// RUN: not vdir-opt %s -p vdir-verify-deps 2>&1 | filecheck %s

// Only index arithmetic (affine.apply, arith constants, addi, muli) may sit
// beside micro-ops in a program.

// CHECK: verify-deps-unsupported.mlir:[[# @LINE + 4]]:5: error: vdir-verify-deps: 'arith.divui' cannot appear in a vdir program
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  vdir.repeat %i = 0 to 2 {
    %c = arith.constant 2 : index
    %d = arith.divui %i, %c : index
    %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  }
}
