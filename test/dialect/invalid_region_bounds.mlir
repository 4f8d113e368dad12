// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A load or store region must lie inside its buffer, on both axes.

vdir.program @rows(%a: !vdir.buffer<16x64xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: region rows [12, 20) are out of the buffer's bounds [0, 16)
  %t = vdir.load %a[12, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<8x64xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<8x64xbf16>, !vdir.buffer<16x64xbf16>
}

// -----

vdir.program @columns(%a: !vdir.buffer<16x64xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: region columns [40, 72) are out of the buffer's bounds [0, 64)
  %t = vdir.load %a[0, 40] : !vdir.buffer<16x64xbf16> -> !vdir.tile<8x32xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<8x32xbf16>, !vdir.buffer<16x64xbf16>
}

// -----

vdir.program @store_rows(%a: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<4x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<2x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: region rows [3, 5) are out of the buffer's bounds [0, 4)
  %s = vdir.store %t, %b[3, 0] : !vdir.tile<2x64xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @store_columns(%a: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<4x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<2x16xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: region columns [56, 72) are out of the buffer's bounds [0, 64)
  %s = vdir.store %t, %b[0, 56] : !vdir.tile<2x16xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @too_big(%a: !vdir.buffer<16x64xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: a 32x64 tile does not fit in a 16x64 buffer
  %t = vdir.load %a[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<32x64xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<32x64xbf16>, !vdir.buffer<16x64xbf16>
}
