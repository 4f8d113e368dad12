// RUN: %roundtrip

// Each micro-op names its engine kind (`on <kind>`); omitted, it is the
// natural one. An explicit engine prints the same as the default.

vdir.program @engines(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] on load : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %u = vdir.compute add(%t, %t) on compute : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// CHECK:      %t = vdir.load %a[0, 0] on load :
// CHECK-NEXT: %u = vdir.compute add(%t, %t) on compute :
// CHECK-NEXT: %s = vdir.store %u, %a[0, 0] on store :
