// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Runtime values: launch-time scalar arguments (`index`, with a half-open
// range, after the buffers), offsets affine in a scalar, a micro-op's
// runtime condition (`when %v >= c` / `when %v < c`), and a repeat whose
// bound is a scalar with a compile-time maximum.

vdir.program @runtime(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 60, %n: index in -4 to 9) {
  %t = vdir.load %x[%pos, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<4x16xbf16>
  %u = vdir.compute add(%t, %t) when %n >= 2 : (!vdir.tile<4x16xbf16>, !vdir.tile<4x16xbf16>) -> !vdir.tile<4x16xbf16>
  %s = vdir.store %u, %y[%pos, 0] when %n >= 2 on store flow 1 : !vdir.tile<4x16xbf16>, !vdir.buffer<64x16xbf16>
  vdir.repeat %i = 0 to %n max 8 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %a = vdir.load %x[%r, 0] when %pos < 30 : !vdir.buffer<64x16xbf16> -> !vdir.tile<8x16xbf16>
    %b = vdir.store %a, %y[%r, 0] : !vdir.tile<8x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}

// CHECK-LABEL: vdir.program @runtime(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 60, %n: index in -4 to 9) {
// CHECK-NEXT:    %t = vdir.load %x[%pos, 0] on load :
// CHECK-NEXT:    %u = vdir.compute add(%t, %t) when %n >= 2 on compute :
// CHECK-NEXT:    %s = vdir.store %u, %y[%pos, 0] when %n >= 2 on store flow 1 :
// CHECK-NEXT:    vdir.repeat %i = 0 to %n max 8 {
// CHECK:           %a = vdir.load %x[%r, 0] when %pos < 30 on load :

// GENERIC:      "vdir.program"() <{sym_name = "runtime", scalar_ranges = array<i64: 0, 60, -4, 9>, arg_names = ["x", "y", "pos", "n"]}>
// GENERIC:      "vdir.compute"(%t, %t, %n) <{family = "add", guard_op = "ge", guard_bound = 2 : i64, engine = #vdir.engine<compute>, operandSegmentSizes = array<i32: 2, 0, 1>}>
// GENERIC:      "vdir.repeat"(%n) <{lower = 0 : i64, upper = 8 : i64, step = 1 : i64}>
// GENERIC:      "vdir.load"(%x, %r, %pos) <{static_offsets = array<i64: -9223372036854775808, 0>, guard_op = "lt", guard_bound = 30 : i64, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 1, 0, 1>}>
