// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=ONLY

// A gemv-only program emits the gemv body (family 1) and no other family.
// The body: rows split over the compute warps (G warps per row), lanes read
// 16-byte chunks of the weight row and of x with ld.shared.v4.b32, widen the
// bf16 pairs exactly (shl 16 / and 0xffff0000, then mov.b32 to f32),
// accumulate with fma.rn.f32 into four accumulators (main loop unrolled 4
// chunks, 512 bytes apart; a one-chunk tail), reduce the warp with a
// shfl.sync.bfly butterfly, combine split rows through the partials scratch
// (base + 512) and let the row's first warp run the epilogue, every lane
// with the same sum, which rounds once with cvt.rn.bf16.f32. Warps with
// whole rows run four (then two) passes' rows at once, reading x once for
// them and reducing them in one reduce-scatter, one epilogue. Every
// branch of the row loop is bra.uni: the chunk loops count the group's first
// chunk, the same in every lane (lane l reads chunk jb + l), and in the last
// group a lane past the warp's chunks reads chunk jb and adds zeros. A tile
// of eight rows (the narrow tiles of long rows) runs as one row block.

// CHECK:      mov.u32 [[BASE:%r[0-9]+]], vdir_smem;
// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], [[FAM]], 1;
// CHECK-NEXT: @[[P]] bra.uni $L_fam1_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;

// CHECK-LABEL: $L_fam1_0:
// A tile of exactly 8 rows runs as one row block (placed after the row loop).
// CHECK:      setp.eq.u32 [[B8:%p[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: @[[B8]] bra.uni $L_gemv_block_0;
// Work split: a tile of the rows and K of the last gemv the group ran takes
// that gemv's split, kept in registers made before the loop
// (sched-compute.mlir); otherwise G = 8 / max(min(R, 8), 1) warps per row,
// picked among the classes 8, 4, 2, 1 by comparisons; the quantities of
// each class are shifts (divisions by constants): no division instruction in
// the kernel. The split worked out is kept for the next gemv.
// CHECK:      setp.eq.u32 [[SAMER:%p[0-9]+]], [[R:%r[0-9]+]], [[KEPTR:%r[0-9]+]];
// CHECK-NEXT: setp.eq.u32 [[SAMEK:%p[0-9]+]], [[K:%r[0-9]+]], [[KEPTK:%r[0-9]+]];
// CHECK-NEXT: and.pred [[SAME:%p[0-9]+]], [[SAMER]], [[SAMEK]];
// CHECK-NEXT: @[[SAME]] bra.uni $L_gemv_split_kept_0;
// CHECK:      min.u32 [[RM:%r[0-9]+]], [[R]], 8;
// CHECK-NEXT: max.u32 [[RM1:%r[0-9]+]], [[RM]], 1;
// CHECK-NEXT: setp.le.u32 [[C8:%p[0-9]+]], [[RM1]], 1;
// CHECK-NEXT: setp.le.u32 [[C4:%p[0-9]+]], [[RM1]], 2;
// CHECK-NEXT: setp.le.u32 [[C2:%p[0-9]+]], [[RM1]], 4;
// CHECK-NEXT: mov.u32 [[G1:%r[0-9]+]], 1;
// CHECK-NEXT: selp.u32 [[G2:%r[0-9]+]], 2, [[G1]], [[C2]];
// CHECK-NEXT: selp.u32 [[G4:%r[0-9]+]], 4, [[G2]], [[C4]];
// CHECK-NEXT: selp.u32 [[G:%r[0-9]+]], 8, [[G4]], [[C8]];
// CHECK:      mov.u32 [[KEPTR]], [[R]];
// CHECK-NEXT: mov.u32 [[KEPTK]], [[K]];
// CHECK-NEXT: mov.u32 [[KEPTG:%r[0-9]+]], [[G]];
// CHECK:      $L_gemv_split_kept_0:
// CHECK:      setp.gt.u32 [[SPLIT:%p[0-9]+]], [[KEPTG]], 1;

// Four passes at once while each warp has whole rows (G = 1) and four
// passes' rows remain: the four chunks of the four rows, then x once. Their
// sums leave the warp in one reduce-scatter: across lane bit 16 a lane
// keeps two rows and sends the other two, across bit 8 one and one, then
// the butterfly's last three steps; lane l holds row l >> 3, and the warp
// runs one epilogue (one rounding), each lane for its row.
// CHECK:      $L_gemv_quad_0:
// CHECK-NEXT: @[[SPLIT]] bra.uni $L_gemv_quad_done_0;
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 4;
// CHECK:      $L_gemv_main_0:
// CHECK-COUNT-16: ld.shared.v4.b32 {{.*}}, {{\[}}{{%r[0-9]+}}{{(\+512|\+1024|\+1536)?}}];
// CHECK-NEXT: ld.shared.v4.b32 {[[QX:%r[0-9]+]], {{.*}}}, {{\[}}[[QXROW:%r[0-9]+]]];
// CHECK:      $L_gemv_tail_end_0:
// CHECK:      and.b32 [[Q16:%r[0-9]+]], [[LANE4:%r[0-9]+]], 16;
// CHECK-NEXT: setp.ne.u32 [[QU16:%p[0-9]+]], [[Q16]], 0;
// CHECK-NEXT: selp.f32 [[QK0:%f[0-9]+]], [[QC:%f[0-9]+]], [[QA:%f[0-9]+]], [[QU16]];
// CHECK-NEXT: selp.f32 [[QS0:%f[0-9]+]], [[QA]], [[QC]], [[QU16]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[QG0:%f[0-9]+]], [[QS0]], 16, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 {{%f[0-9]+}}, [[QK0]], [[QG0]];
// CHECK-NEXT: selp.f32
// CHECK-NEXT: selp.f32
// CHECK-NEXT: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[LANE4]], 8;
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 8, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 4, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 2, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 1, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: shr.u32 {{%r[0-9]+}}, [[LANE4]], 3;
// CHECK-NOT:  bra
// CHECK:      cvt.rn.bf16.f32
// CHECK-NOT:  {{bra|cvt.rn.bf16.f32}}
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 4;
// CHECK-NEXT: bra.uni $L_gemv_quad_0;
// CHECK-NEXT: $L_gemv_quad_done_0:

// Then paired passes while two passes' rows remain: the four chunks of both
// rows, then x once; each row keeps its own accumulators (the same order as
// one row alone); one step across lane bit 16 scatters the two rows (lane l
// holds row l >> 4), and the warp runs one epilogue for both.
// CHECK:      $L_gemv_pair_0:
// CHECK-NEXT: @[[SPLIT]] bra.uni $L_gemv_pair_done_0;
// CHECK:      mov.u32 [[JB:%r[0-9]+]], [[SEG_START:%r[0-9]+]];
// CHECK-NEXT: $L_gemv_main_1:
// CHECK-NEXT: setp.ge.u32 [[MAIN_DONE:%p[0-9]+]], [[JB]], {{%r[0-9]+}};
// CHECK-NEXT: @[[MAIN_DONE]] bra.uni $L_gemv_main_end_1;
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[JB]], [[LANE:%r[0-9]+]];
// CHECK:      ld.shared.v4.b32 {[[PW1:%r[0-9]+]], {{.*}}}, {{\[}}[[ROW1:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW1]]+512];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW1]]+1024];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW1]]+1536];
// CHECK-NEXT: ld.shared.v4.b32 {[[PW2:%r[0-9]+]], {{.*}}}, {{\[}}[[ROW2:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW2]]+512];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW2]]+1024];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[ROW2]]+1536];
// CHECK-NEXT: ld.shared.v4.b32 {[[PX:%r[0-9]+]], {{.*}}}, {{\[}}[[PXROW:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[PXROW]]+512];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[PXROW]]+1024];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[PXROW]]+1536];
// CHECK-NEXT: shl.b32 [[PW1LO:%r[0-9]+]], [[PW1]], 16;
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[PW1]], 4294901760;
// CHECK-NEXT: mov.b32 [[PF1:%f[0-9]+]], [[PW1LO]];
// CHECK-NEXT: mov.b32 {{%f[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: shl.b32 [[PW2LO:%r[0-9]+]], [[PW2]], 16;
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[PW2]], 4294901760;
// CHECK-NEXT: mov.b32 [[PF2:%f[0-9]+]], [[PW2LO]];
// CHECK-NEXT: mov.b32 {{%f[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: shl.b32 [[PXLO:%r[0-9]+]], [[PX]], 16;
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[PX]], 4294901760;
// CHECK-NEXT: mov.b32 [[PFX:%f[0-9]+]], [[PXLO]];
// CHECK-NEXT: mov.b32 {{%f[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: fma.rn.f32 [[PA:%f[0-9]+]], [[PF1]], [[PFX]], [[PA]];
// CHECK-NEXT: fma.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}};
// CHECK-NEXT: fma.rn.f32 [[PB:%f[0-9]+]], [[PF2]], [[PFX]], [[PB]];
// The last group: a lane past the end (chunk jb + lane >= the warp's end)
// reads chunk jb, and its weight words and x values become zeros.
// CHECK:      $L_gemv_tail_1:
// CHECK-NEXT: setp.ge.u32 [[TAIL_DONE:%p[0-9]+]], [[JB]], [[SEG_END:%r[0-9]+]];
// CHECK-NEXT: @[[TAIL_DONE]] bra.uni $L_gemv_tail_end_1;
// CHECK-NEXT: add.u32 [[J:%r[0-9]+]], [[JB]], [[LANE]];
// CHECK-NEXT: setp.lt.u32 [[KEEP:%p[0-9]+]], [[J]], [[SEG_END]];
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, [[J]], [[JB]], [[KEEP]];
// CHECK:      selp.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0, [[KEEP]];
// CHECK-NEXT: selp.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0, [[KEEP]];
// CHECK:      selp.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, 0f00000000, [[KEEP]];
// CHECK-NEXT: selp.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, 0f00000000, [[KEEP]];
// CHECK:      $L_gemv_tail_end_1:
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31, 4294967295;
// CHECK-NOT:  shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16,
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 1, 31, 4294967295;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: shr.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 4;
// CHECK-NOT:  bra
// CHECK:      cvt.rn.bf16.f32
// CHECK-NOT:  {{bra|cvt.rn.bf16.f32}}
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2;
// CHECK-NEXT: bra.uni $L_gemv_pair_0;
// CHECK-NEXT: $L_gemv_pair_done_0:

// The passes left, one row per warp per pass.
// CHECK-NEXT: $L_gemv_pass_0:
// CHECK-COUNT-4: mov.f32 %f{{[0-9]+}}, 0f00000000;
// CHECK:      $L_gemv_main_2:
// CHECK:      ld.shared.v4.b32 {[[WA:%r[0-9]+]], {{.*}}}, {{\[}}[[WROW:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[WROW]]+512];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[WROW]]+1024];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[WROW]]+1536];
// CHECK-NEXT: ld.shared.v4.b32 {[[XA:%r[0-9]+]], {{.*}}}, {{\[}}[[XROW:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[XROW]]+512];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[XROW]]+1024];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[XROW]]+1536];
// CHECK-NEXT: shl.b32 [[WLO:%r[0-9]+]], [[WA]], 16;
// CHECK-NEXT: and.b32 [[WHI:%r[0-9]+]], [[WA]], 4294901760;
// CHECK-NEXT: mov.b32 [[FW0:%f[0-9]+]], [[WLO]];
// CHECK-NEXT: mov.b32 [[FW1:%f[0-9]+]], [[WHI]];
// CHECK-NEXT: shl.b32 [[XLO:%r[0-9]+]], [[XA]], 16;
// CHECK-NEXT: and.b32 [[XHI:%r[0-9]+]], [[XA]], 4294901760;
// CHECK-NEXT: mov.b32 [[FX0:%f[0-9]+]], [[XLO]];
// CHECK-NEXT: mov.b32 [[FX1:%f[0-9]+]], [[XHI]];
// CHECK-NEXT: fma.rn.f32 [[ACC0:%f[0-9]+]], [[FW0]], [[FX0]], [[ACC0]];
// CHECK-NEXT: fma.rn.f32 [[ACC1:%f[0-9]+]], [[FW1]], [[FX1]], [[ACC1]];
// CHECK:      fma.rn.f32 [[ACC2:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}}, [[ACC2]];
// CHECK-NEXT: fma.rn.f32 [[ACC3:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}}, [[ACC3]];
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 128;
// CHECK-NEXT: bra.uni $L_gemv_main_2;
// CHECK:      $L_gemv_tail_2:
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 32;
// CHECK-NEXT: bra.uni $L_gemv_tail_2;

// Reduction: the four accumulators, then the butterfly over the warp.
// CHECK:      add.rn.f32 [[S01:%f[0-9]+]], [[ACC0]], [[ACC1]];
// CHECK-NEXT: add.rn.f32 [[S23:%f[0-9]+]], [[ACC2]], [[ACC3]];
// CHECK-NEXT: add.rn.f32 [[S:%f[0-9]+]], [[S01]], [[S23]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[O16:%f[0-9]+]], [[S]], 16, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[S16:%f[0-9]+]], [[S]], [[O16]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[O8:%f[0-9]+]], [[S16]], 8, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[S8:%f[0-9]+]], [[S16]], [[O8]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[O4:%f[0-9]+]], [[S8]], 4, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[S4:%f[0-9]+]], [[S8]], [[O4]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[O2:%f[0-9]+]], [[S4]], 2, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[S2:%f[0-9]+]], [[S4]], [[O2]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[O1:%f[0-9]+]], [[S2]], 1, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[S1:%f[0-9]+]], [[S2]], [[O1]];

// Split rows: partials in two alternating buffers, summed in fixed order.
// CHECK:      @![[SPLIT]] bra.uni $L_gemv_nosplit_0;
// CHECK-NEXT: and.b32 [[BUF:%r[0-9]+]], {{%r[0-9]+}}, 1;
// CHECK-NEXT: mad.lo.u32 [[BB:%r[0-9]+]], [[BUF]], 32, [[BASE]];
// CHECK-NEXT: mad.lo.u32 [[SL:%r[0-9]+]], {{%r[0-9]+}}, 4, [[BB]];
// CHECK-NEXT: @{{%p[0-9]+}} st.shared.f32 {{\[}}[[SL]]+512], [[S1]];
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK:      $L_gemv_sum_0:
// CHECK:      ld.shared.f32 [[PART:%f[0-9]+]], [{{%r[0-9]+}}+512];
// CHECK-NEXT: add.rn.f32 [[TOT:%f[0-9]+]], [[TOT]], [[PART]];

// Epilogue: one rounding to bf16.
// CHECK:      $L_gemv_nosplit_0:
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_gemv_epi_skip_0;
// CHECK:      cvt.rn.bf16.f32 [[H:%h[0-9]+]], {{%f[0-9]+}};
// CHECK-NEXT: @!{{%p[0-9]+}} st.shared.b16 [{{%r[0-9]+}}], [[H]];
// The row block: every warp takes a slice of K for all eight rows, its
// chunk loop reading two chunks of each of the eight rows, then the same
// chunks of x once for them all; each warp's eight partials go to the
// row-block scratch (base + 768, 32 bytes per warp), and after the group
// barrier the warp of row r adds column r in warp order and runs the
// epilogue: one rounding.
// CHECK:      $L_gemv_block_0:
// CHECK:      $L_gemv_main_3:
// CHECK-COUNT-16: ld.shared.v4.b32 {{.*}}, {{\[}}{{%r[0-9]+}}{{(\+512)?}}];
// CHECK-NEXT: ld.shared.v4.b32 {[[BX:%r[0-9]+]], {{.*}}}, {{\[}}[[BXROW:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[BXROW]]+512];
// CHECK-NEXT: shl.b32
// CHECK:      $L_gemv_tail_3:
// CHECK:      $L_gemv_tail_end_3:
// The eight rows leave the warp in one reduce-scatter (four, two and one
// shuffles across lane bits 16, 8 and 4, then two more): lane l holds row
// l >> 2, and the first lane of each row writes its partial.
// CHECK-COUNT-4: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31, 4294967295;
// CHECK-COUNT-2: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 8, 31, 4294967295;
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 4, 31, 4294967295;
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 2, 31, 4294967295;
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 1, 31, 4294967295;
// CHECK-NEXT: add.rn.f32 [[BS:%f[0-9]+]],
// CHECK-NEXT: shr.u32 [[SLOT:%r[0-9]+]], {{%r[0-9]+}}, 2;
// CHECK:      mad.lo.u32 [[MINE:%r[0-9]+]], [[SLOT]], 4,
// CHECK-NEXT: and.b32 [[FIRST:%r[0-9]+]], {{%r[0-9]+}}, 3;
// CHECK-NEXT: setp.eq.u32 [[L0:%p[0-9]+]], [[FIRST]], 0;
// CHECK-NEXT: @[[L0]] st.shared.f32 {{\[}}[[MINE]]+768], [[BS]];
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK:      ld.shared.f32 [[P0:%f[0-9]+]], {{\[}}[[COL:%r[0-9]+]]+768];
// CHECK-NEXT: add.rn.f32 [[T:%f[0-9]+]], [[T]], [[P0]];
// CHECK-NEXT: ld.shared.f32 [[P1:%f[0-9]+]], {{\[}}[[COL]]+800];
// CHECK-NEXT: add.rn.f32 [[T]], [[T]], [[P1]];
// CHECK:      ld.shared.f32 [[P7:%f[0-9]+]], {{\[}}[[COL]]+992];
// CHECK-NEXT: add.rn.f32 [[T]], [[T]], [[P7]];
// CHECK:      cvt.rn.bf16.f32
// CHECK:      $L_gemv_done_0:
// CHECK-NEXT: bra.uni $L_cp_body_done_0;

// No other family, no exp, sqrt or bf16 widening through cvt.
// ONLY-NOT:   $L_fam{{[2-9]}}_
// ONLY-NOT:   ex2.approx
// ONLY-NOT:   sqrt.rn
// ONLY-NOT:   cvt.f32.bf16
// ONLY-NOT:   {{div|rem}}.u32

vdir.program @gemv(%w: !vdir.buffer<32x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x32xbf16>
}
