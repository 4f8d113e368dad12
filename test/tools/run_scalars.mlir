// RUN: vdir-run %s --backend sim --check --scalar pos=59 --scalar n=3 | filecheck %s
// RUN: vdir-run %s --backend sim --check --seed 7 | filecheck %s --check-prefix=RANDOM
// RUN: not vdir-run %s --backend sim --scalar pos=60 --scalar n=1 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not vdir-run %s --backend sim --scalar q=1 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not vdir-run %s --backend sim --scalar pos=two 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not vdir-run %s --backend sim --scalar pos=٣ 2>&1 | filecheck %s --check-prefix=DIGITS

// vdir-run gives the launch-time scalars with --scalar NAME=VALUE (others
// are random in their range, from --seed), prints the values it used, and
// --check gives the reference evaluator the same ones.

// CHECK:      scalars: pos = 59, n = 3
// CHECK-NEXT: backend: sim
// CHECK:      check passed: y equal the reference evaluator's
// RANDOM:     scalars: pos = {{[0-9]+}}, n = {{[0-9]+}}
// RANDOM:     check passed
// RANGE:      error: scalar 'pos' = 60 is outside its range 0 to 60
// NAME:       error: --scalar q=1: expected NAME=VALUE with NAME one of the program's scalars (pos, n)
// VALUE:      error: --scalar pos=two: 'two' is not an integer
// DIGITS:     error: --scalar pos=٣: '٣' is not an integer

vdir.program @runtime(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 60, %n: index in 0 to 9) {
  %t = vdir.load %x[%pos, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<4x16xbf16>
  %s = vdir.store %t, %y[%pos, 0] : !vdir.tile<4x16xbf16>, !vdir.buffer<64x16xbf16>
  vdir.repeat %i = 0 to %n max 8 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %a = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<8x16xbf16>
    %b = vdir.store %a, %y[%r, 0] : !vdir.tile<8x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}
