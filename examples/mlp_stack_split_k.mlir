// mlp_stack_split_k: the 16 MLP blocks of examples/mlp_stack.mlir with each
// down projection split along K across the SMs (build_split_k_mlp_stack).
//
// The down weights come transposed: row l * 8192 + i of wdt is column i of
// layer l's Wd. Each SM group of 4 activation tiles (16 rows of the
// intermediate size each: gate, up, silu_mul) multiplies its activations by
// the matching rows of wdt (vecmat, chained through an f32 partial) and adds
// the partial row, in i64 fixed point, into row l of the scratch accumulator
// acc with one reducing store. The adds are exact, so they need no order
// among themselves and the sum is the same bits whatever order they land in.
// Every SM that needs the next residual row makes it (fixed_add of acc[l]
// and hs[l]); one of them also stores it to hs[l + 1]. A layer hands over
// one row among the SMs instead of two (the act row and the residual row).
// The program first clears acc (a zeros tile stored to each row), so each
// launch starts from zero.

builtin.module {
  vdir.program @mlp_stack_split_k(%hs: !vdir.buffer<17x2048xbf16>, %g: !vdir.buffer<16x2048xbf16>, %wg: !vdir.buffer<131072x2048xbf16>, %wu: !vdir.buffer<131072x2048xbf16>, %wdt: !vdir.buffer<131072x2048xbf16>, %acc: !vdir.buffer<16x2048xi64> scratch) attributes {target = "h200"} {
    %zero = vdir.compute zeros() {rows = 1 : i64, cols = 2048 : i64} on compute : () -> !vdir.tile<1x2048xi64>
    vdir.repeat %c = 0 to 16 {
      %cleared = vdir.store %zero, %acc[%c, 0] on store : !vdir.tile<1x2048xi64>, !vdir.buffer<16x2048xi64>
    }
    %h0 = vdir.load %hs[0, 0] on load : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %gt = vdir.load %g[0, 0] on load : !vdir.buffer<16x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %xn = vdir.compute rmsnorm(%h0, %gt) {eps = 1.000000e-05 : f32} on compute : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
    vdir.repeat %q = 0 to 128 {
      %rq = affine.apply affine_map<(d0) -> ((d0 * 64))> (%q)
      %wgt_t0 = vdir.load %wg[%rq, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %wut_t0 = vdir.load %wu[%rq, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %gate_t0 = vdir.compute gemv(%wgt_t0, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %up_t0 = vdir.compute gemv(%wut_t0, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %a_t0 = vdir.compute silu_mul(%gate_t0, %up_t0) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
      %wdt_t0 = vdir.load %wdt[%rq, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %dp_t0 = vdir.compute vecmat(%a_t0, %wdt_t0) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>) -> !vdir.tile<1x2048xf32>
      %wrow = affine.apply affine_map<(d0) -> ((d0 + 16))> (%rq)
      %wgt_t1 = vdir.load %wg[%wrow, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %wut_t1 = vdir.load %wu[%wrow, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %gate_t1 = vdir.compute gemv(%wgt_t1, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %up_t1 = vdir.compute gemv(%wut_t1, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %a_t1 = vdir.compute silu_mul(%gate_t1, %up_t1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
      %wdt_t1 = vdir.load %wdt[%wrow, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %dp_t1 = vdir.compute vecmat(%a_t1, %wdt_t1, %dp_t0) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xf32>
      %wrow_1 = affine.apply affine_map<(d0) -> ((d0 + 32))> (%rq)
      %wgt_t2 = vdir.load %wg[%wrow_1, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %wut_t2 = vdir.load %wu[%wrow_1, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %gate_t2 = vdir.compute gemv(%wgt_t2, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %up_t2 = vdir.compute gemv(%wut_t2, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %a_t2 = vdir.compute silu_mul(%gate_t2, %up_t2) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
      %wdt_t2 = vdir.load %wdt[%wrow_1, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %dp_t2 = vdir.compute vecmat(%a_t2, %wdt_t2, %dp_t1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xf32>
      %wrow_2 = affine.apply affine_map<(d0) -> ((d0 + 48))> (%rq)
      %wgt_t3 = vdir.load %wg[%wrow_2, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %wut_t3 = vdir.load %wu[%wrow_2, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %gate_t3 = vdir.compute gemv(%wgt_t3, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %up_t3 = vdir.compute gemv(%wut_t3, %xn) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %a_t3 = vdir.compute silu_mul(%gate_t3, %up_t3) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
      %wdt_t3 = vdir.load %wdt[%wrow_2, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %dsum = vdir.compute vecmat(%a_t3, %wdt_t3, %dp_t2) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xi64>
      %added = vdir.store %dsum, %acc[0, 0] reduce add on store : !vdir.tile<1x2048xi64>, !vdir.buffer<16x2048xi64>
    }
    vdir.repeat %l = 1 to 16 {
      %prev = affine.apply affine_map<(d0) -> ((d0 + -1))> (%l)
      %total = vdir.load %acc[%prev, 0] on load : !vdir.buffer<16x2048xi64> -> !vdir.tile<1x2048xi64>
      %before = vdir.load %hs[%prev, 0] on load : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x2048xbf16>
      %ht = vdir.compute fixed_add(%total, %before) on compute : (!vdir.tile<1x2048xi64>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
      %h_saved = vdir.store %ht, %hs[%l, 0] on store : !vdir.tile<1x2048xbf16>, !vdir.buffer<17x2048xbf16>
      %gt_1 = vdir.load %g[%l, 0] on load : !vdir.buffer<16x2048xbf16> -> !vdir.tile<1x2048xbf16>
      %xn_1 = vdir.compute rmsnorm(%ht, %gt_1) {eps = 1.000000e-05 : f32} on compute : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
      %lrow = affine.apply affine_map<(d0) -> ((d0 * 8192))> (%l)
      vdir.repeat %q_1 = 0 to 128 {
        %rq_1 = affine.apply affine_map<(d0) -> ((d0 * 64))> (%q_1)
        %wrow_3 = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%lrow, %rq_1)
        %wgt_t0_1 = vdir.load %wg[%wrow_3, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %wut_t0_1 = vdir.load %wu[%wrow_3, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %gate_t0_1 = vdir.compute gemv(%wgt_t0_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %up_t0_1 = vdir.compute gemv(%wut_t0_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %a_t0_1 = vdir.compute silu_mul(%gate_t0_1, %up_t0_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
        %wdt_t0_1 = vdir.load %wdt[%wrow_3, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %dp_t0_1 = vdir.compute vecmat(%a_t0_1, %wdt_t0_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>) -> !vdir.tile<1x2048xf32>
        %wrow_4 = affine.apply affine_map<(d0, d1) -> (((d0 + d1) + 16))> (%lrow, %rq_1)
        %wgt_t1_1 = vdir.load %wg[%wrow_4, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %wut_t1_1 = vdir.load %wu[%wrow_4, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %gate_t1_1 = vdir.compute gemv(%wgt_t1_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %up_t1_1 = vdir.compute gemv(%wut_t1_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %a_t1_1 = vdir.compute silu_mul(%gate_t1_1, %up_t1_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
        %wdt_t1_1 = vdir.load %wdt[%wrow_4, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %dp_t1_1 = vdir.compute vecmat(%a_t1_1, %wdt_t1_1, %dp_t0_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xf32>
        %wrow_5 = affine.apply affine_map<(d0, d1) -> (((d0 + d1) + 32))> (%lrow, %rq_1)
        %wgt_t2_1 = vdir.load %wg[%wrow_5, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %wut_t2_1 = vdir.load %wu[%wrow_5, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %gate_t2_1 = vdir.compute gemv(%wgt_t2_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %up_t2_1 = vdir.compute gemv(%wut_t2_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %a_t2_1 = vdir.compute silu_mul(%gate_t2_1, %up_t2_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
        %wdt_t2_1 = vdir.load %wdt[%wrow_5, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %dp_t2_1 = vdir.compute vecmat(%a_t2_1, %wdt_t2_1, %dp_t1_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xf32>
        %wrow_6 = affine.apply affine_map<(d0, d1) -> (((d0 + d1) + 48))> (%lrow, %rq_1)
        %wgt_t3_1 = vdir.load %wg[%wrow_6, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %wut_t3_1 = vdir.load %wu[%wrow_6, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %gate_t3_1 = vdir.compute gemv(%wgt_t3_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %up_t3_1 = vdir.compute gemv(%wut_t3_1, %xn_1) on compute : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
        %a_t3_1 = vdir.compute silu_mul(%gate_t3_1, %up_t3_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
        %wdt_t3_1 = vdir.load %wdt[%wrow_6, 0] on load : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
        %dsum_1 = vdir.compute vecmat(%a_t3_1, %wdt_t3_1, %dp_t2_1) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xi64>
        %added_1 = vdir.store %dsum_1, %acc[%l, 0] reduce add on store : !vdir.tile<1x2048xi64>, !vdir.buffer<16x2048xi64>
      }
    }
    %total_1 = vdir.load %acc[15, 0] on load : !vdir.buffer<16x2048xi64> -> !vdir.tile<1x2048xi64>
    %before_1 = vdir.load %hs[15, 0] on load : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %ht_1 = vdir.compute fixed_add(%total_1, %before_1) on compute : (!vdir.tile<1x2048xi64>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
    %h_saved_1 = vdir.store %ht_1, %hs[16, 0] on store : !vdir.tile<1x2048xbf16>, !vdir.buffer<17x2048xbf16>
  }
}
