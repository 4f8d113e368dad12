// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Buffers and tiles are two-dimensional, with positive dimensions.

// CHECK: error: vdir.buffer must be two-dimensional (rows x cols), got 3 dimensions
vdir.program @p(%a: !vdir.buffer<2x4x8xbf16>) {
}

// -----

// CHECK: error: vdir.buffer must be two-dimensional (rows x cols), got 1 dimensions
vdir.program @p(%a: !vdir.buffer<8xbf16>) {
}

// -----

vdir.program @p(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: error: vdir.tile must be two-dimensional (rows x cols), got 3 dimensions
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<1x4x8xbf16>
}

// -----

// CHECK: error: vdir.buffer dimensions must be positive
vdir.program @p(%a: !vdir.buffer<0x8xbf16>) {
}
