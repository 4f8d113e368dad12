// RUN: vdir-opt %S/../../examples/mlp.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/mlp.mlir --print-op-generic | vdir-opt | filecheck %s

// CHECK:      vdir.program @mlp(%h: !vdir.buffer<1x2048xbf16>, %g: !vdir.buffer<1x2048xbf16>, %wg: !vdir.buffer<8192x2048xbf16>, %wu: !vdir.buffer<8192x2048xbf16>, %wd: !vdir.buffer<2048x8192xbf16>, %act: !vdir.buffer<1x8192xbf16>, %out: !vdir.buffer<1x2048xbf16>)
// CHECK:      %xn = vdir.compute rmsnorm(%ht, %gt) {eps = 1.000000e-05 : f32} on compute
// CHECK:      vdir.repeat %j = 0 to 512 {
// CHECK:        %gate = vdir.compute gemv(%wgt, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
// CHECK-NEXT:   %up = vdir.compute gemv(%wut, %xn) on compute
// CHECK-NEXT:   %a = vdir.compute silu_mul(%gate, %up) on compute
// CHECK-NEXT:   %a_saved = vdir.store %a, %act[0, %rj] on store : !vdir.tile<1x16xbf16>, !vdir.buffer<1x8192xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: %act0 = vdir.load %act[0, 0] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
// CHECK-NEXT: %act1 = vdir.load %act[0, 4096] on load : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
// CHECK-NEXT: vdir.repeat %k = 0 to 256 {
// CHECK:        %dp0 = vdir.compute gemv(%wd0, %act0) on compute : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
// CHECK-NEXT:   %wd1 = vdir.load %wd[%rk, 4096] on load : {{.*}}
// CHECK-NEXT:   %d = vdir.compute gemv(%wd1, %act1, %dp0) on compute : {{.*}} -> !vdir.tile<1x8xbf16>
// CHECK-NEXT:   %res = vdir.load %h[0, %rk] on load : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x8xbf16>
// CHECK-NEXT:   %o = vdir.compute add(%d, %res) on compute
// CHECK-NEXT:   %o_saved = vdir.store %o, %out[0, %rk] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<1x2048xbf16>
