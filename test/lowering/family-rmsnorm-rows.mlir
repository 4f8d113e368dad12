// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// rmsnorm_rows (family 10) normalises each row (head) of its tile on its
// own: a loop over the p0 rows, each the rmsnorm of one row (the sum of
// squares over the group, then the elementwise scale), and a group barrier
// after each row before the next reduction reuses the scratch words.

// CHECK-LABEL: $L_fam10_0:
// CHECK:      $L_rmsnorm_rows_0:
// CHECK:      mul.lo.u32 [[OFF:%r[0-9]+]], [[ROW:%r[0-9]+]], [[ROWB:%r[0-9]+]];
// CHECK:      $L_rms_sq_{{[0-9]+}}:
// CHECK:      fma.rn.f32
// CHECK:      barrier.sync 1, 256;
// CHECK:      sqrt.rn.f32
// CHECK:      $L_rmsnorm_rows_col_0:
// CHECK:      st.shared.b16
// CHECK:      $L_rmsnorm_rows_col_end_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK-NEXT: add.u32 [[ROW]], [[ROW]], 1;
// CHECK-NEXT: bra.uni $L_rmsnorm_rows_0;

vdir.program @qk_norm(%q: !vdir.buffer<8x128xbf16>, %g: !vdir.buffer<1x128xbf16>, %out: !vdir.buffer<8x128xbf16>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<8x128xbf16> -> !vdir.tile<8x128xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %n = vdir.compute rmsnorm_rows(%qt, %gt) {eps = 1.0e-06 : f32} : (!vdir.tile<8x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<8x128xbf16>
  %s = vdir.store %n, %out[0, 0] : !vdir.tile<8x128xbf16>, !vdir.buffer<8x128xbf16>
}
