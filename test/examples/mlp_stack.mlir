// RUN: vdir-opt %S/../../examples/mlp_stack.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/mlp_stack.mlir --print-op-generic | vdir-opt | filecheck %s

// CHECK:      vdir.program @mlp_stack(%hs: !vdir.buffer<17x2048xbf16>, %g: !vdir.buffer<16x2048xbf16>, %wg: !vdir.buffer<131072x2048xbf16>, %wu: !vdir.buffer<131072x2048xbf16>, %wd: !vdir.buffer<32768x8192xbf16>, %act: !vdir.buffer<16x8192xbf16>)
// CHECK-NEXT: vdir.repeat %l = 0 to 16 {
// CHECK-NEXT:   %ht = vdir.load %hs[%l, 0] on load : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x2048xbf16>
// CHECK-NEXT:   %gt = vdir.load %g[%l, 0] on load : !vdir.buffer<16x2048xbf16> -> !vdir.tile<1x2048xbf16>
// CHECK:        vdir.repeat %j = 0 to 512 {
// CHECK-NEXT:     %wrow = affine.apply affine_map<(d0, d1) -> (((d0 * 8192) + (d1 * 16)))> (%l, %j)
// CHECK:          %a_saved = vdir.store %a, %act[%l, %rj] on store
// CHECK:        %next = affine.apply affine_map<(d0) -> ((d0 + 1))> (%l)
// CHECK-NEXT:   vdir.repeat %k = 0 to 256 {
// CHECK-NEXT:     %drow = affine.apply affine_map<(d0, d1) -> (((d0 * 2048) + (d1 * 8)))> (%l, %k)
// CHECK:          %res = vdir.load %hs[%l, %rk] on load
// CHECK:          %o_saved = vdir.store %o, %hs[%next, %rk] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<17x2048xbf16>
