// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// rmsnorm_rope (family 17), Qwen3's QK-norm and RoPE as one micro-op:
// rmsnorm_rows' row loop writes the normed heads into the result tile (a
// group barrier after each row), then each thread rotates whole pairs
// (c, c + D/2) of it in place: two loads of the result tile, four table
// loads, both halves stored back. The tables' dtype is a flag (p2), so the
// pair loop comes in a bf16 and an f32 form.

// CHECK-LABEL: $L_fam17_0:
// CHECK:      $L_rmsnorm_rows_0:
// CHECK:      sqrt.rn.f32
// CHECK:      $L_rmsnorm_rows_col_0:
// CHECK:      $L_rmsnorm_rows_col_end_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK:      $L_rmsnorm_rope_bf16_0:
// CHECK:      ld.shared.b16
// CHECK:      ld.shared.b16
// CHECK:      neg.f32
// CHECK:      st.shared.b16
// CHECK:      st.shared.b16
// CHECK:      $L_rmsnorm_rope_f32_0:
// CHECK:      ld.shared.f32

vdir.program @qk_norm_rope(%q: !vdir.buffer<8x128xbf16>, %g: !vdir.buffer<1x128xbf16>, %cos: !vdir.buffer<1x128xf32>, %sin: !vdir.buffer<1x128xf32>, %out: !vdir.buffer<8x128xbf16>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<8x128xbf16> -> !vdir.tile<8x128xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %ct = vdir.load %cos[0, 0] : !vdir.buffer<1x128xf32> -> !vdir.tile<1x128xf32>
  %st = vdir.load %sin[0, 0] : !vdir.buffer<1x128xf32> -> !vdir.tile<1x128xf32>
  %n = vdir.compute rmsnorm_rope(%qt, %gt, %ct, %st) {eps = 1.0e-06 : f32} : (!vdir.tile<8x128xbf16>, !vdir.tile<1x128xbf16>, !vdir.tile<1x128xf32>, !vdir.tile<1x128xf32>) -> !vdir.tile<8x128xbf16>
  %s = vdir.store %n, %out[0, 0] : !vdir.tile<8x128xbf16>, !vdir.buffer<8x128xbf16>
}
