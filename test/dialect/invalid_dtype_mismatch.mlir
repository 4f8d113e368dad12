// RUN: vdir-opt %s --verify-diagnostics --split-input-file

// Loads and stores copy bytes: the tile's element type is the buffer's.

vdir.program @load(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @+1 {{load: buffer element type bf16 differs from tile element type f32}}
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x32xf32>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x32xf32>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @store(%a: !vdir.buffer<4x64xf32>, %b: !vdir.buffer<4x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x32xf32>
  // expected-error @+1 {{store: buffer element type bf16 differs from tile element type f32}}
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<4x32xf32>, !vdir.buffer<4x64xbf16>
}
