// RUN: vdir-opt %s --verify-diagnostics --split-input-file

// Bulk copies start at 16-byte aligned columns: a multiple of 8 elements for
// bf16, of 4 for f32.

vdir.program @bf16(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @+1 {{load: column offset 4 is not 16-byte aligned}}
  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @f32(%a: !vdir.buffer<4x64xf32>) {
  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x8xf32>
  %s = vdir.store %t, %a[0, 6] : !vdir.tile<4x8xf32>, !vdir.buffer<4x64xf32>
  // expected-error @-1 {{store: column offset 6 is not 16-byte aligned}}
}
