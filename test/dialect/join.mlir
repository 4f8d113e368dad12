// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// vdir.join merges tokens into one; a micro-op can then wait on the join.

vdir.program @join(%a: !vdir.buffer<2x8xbf16>, %b: !vdir.buffer<2x8xbf16>) {
  %t0 = vdir.load %a[0, 0] : !vdir.buffer<2x8xbf16> -> !vdir.tile<1x8xbf16>
  %t1 = vdir.load %a[1, 0] : !vdir.buffer<2x8xbf16> -> !vdir.tile<1x8xbf16>
  %s0 = vdir.store %t0, %b[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<2x8xbf16>
  %s1 = vdir.store %t1, %b[1, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<2x8xbf16>
  %both = vdir.join %s0, %s1
  %one = vdir.join %s0 {note = "single"}
  %r = vdir.load %b[0, 0] after %both, %one : !vdir.buffer<2x8xbf16> -> !vdir.tile<2x8xbf16>
  %s2 = vdir.store %r, %a[0, 0] : !vdir.tile<2x8xbf16>, !vdir.buffer<2x8xbf16>
}

// CHECK-LABEL: vdir.program @join
// CHECK:       %both = vdir.join %s0, %s1
// CHECK-NEXT:  %one = vdir.join %s0 {note = "single"}
// CHECK-NEXT:  %r = vdir.load %b[0, 0] on load after %both, %one : !vdir.buffer<2x8xbf16> -> !vdir.tile<2x8xbf16>

// GENERIC:     %both = "vdir.join"(%s0, %s1) : (!vdir.token, !vdir.token) -> !vdir.token
// GENERIC:     %r = "vdir.load"(%b, %both, %one) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 2, 0>}>
