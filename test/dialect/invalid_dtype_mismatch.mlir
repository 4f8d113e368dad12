// RUN: vdir-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Loads and stores copy bytes: the tile's element type is the buffer's.

vdir.program @load(%a: !vdir.buffer<4x64xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: load: buffer element type bf16 differs from tile element type f32
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x32xf32>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x32xf32>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @store(%a: !vdir.buffer<4x64xf32>, %b: !vdir.buffer<4x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x32xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: buffer element type bf16 differs from tile element type f32
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<4x32xf32>, !vdir.buffer<4x64xbf16>
}
