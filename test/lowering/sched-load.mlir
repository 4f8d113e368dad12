// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s

// The load engine (warp 0; the stream engine, its second copy, is checked
// at the end). It prefetches its instructions 8 deep into a
// shared-memory window with cp.async, keeps up to 8 loads in flight on the
// mbarrier ring, and issues a load only when the whole warp agrees
// (vote.sync.all) that its wait is satisfied: ((bitmap ^ parity) & mask) == 0
// read with ld.acquire.cta, and with a counter ld.acquire.gpu reaching epoch *
// count (modulo 2^32: the difference as an s32 is >= 0; the epoch is the
// launches done + 1, worked out after the prologue's barrier from the sync
// block, so the target is one mad: done * count + count). After a counter wait the lanes that issue the copy (counting down
// from lane 31, which no other load keeps busy) run fence.proxy.async.global
// first. Lane 0 arms the slot's mbarrier with expect_tx, the lanes issue
// cp.async.bulk.tensor (the region has a tensor map) or cp.async.bulk ...
// complete_tx into it; a non-load completes through the
// ring with a plain arrive. Loads retire in order when test_wait.parity
// reports the oldest slot landed, first thing in each trip of the loop: the
// slot's signal mask, held in the registers of the lane whose index is the
// slot, is toggled by that lane with atom.release.cta and its counter
// released with red.release.gpu (a release: no separate fence). An issue
// goes straight on to the oldest load's test, a retirement to the next
// oldest's test or, with nothing in flight, to the issue.

// CHECK:      ld.param.u64 [[PSYNC:%rd[0-9]+]], [p_sync];
// CHECK:      cvta.to.global.u64 [[SYNC:%rd[0-9]+]], [[PSYNC]];
// CHECK:      mov.u32 [[SM:%r[0-9]+]], %ctaid.x;
// CHECK-NEXT: mov.u32 [[BASE:%r[0-9]+]], vdir_smem;

// The warp's queue, loaded in the prologue: row sm * 4 + engine (16 bytes;
// warp 0's engine is 0): first record, count, first executed index, loop
// entries.
// CHECK:      mad.lo.u32 {{%r[0-9]+}}, [[SM]], 4, {{%r[0-9]+}};
// CHECK-NEXT: mul.wide.u32 {{%rd[0-9]+}}, {{%r[0-9]+}}, 16;
// CHECK-NEXT: add.u64 [[ROW:%rd[0-9]+]], {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: ld.global.nc.v4.u32 {[[START:%r[0-9]+]], [[COUNT:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[ROW]]];
// CHECK-NEXT: add.u64 [[CTR:%rd[0-9]+]], [[SYNC]], 2048;
// CHECK-NEXT: mul.wide.u32 {{%rd[0-9]+}}, [[SM]], 8;
// CHECK-NEXT: add.u64 [[FINISH:%rd[0-9]+]], [[SYNC]], {{%rd[0-9]+}};
// CHECK-NEXT: ld.relaxed.gpu.global.u64 [[COUNT64:%rd[0-9]+]], {{\[}}[[FINISH]]];
// CHECK-NEXT: and.b32 [[LANE:%r[0-9]+]], {{%r[0-9]+}}, 31;
// CHECK:      cvt.u32.u64 [[DONE_L:%r[0-9]+]], [[COUNT64]];
// CHECK:      @{{%p[0-9]+}} bra $L_role_compute_0;
// CHECK-NEXT: setp.eq.u32 [[LANE0:%p[0-9]+]], [[LANE]], 0;
// CHECK-NEXT: mov.u32 [[POS:%r[0-9]+]], 0;
// CHECK-NEXT: mov.u32 [[RET:%r[0-9]+]], 0;
// CHECK-NEXT: mov.u32 [[PHASES:%r[0-9]+]], 0;

// The instruction window of the load engine is at base + 1024; eight
// instructions are requested up front (lanes 0..7 copy 16 bytes each).
// CHECK:      add.u32 [[WIN:%r[0-9]+]], [[BASE]], 1024;
// CHECK-COUNT-8: cp.async.ca.shared.global [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 16;

// The loop's head retires the oldest load when its phase completed, in
// queue order, before anything else: a consumer waits for the signal.
// CHECK-LABEL: $L_ld_top_0:
// CHECK-NEXT: setp.eq.u32 [[NONE:%p[0-9]+]], [[RET]], [[POS]];
// CHECK-NEXT: @[[NONE]] bra $L_ld_issue_0;
// CHECK-NEXT: $L_ld_test_0:
// CHECK-NEXT: and.b32 [[RS:%r[0-9]+]], [[RET]], 7;
// CHECK-NEXT: mad.lo.u32 [[RB8:%r[0-9]+]], [[RS]], 8, [[BASE]];
// CHECK-NEXT: add.u32 [[RBAR:%r[0-9]+]], [[RB8]], 16;
// CHECK-NEXT: shr.b32 [[PH:%r[0-9]+]], [[PHASES]], [[RS]];
// CHECK-NEXT: and.b32 [[PBIT:%r[0-9]+]], [[PH]], 1;
// CHECK-NEXT: mbarrier.test_wait.parity.shared::cta.b64 [[LANDED:%p[0-9]+]], {{\[}}[[RBAR]]], [[PBIT]];
// CHECK-NEXT: vote.sync.all.pred [[LALL:%p[0-9]+]], [[LANDED]], 4294967295;
// CHECK-NEXT: @![[LALL]] bra $L_ld_issue_0;
// CHECK-NEXT: shl.b32 [[FLIP:%r[0-9]+]], 1, [[RS]];
// CHECK-NEXT: xor.b32 [[PHASES]], [[PHASES]], [[FLIP]];
// CHECK-NEXT: mov.b64 [[SIG:%rd[0-9]+]], {[[SLO:%r[0-9]+]], [[SHI:%r[0-9]+]]};
// CHECK-NEXT: setp.eq.u32 [[HOLDS:%p[0-9]+]], [[LANE]], [[RS]];
// CHECK-NEXT: setp.ne.b64 [[HS:%p[0-9]+]], [[SIG]], 0;
// CHECK-NEXT: and.pred [[PS:%p[0-9]+]], [[HS]], [[HOLDS]];
// CHECK-NEXT: @[[PS]] atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK-NEXT: setp.ne.u32 [[HR:%p[0-9]+]], [[SREL:%r[0-9]+]], 0;
// CHECK-NEXT: and.pred [[PR:%p[0-9]+]], [[HR]], [[HOLDS]];
// CHECK-NEXT: add.u32 [[RIDX:%r[0-9]+]], [[SREL]], -1;
// CHECK-NEXT: mul.wide.u32 [[ROFF:%rd[0-9]+]], [[RIDX]], 4;
// CHECK-NEXT: add.u64 [[RADDR:%rd[0-9]+]], [[CTR]], [[ROFF]];
// CHECK-NEXT: @[[PR]] red.release.gpu.global.add.u32 {{\[}}[[RADDR]]], 1;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: add.u32 [[RET]], [[RET]], 1;
// CHECK-NEXT: mov.u64 {{%rd[0-9]+}}, 0;
// CHECK-NEXT: mov.u64 {{%rd[0-9]+}}, 0;
// CHECK-NEXT: setp.eq.u32 [[NOMORE:%p[0-9]+]], [[RET]], [[POS]];
// CHECK-NEXT: @[[NOMORE]] bra $L_ld_issue_0;
// CHECK-NEXT: bra.uni $L_ld_test_0;


// Then the next load, if a ring slot is free and its wait is satisfied. The
// words it reads (0..23: sync, region, tensor map) are loaded at once, ahead
// of the wait's test.
// CHECK-LABEL: $L_ld_issue_0:
// CHECK-NEXT: setp.ge.u32 [[END:%p[0-9]+]], [[POS]], [[COUNT]];
// CHECK-NEXT: @[[END]] bra $L_ld_idle_0;
// CHECK-NEXT: sub.u32 [[INFL:%r[0-9]+]], [[POS]], [[RET]];
// CHECK-NEXT: setp.ge.u32 [[FULL:%p[0-9]+]], [[INFL]], 8;
// CHECK-NEXT: @[[FULL]] bra $L_ld_idle_0;
// CHECK-NEXT: cp.async.wait_group 7;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: and.b32 [[WS:%r[0-9]+]], [[POS]], 7;
// CHECK-NEXT: mad.lo.u32 [[IA:%r[0-9]+]], [[WS]], 128, [[WIN]];
// CHECK-NEXT: ld.shared.v4.b32 {[[W0:%r[0-9]+]], [[W1:%r[0-9]+]], [[W2:%r[0-9]+]], [[W3:%r[0-9]+]]}, {{\[}}[[IA]]];
// CHECK-NEXT: ld.shared.v4.b32 {[[W4:%r[0-9]+]], [[W5:%r[0-9]+]], [[W6:%r[0-9]+]], [[W7:%r[0-9]+]]}, {{\[}}[[IA]]+16];
// CHECK-NEXT: ld.shared.v4.b32 {[[W8:%r[0-9]+]], [[W9:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+32];
// CHECK-NEXT: mov.b64 [[MASK:%rd[0-9]+]], {[[W1]], [[W2]]};
// CHECK-NEXT: mov.b64 [[PAR:%rd[0-9]+]], {[[W3]], [[W4]]};
// CHECK-NEXT: mov.b64 {{%rd[0-9]+}}, {[[W5]], [[W6]]};
// CHECK-NEXT: ld.shared.v4.b32 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+48];
// CHECK-NEXT: ld.shared.v4.b32 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+64];
// CHECK-NEXT: ld.shared.v4.b32 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+80];

// The wait: bitmap with parity, then the counter.
// CHECK-NEXT: ld.acquire.cta.shared.b64 [[BM:%rd[0-9]+]], {{\[}}[[BASE]]];
// CHECK-NEXT: xor.b64 [[X:%rd[0-9]+]], [[BM]], [[PAR]];
// CHECK-NEXT: and.b64 [[XM:%rd[0-9]+]], [[X]], [[MASK]];
// CHECK-NEXT: setp.eq.b64 [[BITS:%p[0-9]+]], [[XM]], 0;
// CHECK-NEXT: setp.eq.u32 [[NOCTR:%p[0-9]+]], [[W7]], 0;
// CHECK-NEXT: add.u32 [[CI:%r[0-9]+]], [[W7]], -1;
// CHECK-NEXT: mul.wide.u32 [[CO:%rd[0-9]+]], [[CI]], 4;
// CHECK-NEXT: add.u64 [[CA:%rd[0-9]+]], [[CTR]], [[CO]];
// CHECK-NEXT: mov.u32 [[CV:%r[0-9]+]], 0;
// CHECK-NEXT: @![[NOCTR]] ld.acquire.gpu.global.u32 [[CV]], {{\[}}[[CA]]];
// CHECK-NEXT: mad.lo.u32 [[WANT:%r[0-9]+]], [[DONE_L]], [[W8]], [[W8]];
// CHECK-NEXT: sub.u32 [[DIFF:%r[0-9]+]], [[CV]], [[WANT]];
// CHECK-NEXT: setp.ge.s32 [[CGE:%p[0-9]+]], [[DIFF]], 0;
// CHECK-NEXT: or.pred [[COK:%p[0-9]+]], [[CGE]], [[NOCTR]];
// CHECK-NEXT: and.pred [[RDY:%p[0-9]+]], [[BITS]], [[COK]];
// CHECK-NEXT: vote.sync.all.pred [[ALL:%p[0-9]+]], [[RDY]], 4294967295;
// CHECK-NEXT: @![[ALL]] bra $L_ld_idle_0;

// Issue: a load that waited on a counter is issued by the lanes counting
// down from 31 (FIRST = 31 - lane, else the lane), which fence the async
// proxy first; slot = pos & 7, its mbarrier at base + 16 + 8 * slot; the
// lane whose index is the slot keeps what to signal at retirement.
// CHECK-NEXT: setp.ne.u32 [[HASCTR:%p[0-9]+]], [[W7]], 0;
// CHECK-NEXT: sub.u32 [[TOP:%r[0-9]+]], 31, [[LANE]];
// CHECK-NEXT: selp.u32 [[FIRST:%r[0-9]+]], [[TOP]], [[LANE]], [[HASCTR]];
// CHECK-NEXT: and.b32 [[SLOT:%r[0-9]+]], [[POS]], 7;
// CHECK-NEXT: mad.lo.u32 [[B8:%r[0-9]+]], [[SLOT]], 8, [[BASE]];
// CHECK-NEXT: add.u32 [[BAR:%r[0-9]+]], [[B8]], 16;
// CHECK-NEXT: setp.eq.u32 [[HOLDER:%p[0-9]+]], [[LANE]], [[SLOT]];
// CHECK-NEXT: @[[HOLDER]] mov.u32 [[SLO]], [[W5]];
// CHECK-NEXT: @[[HOLDER]] mov.u32 [[SHI]], [[W6]];
// CHECK-NEXT: @[[HOLDER]] mov.u32 [[SREL]], [[W9]];
// CHECK-NEXT: and.b32 [[OPC:%r[0-9]+]], [[W0]], 255;
// CHECK-NEXT: setp.eq.u32 [[ISOPLD:%p[0-9]+]], [[OPC]], 1;
// A load whose runtime condition fails takes the nop path: the condition's
// source (word 0, bits 16-23) is tested first, and only a load with one
// reads its value (a scalar or an i32 element) and evaluates it.
// CHECK:      shr.u32 [[SH:%r[0-9]+]], [[W0]], 16;
// CHECK-NEXT: and.b32 [[SRC:%r[0-9]+]], [[SH]], 255;
// CHECK-NEXT: mov.u32 [[RUNS:%r[0-9]+]], 1;
// CHECK-NEXT: setp.eq.u32 [[NOCOND:%p[0-9]+]], [[SRC]], 0;
// CHECK-NEXT: @[[NOCOND]] bra.uni $L_cond_done_0;
// CHECK:      ld.relaxed.gpu.global.s32 [[V:%r[0-9]+]], {{\[}}{{%rd[0-9]+}}];
// CHECK:      mad.lo.s64 [[T:%rd[0-9]+]], {{%rd[0-9]+}}, {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: setp.ge.s64 [[HOLDS:%p[0-9]+]], [[T]], 0;
// CHECK-NEXT: selp.u32 [[RUNS]], 1, 0, [[HOLDS]];
// CHECK-NEXT: $L_cond_done_0:
// CHECK-NEXT: setp.ne.u32 [[GO:%p[0-9]+]], [[RUNS]], 0;
// CHECK-NEXT: and.pred [[ISLD:%p[0-9]+]], [[ISOPLD]], [[GO]];
// CHECK-NEXT: @![[ISLD]] bra $L_ld_nop_0;
// CHECK:      mul.lo.u32 [[TOTAL:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};

// A region with a tensor map (word 19 non-zero): lane 0 arms the mbarrier,
// the lanes issue its boxes as 3-D tensor copies (innermost coordinate 0).
// CHECK:      setp.eq.u32 [[NOTM:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: @[[NOTM]] bra $L_ld_plain_0;
// CHECK-NEXT: setp.eq.u32 [[L0:%p[0-9]+]], [[LANE]], 0;
// CHECK-NEXT: @[[L0]] mbarrier.arrive.expect_tx.shared::cta.b64 {{%rd[0-9]+}}, {{\[}}[[BAR]]], [[TOTAL]];
// CHECK:      setp.lt.u32 [[ISSUES:%p[0-9]+]], [[FIRST]], [[BOXES:%r[0-9]+]];
// CHECK-NEXT: and.pred [[FENCE:%p[0-9]+]], [[HASCTR]], [[ISSUES]];
// CHECK-NEXT: @[[FENCE]] fence.proxy.async.global;
// CHECK:      $L_tbox_0:
// CHECK:      cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%r[0-9]+}}], [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}], {{\[}}[[BAR]]];
// CHECK:      bra.uni $L_ld_issued_0;

// Otherwise plain bulk copies: one for a dense region, else one per row.
// CHECK-NEXT: $L_ld_plain_0:
// CHECK:      @[[LANE0]] mbarrier.arrive.expect_tx.shared::cta.b64 {{%rd[0-9]+}}, {{\[}}[[BAR]]], [[TOTAL]];
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: setp.lt.u32 [[ISSUES2:%p[0-9]+]], [[FIRST]], {{%r[0-9]+}};
// CHECK-NEXT: and.pred [[FENCE2:%p[0-9]+]], [[HASCTR]], [[ISSUES2]];
// CHECK-NEXT: @[[FENCE2]] fence.proxy.async.global;
// CHECK-NEXT: mov.u32 [[ROW:%r[0-9]+]], [[FIRST]];
// CHECK-NEXT: $L_ld_rows_0:
// CHECK:      cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{{%r[0-9]+}}], [{{%rd[0-9]+}}], {{%r[0-9]+}}, {{\[}}[[BAR]]];
// CHECK-NEXT: add.u32 [[ROW]], [[ROW]], 32;
// CHECK-NEXT: bra.uni $L_ld_rows_0;
// A prefetch (opcode 5) asks L2 for its region, then completes like a nop.
// CHECK:      $L_ld_nop_0:
// CHECK-NEXT: setp.eq.u32 [[ISPF:%p[0-9]+]], [[OPC]], 5;
// CHECK-NEXT: @![[ISPF]] bra $L_ld_no_prefetch_0;
// CHECK:      cp.async.bulk.prefetch.L2.global [{{%rd[0-9]+}}], {{%r[0-9]+}};
// CHECK:      $L_ld_no_prefetch_0:
// CHECK-NEXT: @[[LANE0]] mbarrier.arrive.shared::cta.b64 {{%rd[0-9]+}}, {{\[}}[[BAR]]], 1;
// CHECK:      $L_ld_issued_0:
// CHECK-NEXT: add.u32 [[POS]], [[POS]], 1;
// CHECK:      cp.async.ca.shared.global
// CHECK-NEXT: cp.async.commit_group;
// CHECK:      bra.uni $L_ld_test_0;

// Done once every load was issued and retired; on abort, drain the copies
// still in flight before exiting.
// CHECK-LABEL: $L_ld_idle_0:
// CHECK-NEXT: setp.ge.u32 [[FIN:%p[0-9]+]], [[POS]], [[COUNT]];
// CHECK-NEXT: setp.eq.u32 [[EMPTY:%p[0-9]+]], [[RET]], [[POS]];
// CHECK-NEXT: and.pred [[DONE:%p[0-9]+]], [[FIN]], [[EMPTY]];
// CHECK-NEXT: @[[DONE]] bra $L_ld_done_0;
// CHECK:      $L_ld_abort_0:
// CHECK-NEXT: $L_ld_drain_0:
// CHECK:      mbarrier.try_wait.parity.shared::cta.b64
// CHECK:      $L_ld_done_0:
// CHECK-NEXT: bra.uni $L_kernel_exit_0;
// CHECK-NEXT: $L_role_store_0:

// The stream engine (warp 10, after the compute group) is a second load
// engine lowered from the same code with its own queue (row sm * 4 + 3: the
// prologue's queue row of warp 10), its
// own 8-deep instruction window (base + 4096, after the load, compute and
// store windows: 1024 + 3 * 8 * 128) and its own ring: 2 slots (lowering
// option stream_ring) whose mbarriers follow the load engine's ring
// (base + 80 + 8 * slot). Its copies carry an L2 evict_first
// policy, made once before its loop (lowering option stream_evict_first).
// CHECK:      $L_role_stream_0:
// CHECK:      add.u32 [[SWIN:%r[0-9]+]], [[BASE]], 4096;
// CHECK-COUNT-8: cp.async.ca.shared.global [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 16;
// CHECK-NEXT: cp.async.commit_group;
// CHECK-NEXT: createpolicy.fractional.L2::evict_first.b64 {{%rd[0-9]+}};
// CHECK-NEXT: $L_ld_stream_top_0:
// CHECK-NEXT: setp.eq.u32 [[SNONE:%p[0-9]+]], [[SRET:%r[0-9]+]], [[SPOS:%r[0-9]+]];
// CHECK-NEXT: @[[SNONE]] bra $L_ld_stream_issue_0;
// CHECK-NEXT: $L_ld_stream_test_0:
// CHECK-NEXT: and.b32 [[SRS:%r[0-9]+]], [[SRET]], 1;
// CHECK-NEXT: mad.lo.u32 [[SRB8:%r[0-9]+]], [[SRS]], 8, [[BASE]];
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[SRB8]], 80;
// CHECK:      mbarrier.test_wait.parity.shared::cta.b64
// CHECK:      bra.uni $L_ld_stream_test_0;
// CHECK-NEXT: $L_ld_stream_issue_0:
// CHECK-NEXT: setp.ge.u32 [[SEND:%p[0-9]+]], [[SPOS]], {{%r[0-9]+}};
// CHECK-NEXT: @[[SEND]] bra $L_ld_stream_idle_0;
// CHECK-NEXT: sub.u32 [[SINFL:%r[0-9]+]], [[SPOS]], [[SRET]];
// CHECK-NEXT: setp.ge.u32 [[SFULL:%p[0-9]+]], [[SINFL]], 2;
// CHECK-NEXT: @[[SFULL]] bra $L_ld_stream_idle_0;
// CHECK-NEXT: cp.async.wait_group 7;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: and.b32 [[SWS:%r[0-9]+]], [[SPOS]], 7;
// CHECK-NEXT: mad.lo.u32 {{%r[0-9]+}}, [[SWS]], 128, [[SWIN]];
// CHECK:      and.b32 [[SSLOT:%r[0-9]+]], [[SPOS]], 1;
// CHECK-NEXT: mad.lo.u32 [[SB8:%r[0-9]+]], [[SSLOT]], 8, [[BASE]];
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[SB8]], 80;
// CHECK-NEXT: setp.eq.u32 {{%p[0-9]+}}, [[LANE]], [[SSLOT]];
// CHECK:      $L_ld_stream_done_0:
// CHECK-NEXT: bra.uni $L_kernel_exit_0;
// CHECK-NEXT: $L_role_compute_0:

vdir.program @loads(%w: !vdir.buffer<16x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
