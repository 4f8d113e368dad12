// RUN: vdir-opt %S/../../examples/split_k_gemv.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/split_k_gemv.mlir --print-op-generic | vdir-opt | filecheck %s

// CHECK:      vdir.program @split_k_gemv(%w: !vdir.buffer<1024x8192xbf16>, %x: !vdir.buffer<1x8192xbf16>, %partials: !vdir.buffer<8x1024xf32>, %y: !vdir.buffer<1x1024xbf16>) attributes {target = "h200"} {
// CHECK-NEXT:   vdir.repeat %s = 0 to 8 {
// CHECK-NEXT:     %k = affine.apply affine_map<(d0) -> ((d0 * 1024))> (%s)
// CHECK-NEXT:     %xs = vdir.load %x[0, %k] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x1024xbf16>
// CHECK-NEXT:     vdir.repeat %i = 0 to 32 {
// CHECK-NEXT:       %r = affine.apply affine_map<(d0) -> ((d0 * 32))> (%i)
// CHECK-NEXT:       %wt = vdir.load %w[%r, %k] on load : !vdir.buffer<1024x8192xbf16> -> !vdir.tile<32x1024xbf16>
// CHECK-NEXT:       %pt = vdir.compute gemv(%wt, %xs) on compute : (!vdir.tile<32x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x32xf32>
// CHECK-NEXT:       %stored = vdir.store %pt, %partials[%s, %r] on store : !vdir.tile<1x32xf32>, !vdir.buffer<8x1024xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   vdir.repeat %j = 0 to 4 {
// CHECK-NEXT:     %c = affine.apply affine_map<(d0) -> ((d0 * 256))> (%j)
// CHECK-NEXT:     %parts = vdir.load %partials[0, %c] on load : !vdir.buffer<8x1024xf32> -> !vdir.tile<8x256xf32>
// CHECK-NEXT:     %yt = vdir.compute sum_rows(%parts) on compute : (!vdir.tile<8x256xf32>) -> !vdir.tile<1x256xbf16>
// CHECK-NEXT:     %done = vdir.store %yt, %y[0, %c] on store : !vdir.tile<1x256xbf16>, !vdir.buffer<1x1024xbf16>
// CHECK-NEXT:   }
// CHECK-NEXT: }
