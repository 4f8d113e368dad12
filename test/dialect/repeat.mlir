// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// vdir.repeat: an induction variable over [lower, upper) with a step; offsets
// derive from it through affine.apply. Repeats nest.

vdir.program @repeat(%a: !vdir.buffer<64x64xbf16>, %b: !vdir.buffer<64x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    vdir.repeat %j = 8 to 64 step 24 attributes {unroll = 1 : i64} {
      %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
      %t = vdir.load %a[%r, %j] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x8xbf16>
      %s = vdir.store %t, %b[%r, %j] : !vdir.tile<16x8xbf16>, !vdir.buffer<64x64xbf16>
    }
  }
  vdir.repeat %k = -2 to 2 {
  }
}

// CHECK-LABEL: vdir.program @repeat
// CHECK:       vdir.repeat %i = 0 to 4 {
// CHECK-NEXT:    vdir.repeat %j = 8 to 64 step 24 attributes {unroll = 1 : i64} {
// CHECK-NEXT:      %r = affine.apply affine_map<(d0) -> ((d0 * 16))> (%i)
// CHECK-NEXT:      %t = vdir.load %a[%r, %j] on load
// CHECK-NEXT:      %s = vdir.store %t, %b[%r, %j] on store
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  vdir.repeat %k = -2 to 2 {
// CHECK-NEXT:  }

// GENERIC:     "vdir.repeat"() <{lower = 0 : i64, upper = 4 : i64, step = 1 : i64}> ({
// GENERIC-NEXT:  ^bb{{[0-9]+}}(%i: index):
// GENERIC-NEXT:  "vdir.repeat"() <{lower = 8 : i64, upper = 64 : i64, step = 24 : i64}> ({
// GENERIC-NEXT:  ^bb{{[0-9]+}}(%j: index):
// GENERIC:       }) {unroll = 1 : i64} : () -> ()
