// RUN: vdir-opt %s --disable-verify | filecheck %s
// RUN: not vdir-opt %s 2>&1 | filecheck %s --check-prefix=VERIFY

// --disable-verify skips the verifiers at parse time too (as mlir-opt's
// -verify-each=0 and xdsl-opt's flag do): a program with an unused tile is
// printed as it is; without the flag it is a located error.

// CHECK:      vdir.program @unused(%x: !vdir.buffer<1x8xbf16>)
// CHECK-NEXT:   %t = vdir.load %x[0, 0] on load
// VERIFY:     disable_verify.mlir:[[# @LINE + 3]]:3: error: tile %t is produced but never used

vdir.program @unused(%x: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
