// RUN: vdir-opt %S/../../examples/gemv.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/gemv.mlir --print-op-generic | vdir-opt | filecheck %s

// CHECK:      vdir.program @gemv(%w: !vdir.buffer<8192x8192xbf16>, %x: !vdir.buffer<1x8192xbf16>, %y: !vdir.buffer<1x8192xbf16>) attributes {target = "h200"} {
// CHECK-NEXT:   %x0 = vdir.load %x[0, 0] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
// CHECK-NEXT:   %x1 = vdir.load %x[0, 4096] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
// CHECK-NEXT:   vdir.repeat %i = 0 to 1024 {
// CHECK-NEXT:     %r = affine.apply affine_map<(d0) -> ((d0 * 8))> (%i)
// CHECK-NEXT:     %w0 = vdir.load %w[%r, 0] on load : !vdir.buffer<8192x8192xbf16> -> !vdir.tile<8x4096xbf16>
// CHECK-NEXT:     %p0 = vdir.compute gemv(%w0, %x0) on compute : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
// CHECK-NEXT:     %w1 = vdir.load %w[%r, 4096] on load : !vdir.buffer<8192x8192xbf16> -> !vdir.tile<8x4096xbf16>
// CHECK-NEXT:     %yt = vdir.compute gemv(%w1, %x1, %p0) on compute : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
// CHECK-NEXT:     %done = vdir.store %yt, %y[0, %r] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8192xbf16>
// CHECK-NEXT:   }
// CHECK-NEXT: }
