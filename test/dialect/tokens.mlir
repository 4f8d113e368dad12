// RUN: %roundtrip

// Read-after-write through a global buffer: the store's token orders a later
// load explicitly (`after`). Program order alone would also order them; the
// token documents the edge and lets passes keep it when reordering.

vdir.program @tokens(%a: !vdir.buffer<1x16xbf16>, %scratch: !vdir.buffer<1x16xbf16>, %out: !vdir.buffer<1x16xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %written = vdir.store %u, %scratch[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
  %back = vdir.load %scratch[0, 8] after %written : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x8xbf16>
  %v = vdir.compute add(%back, %back) after %written : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %done = vdir.store %v, %out[0, 8] after %written : !vdir.tile<1x8xbf16>, !vdir.buffer<1x16xbf16>
}

// CHECK:      %written = vdir.store %u, %scratch[0, 0] on store :
// CHECK-NEXT: %back = vdir.load %scratch[0, 8] on load after %written :
// CHECK-NEXT: %v = vdir.compute add(%back, %back) on compute after %written :
// CHECK-NEXT: %done = vdir.store %v, %out[0, 8] on store after %written :
