// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A tile row copied by a load or a store must be a multiple of 16 bytes.

vdir.program @load(%a: !vdir.buffer<4x64xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: tile rows are 8 bytes; bulk copies need a multiple of 16
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x4xbf16>
  %u = vdir.compute add(%t, %t) : (!vdir.tile<4x4xbf16>, !vdir.tile<4x4xbf16>) -> !vdir.tile<4x4xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<4x4xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

// A gemv over 4 rows yields a 1x4 tile: 8 bytes, too narrow to store.
vdir.program @store(%w: !vdir.buffer<4x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x4xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<4x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x4xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: tile rows are 8 bytes; bulk copies need a multiple of 16
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x4xbf16>, !vdir.buffer<1x4xbf16>
}

// -----

// An i32 row needs 4 elements (16 bytes).
vdir.program @i32(%a: !vdir.buffer<4x8xi32>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: tile rows are 8 bytes; bulk copies need a multiple of 16
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xi32> -> !vdir.tile<4x2xi32>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x2xi32>, !vdir.buffer<4x8xi32>
}
