// RUN: %roundtrip

// Each micro-op names its engine kind (`on <kind>`); omitted, it is the
// natural one. An explicit engine prints the same as the default. The
// generic form may leave the `engine` property out too.

vdir.program @engines(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] on load : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %u = vdir.compute add(%t, %t) on compute : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  %g = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %h = "vdir.compute"(%g, %g) <{family = "add", operandSegmentSizes = array<i32: 2, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %k = "vdir.store"(%h, %a) <{static_offsets = array<i64: 0, 0>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}

// CHECK:      %t = vdir.load %a[0, 0] on load :
// CHECK-NEXT: %u = vdir.compute add(%t, %t) on compute :
// CHECK-NEXT: %s = vdir.store %u, %a[0, 0] on store :
// CHECK-NEXT: %g = vdir.load %a[0, 0] on load :
// CHECK-NEXT: %h = vdir.compute add(%g, %g) on compute :
// CHECK-NEXT: %k = vdir.store %h, %a[0, 0] on store :
