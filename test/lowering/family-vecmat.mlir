// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// vecmat (family 18), x . w over the rows of the weights: each thread owns
// 8-column groups of the result; its eight totals start at the accumulator
// (guarded loads: p2's flag) or +0.0, take one fma per row and column in row
// order (x's element a broadcast b16 load, the weight row's 16 bytes one
// v4 load), and leave as two v4 stores. No shuffle and no barrier.

// CHECK-LABEL: $L_fam18_0:
// CHECK:      and.b32 [[FLAGS:%r[0-9]+]], {{%r[0-9]+}}, 1;
// CHECK:      $L_vecmat_0:
// CHECK:      @{{%p[0-9]+}} ld.shared.f32
// CHECK:      $L_vecmat_row_0:
// CHECK:      ld.shared.b16
// CHECK-NEXT: cvt.f32.bf16
// CHECK-NEXT: ld.shared.v4.b32
// CHECK-COUNT-8: fma.rn.f32
// CHECK-NOT:  shfl
// CHECK-NOT:  barrier
// CHECK:      $L_vecmat_row_end_0:
// CHECK:      st.shared.v4.f32
// CHECK-NEXT: st.shared.v4.f32
// CHECK:      $L_vecmat_end_0:

vdir.program @split_k_partial(%x: !vdir.buffer<1x16xbf16>, %w: !vdir.buffer<16x2048xbf16>, %acc: !vdir.buffer<1x2048xf32>, %y: !vdir.buffer<1x2048xf32>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x2048xbf16> -> !vdir.tile<16x2048xbf16>
  %at = vdir.load %acc[0, 0] : !vdir.buffer<1x2048xf32> -> !vdir.tile<1x2048xf32>
  %p = vdir.compute vecmat(%xt, %wt, %at) : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xf32>
  %s = vdir.store %p, %y[0, 0] : !vdir.tile<1x2048xf32>, !vdir.buffer<1x2048xf32>
}
