// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// attn_block (family 11): p1 (the head dimension, 64 or 128) picks one of
// two copies. A block's rows are two halves of 64, each a partial state, then
// combined. Where 2 G is at most the group's 8 warps, a warp per half
// ("pairs": warp w < G the first half of head w, warp G + w its second, which
// leaves its partial state in the head's row before the group barrier, and
// the first half's warp combines); otherwise warp w takes heads w, w + 8, ...
// and runs both halves in turn. In a half, lane t scores rows first + t + 32 j
// (j < 2; -inf past p2, whose loads read row 0), the two dot products side by
// side in one loop over 16-byte chunks (q's chunk and the two rows' chunks
// loaded together) that start at chunk t (mod the row's chunks); max and sum
// are butterfly shuffles; p = ex2((s - m) * log2 e) with m replaced by 0 when
// it is -inf; then p[b] * v[b, :] for b in order, p[b] broadcast with
// shfl.idx. The combine: m = max of the halves', each half weighted by
// ex2((m_i - m) * log2 e). The row is [o, m, l, 0, 0], m and l and the padding
// written by lane 0.
// attn_merge (family 12): a thread per output element walks the states twice
// in order, skipping those whose mask is -inf, and the self state last when
// p3 has bit 2.

// CHECK-LABEL: $L_fam11_0:
// CHECK-NEXT: setp.eq.u32 [[D64:%p[0-9]+]], [[D:%r[0-9]+]], 64;
// CHECK-NEXT: @[[D64]] bra $L_attn_block_d64_0;
// CHECK-NEXT: setp.eq.u32 [[D128:%p[0-9]+]], [[D]], 128;
// CHECK-NEXT: @[[D128]] bra $L_attn_block_d128_0;
// CHECK-NEXT: bra.uni $L_attn_block_done_0;
// CHECK:      $L_attn_block_d128_0:
// CHECK-NEXT: shl.b32 [[TWOG:%r[0-9]+]], [[G:%r[0-9]+]], 1;
// CHECK-NEXT: setp.le.u32 [[PAIRS:%p[0-9]+]], [[TWOG]], 8;
// CHECK-NEXT: @[[PAIRS]] bra $L_attn_block_pairs128_0;
// CHECK:      $L_attn_block_row128_0:
// CHECK:      setp.lt.u32 [[V0:%p[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0, [[V0]];
// CHECK:      $L_attn_dot_{{[0-9]+}}:
// CHECK:      and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 15;
// CHECK:      ld.shared.v4.b32 {{.*}}
// CHECK-NEXT: add.u32
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}
// CHECK-NEXT: add.u32
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}
// CHECK-NOT:  ld.shared.v4.b32
// CHECK:      fma.rn.f32
// CHECK:      $L_attn_dot_end_{{[0-9]+}}:
// CHECK-NEXT: add.rn.f32 [[DOT:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}};
// CHECK-NEXT: ld.shared.f32 [[BIAS:%f[0-9]+]], [{{%r[0-9]+}}];
// CHECK-NEXT: mul.rn.f32 [[SC:%f[0-9]+]], {{%f[0-9]+}}, [[DOT]];
// CHECK-NEXT: add.rn.f32 [[SB:%f[0-9]+]], [[SC]], [[BIAS]];
// CHECK-NEXT: selp.f32 [[S0:%f[0-9]+]], [[SB]], 0fFF800000, [[V0]];
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31, 4294967295;
// CHECK-NEXT: max.f32
// CHECK:      setp.eq.f32 [[EMPTY:%p[0-9]+]], [[M0:%f[0-9]+]], 0fFF800000;
// CHECK-NEXT: selp.f32 [[SHIFT:%f[0-9]+]], 0f00000000, [[M0]], [[EMPTY]];
// CHECK-NEXT: sub.rn.f32 [[X:%f[0-9]+]], [[S0]], [[SHIFT]];
// CHECK-NEXT: mul.rn.f32 [[Y:%f[0-9]+]], [[X]], 0f3FB8AA3B;
// CHECK-NEXT: ex2.approx.ftz.f32 {{%f[0-9]+}}, [[Y]];
// CHECK:      $L_attn_pv128_0:
// CHECK:      shfl.sync.idx.b32
// CHECK:      $L_attn_pv128_end_0:
// CHECK:      setp.eq.f32 {{%p[0-9]+}}, [[M1:%f[0-9]+]], 0fFF800000;
// CHECK:      $L_attn_pv128_end_1:
// CHECK-NEXT: max.f32 [[M:%f[0-9]+]], [[M0]], [[M1]];
// CHECK-NEXT: setp.eq.f32 [[NONE:%p[0-9]+]], [[M]], 0fFF800000;
// CHECK-NEXT: selp.f32 [[SH:%f[0-9]+]], 0f00000000, [[M]], [[NONE]];
// CHECK-NEXT: sub.rn.f32 {{%f[0-9]+}}, [[M0]], [[SH]];
// CHECK-NEXT: mul.rn.f32
// CHECK-NEXT: ex2.approx.ftz.f32
// CHECK-NEXT: sub.rn.f32 {{%f[0-9]+}}, [[M1]], [[SH]];
// CHECK:      mad.lo.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 528, {{%r[0-9]+}};
// CHECK-NEXT: mad.lo.u32
// CHECK-COUNT-4: st.shared.f32 [{{%r[0-9]+}}{{(\+[0-9]+)?}}], {{%f[0-9]+}};
// CHECK-NEXT: setp.eq.u32 [[LANE0:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: @[[LANE0]] st.shared.f32 [{{%r[0-9]+}}+512], [[M]];
// CHECK-NEXT: @[[LANE0]] st.shared.f32 [{{%r[0-9]+}}+516], {{%f[0-9]+}};
// CHECK-NEXT: @[[LANE0]] st.shared.f32 [{{%r[0-9]+}}+520], 0f00000000;
// CHECK-NEXT: @[[LANE0]] st.shared.f32 [{{%r[0-9]+}}+524], 0f00000000;
// CHECK:      $L_attn_block_pairs128_0:
// CHECK-NEXT: setp.ge.u32 [[SECOND:%p[0-9]+]], [[W:%r[0-9]+]], [[G]];
// CHECK-NEXT: sub.u32 [[WG:%r[0-9]+]], [[W]], [[G]];
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, [[WG]], [[W]], [[SECOND]];
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, 64, 0, [[SECOND]];
// CHECK:      bra $L_attn_block_idle_{{[0-9]+}};
// CHECK:      bra $L_attn_block_handed_{{[0-9]+}};
// CHECK:      $L_attn_block_idle_{{[0-9]+}}:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK:      bra $L_attn_block_combined_{{[0-9]+}};
// CHECK:      ld.shared.f32 {{%f[0-9]+}}, [{{%r[0-9]+}}+512];
// CHECK:      max.f32
// CHECK:      $L_attn_block_combined_{{[0-9]+}}:
// CHECK-LABEL: $L_fam12_0:
// CHECK:      $L_attn_merge_max_0:
// CHECK:      setp.eq.f32 [[SKIP:%p[0-9]+]], {{%f[0-9]+}}, 0fFF800000;
// CHECK-NEXT: @[[SKIP]] bra $L_attn_merge_max_skip_0;
// CHECK:      max.f32
// CHECK:      $L_attn_merge_max_end_0:
// CHECK:      and.b32 [[HAS:%r[0-9]+]], {{%r[0-9]+}}, 2;
// CHECK-NEXT: setp.eq.u32 [[NOSELF:%p[0-9]+]], [[HAS]], 0;
// CHECK-NEXT: @[[NOSELF]] bra $L_attn_merge_self_max_skip_0;
// CHECK:      $L_attn_merge_sum_0:
// CHECK:      ex2.approx.ftz.f32
// CHECK:      $L_attn_merge_sum_end_0:
// CHECK:      bra $L_attn_merge_self_sum_skip_0;
// CHECK:      $L_attn_merge_self_sum_skip_0:
// CHECK-NEXT: div.rn.f32
// CHECK:      cvt.rn.bf16.f32

vdir.program @attention(%q: !vdir.buffer<4x128xbf16>, %k: !vdir.buffer<64x128xbf16>, %v: !vdir.buffer<64x128xbf16>, %bias: !vdir.buffer<1x64xf32>, %mask: !vdir.buffer<1x4xf32>, %states: !vdir.buffer<4x132xf32>, %out: !vdir.buffer<4x128xbf16>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x128xbf16> -> !vdir.tile<4x128xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<64x128xbf16> -> !vdir.tile<64x128xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<64x128xbf16> -> !vdir.tile<64x128xbf16>
  %bt = vdir.load %bias[0, 0] : !vdir.buffer<1x64xf32> -> !vdir.tile<1x64xf32>
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 8.838835e-02 : f32} : (!vdir.tile<4x128xbf16>, !vdir.tile<64x128xbf16>, !vdir.tile<64x128xbf16>, !vdir.tile<1x64xf32>) -> !vdir.tile<4x132xf32>
  %s = vdir.store %st, %states[0, 0] : !vdir.tile<4x132xf32>, !vdir.buffer<4x132xf32>
  %all = vdir.load %states[0, 0] : !vdir.buffer<4x132xf32> -> !vdir.tile<4x132xf32>
  %mt = vdir.load %mask[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  %ot = vdir.compute attn_merge(%all, %mt) {groups = 1 : i64} : (!vdir.tile<4x132xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<1x128xbf16>
  %d = vdir.store %ot, %out[0, 0] : !vdir.tile<1x128xbf16>, !vdir.buffer<4x128xbf16>
}
