// RUN: vdir-opt %S/../../examples/rmsnorm_gemv.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/rmsnorm_gemv.mlir --print-op-generic | vdir-opt | filecheck %s

// CHECK:      vdir.program @rmsnorm_gemv(%x: !vdir.buffer<1x2048xbf16>, %g: !vdir.buffer<1x2048xbf16>, %w: !vdir.buffer<8192x2048xbf16>, %y: !vdir.buffer<1x8192xbf16>)
// CHECK:      %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.000000e-05 : f32} on compute : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
// CHECK-NEXT: vdir.repeat %i = 0 to 512 {
// CHECK-NEXT:   %r = affine.apply affine_map<(d0) -> ((d0 * 16))> (%i)
// CHECK-NEXT:   %wt = vdir.load %w[%r, 0] on load : !vdir.buffer<8192x2048xbf16> -> !vdir.tile<16x2048xbf16>
// CHECK-NEXT:   %yt = vdir.compute gemv(%wt, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
// CHECK-NEXT:   %done = vdir.store %yt, %y[0, %r] on store : !vdir.tile<1x16xbf16>, !vdir.buffer<1x8192xbf16>
// CHECK-NEXT: }
