// RUN: vdir-opt %S/../../examples/split_k_gemv_reduce.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/split_k_gemv_reduce.mlir --print-op-generic | vdir-opt | filecheck %s
// RUN: vdir-opt %S/../../examples/split_k_gemv_reduce.mlir -p vdir-pipeline -t isa | filecheck %s --check-prefix=ISA

// CHECK:      vdir.program @split_k_gemv_reduce(%w: !vdir.buffer<1024x8192xbf16>, %x: !vdir.buffer<1x8192xbf16>, %y: !vdir.buffer<1x1024xf32>) attributes {target = "h200"} {
// CHECK-NEXT:   vdir.repeat %s = 0 to 8 {
// CHECK-NEXT:     %k = affine.apply affine_map<(d0) -> ((d0 * 1024))> (%s)
// CHECK-NEXT:     %xs = vdir.load %x[0, %k] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x1024xbf16>
// CHECK-NEXT:     vdir.repeat %i = 0 to 32 {
// CHECK-NEXT:       %r = affine.apply affine_map<(d0) -> ((d0 * 32))> (%i)
// CHECK-NEXT:       %wt = vdir.load %w[%r, %k] on load : !vdir.buffer<1024x8192xbf16> -> !vdir.tile<32x1024xbf16>
// CHECK-NEXT:       %pt = vdir.compute gemv(%wt, %xs) on compute : (!vdir.tile<32x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x32xf32>
// CHECK-NEXT:       %added = vdir.store %pt, %y[0, %r] reduce add on store : !vdir.tile<1x32xf32>, !vdir.buffer<1x1024xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// y is read and written (inout); each store carries the flag.
// ISA:      // buffer 2: y 1x1024 f32 (inout)
// ISA:      store smem[{{[0-9]+}}] -> @y+{{[0-9]+}} [1 x 128B, stride 4096] reduce add
