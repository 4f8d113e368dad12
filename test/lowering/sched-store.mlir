// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s

// The store engine (warp 1). It walks its queue (row sm * 4 + 2) with its own
// 8-deep instruction window (base + 3072, after the load and compute
// windows), spins until the warp agrees the wait is satisfied (bitmap with
// parity through ld.acquire.cta, the counter through ld.acquire.gpu), then
// copies the result tile to global memory: as tensor copies when the region
// has a tensor map, else 16-byte ld.shared.v4 / st.global.v4 when the global
// address and row stride are 16-byte aligned, else 2-byte copies. Then every
// lane commits its bulk group (empty unless it issued tensor copies) and
// waits for it, fences the async proxy's global writes against the generic
// proxy (a later bulk load on this SM may read the bytes), and after a warp
// barrier lane 0 toggles the bits with atom.release.cta and releases its
// counter (red.release.gpu: a release, no separate fence). The store
// completes before the next instruction is read; a quiet one (nothing
// waits on it) only until its copies have read their source.

// CHECK:      ld.param.u64 [[PSYNC:%rd[0-9]+]], [p_sync];
// CHECK:      cvta.to.global.u64 [[SYNC:%rd[0-9]+]], [[PSYNC]];
// CHECK:      mov.u32 [[SM:%r[0-9]+]], %ctaid.x;
// CHECK-NEXT: mov.u32 [[BASE:%r[0-9]+]], vdir_smem;

// The warp's queue row sm * 4 + engine (warp 1's engine is 2), loaded in the
// prologue.
// CHECK:      mad.lo.u32 {{%r[0-9]+}}, [[SM]], 4, {{%r[0-9]+}};
// CHECK-NEXT: mul.wide.u32 {{%rd[0-9]+}}, {{%r[0-9]+}}, 16;
// CHECK-NEXT: add.u64 [[ROW:%rd[0-9]+]], {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: ld.global.nc.v4.u32 {[[START:%r[0-9]+]], [[COUNT:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[ROW]]];
// CHECK-NEXT: add.u64 [[CTR:%rd[0-9]+]], [[SYNC]], 2048;
// CHECK-NEXT: mul.wide.u32 {{%rd[0-9]+}}, [[SM]], 8;
// CHECK-NEXT: add.u64 [[FINISH:%rd[0-9]+]], [[SYNC]], {{%rd[0-9]+}};
// CHECK-NEXT: ld.relaxed.gpu.global.u64 [[COUNT64:%rd[0-9]+]], {{\[}}[[FINISH]]];
// CHECK-NEXT: and.b32 [[LANE:%r[0-9]+]], {{%r[0-9]+}}, 31;
// CHECK-NEXT: add.u32 [[ARENA:%r[0-9]+]], [[BASE]], 5120;
// CHECK:      cvt.u32.u64 [[DONE_L:%r[0-9]+]], [[COUNT64]];

// CHECK-LABEL: $L_role_store_0:
// CHECK-NEXT: setp.eq.u32 [[LANE0:%p[0-9]+]], [[LANE]], 0;
// CHECK-NEXT: mov.u32 [[POS:%r[0-9]+]], 0;
// CHECK-NEXT: mov.u32 [[UNSETTLED:%r[0-9]+]], 0;
// CHECK-NEXT: add.u32 [[WIN:%r[0-9]+]], [[BASE]], 3072;
// CHECK-COUNT-8: cp.async.ca.shared.global [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 16;
// CHECK-NEXT: cp.async.commit_group;

// CHECK-NEXT: $L_st_top_0:
// CHECK-NEXT: setp.ge.u32 [[END:%p[0-9]+]], [[POS]], [[COUNT]];
// CHECK-NEXT: @[[END]] bra.uni $L_st_done_0;
// CHECK-NEXT: cp.async.wait_group 7;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: and.b32 [[WS:%r[0-9]+]], [[POS]], 7;
// CHECK-NEXT: mad.lo.u32 [[IA:%r[0-9]+]], [[WS]], 128, [[WIN]];
// CHECK-NEXT: ld.shared.v4.b32 {[[W0:%r[0-9]+]], [[W1:%r[0-9]+]], [[W2:%r[0-9]+]], [[W3:%r[0-9]+]]}, {{\[}}[[IA]]];
// CHECK-NEXT: ld.shared.v4.b32 {[[W4:%r[0-9]+]], [[W5:%r[0-9]+]], [[W6:%r[0-9]+]], [[W7:%r[0-9]+]]}, {{\[}}[[IA]]+16];
// CHECK-NEXT: ld.shared.v4.b32 {[[W8:%r[0-9]+]], [[W9:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+32];
// CHECK-NEXT: mov.b64 [[MASK:%rd[0-9]+]], {[[W1]], [[W2]]};
// CHECK-NEXT: mov.b64 [[PAR:%rd[0-9]+]], {[[W3]], [[W4]]};
// CHECK-NEXT: mov.b64 [[SIG:%rd[0-9]+]], {[[W5]], [[W6]]};
// The words its copies read (the region and the tensor map, words 12 to 23)
// are loaded before the spin, so that their latency passes while it waits.
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[IA]]+48];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[IA]]+64];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[IA]]+80];
// CHECK-NOT:  ld.shared
// CHECK:      $L_spin_0:

// The spin: ready when the bits and the counter are (on a watchdog report or
// an abort, to the exit).
// CHECK-NEXT: ld.acquire.cta.shared.b64 [[BM:%rd[0-9]+]], {{\[}}[[BASE]]];
// CHECK-NEXT: xor.b64 [[X:%rd[0-9]+]], [[BM]], [[PAR]];
// CHECK-NEXT: and.b64 [[XM:%rd[0-9]+]], [[X]], [[MASK]];
// CHECK-NEXT: setp.eq.b64 [[BITS:%p[0-9]+]], [[XM]], 0;
// CHECK-NEXT: setp.eq.u32 [[NOCTR:%p[0-9]+]], [[W7]], 0;
// CHECK:      @![[NOCTR]] ld.acquire.gpu.global.u32 [[CV:%r[0-9]+]], [{{%rd[0-9]+}}];
// CHECK-NEXT: mad.lo.u32 [[WANT:%r[0-9]+]], [[DONE_L]], [[W8]], [[W8]];
// CHECK-NEXT: sub.u32 [[DIFF:%r[0-9]+]], [[CV]], [[WANT]];
// CHECK-NEXT: setp.ge.s32 {{%p[0-9]+}}, [[DIFF]], 0;
// CHECK:      vote.sync.all.pred [[ALL:%p[0-9]+]], {{%p[0-9]+}}, 4294967295;
// CHECK-NEXT: @[[ALL]] bra.uni $L_go_0;
// CHECK:      bra.uni $L_st_done_0;

// Only a store (opcode 3) copies; the aligned path moves 16 bytes a lane.
// Before its copies, a store waits for the writes a quiet store before it
// left in flight (UNSETTLED, below) and fences the async proxy.
// CHECK-LABEL: $L_go_0:
// CHECK-NEXT: and.b32 [[OPC:%r[0-9]+]], [[W0]], 255;
// CHECK-NEXT: setp.ne.u32 [[NOTST:%p[0-9]+]], [[OPC]], 3;
// CHECK-NEXT: @[[NOTST]] bra.uni $L_st_next_0;
// CHECK:      setp.eq.u32 [[SETTLED:%p[0-9]+]], [[UNSETTLED]], 0;
// CHECK-NEXT: @[[SETTLED]] bra.uni $L_st_settled_0;
// CHECK-NEXT: cp.async.bulk.wait_group 0;
// CHECK-NEXT: fence.proxy.async.global;
// CHECK-NEXT: mov.u32 [[UNSETTLED]], 0;
// CHECK-NEXT: $L_st_settled_0:
// CHECK:      add.u32 [[SRC:%r[0-9]+]], [[ARENA]], {{%r[0-9]+}};

// A region with a tensor map (word 19 non-zero) goes out as tensor copies,
// after a proxy fence orders the compute threads' generic writes of the tile
// (acquired through the bits) before the copy engine's reads.
// CHECK-NEXT: setp.eq.u32 [[NOTM:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: @[[NOTM]] bra.uni $L_st_plain_0;
// CHECK-NEXT: fence.proxy.async.shared::cta;
// CHECK:      cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%r[0-9]+}}];
// CHECK-NOT:  wait_group
// CHECK:      bra.uni $L_st_next_0;

// Otherwise the buffer's address comes from the pointer table, and the
// wide path needs it, the stride and the row size 16-byte aligned.
// CHECK-NEXT: $L_st_plain_0:
// CHECK:      ld.global.nc.u64 {{%rd[0-9]+}}, [{{%rd[0-9]+}}];
// CHECK:      cvt.u64.u32 [[STRIDE:%rd[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT: cvt.u64.u32 [[ROWB:%rd[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT: or.b64 [[AO:%rd[0-9]+]], {{%rd[0-9]+}}, [[STRIDE]];
// CHECK-NEXT: or.b64 [[AR:%rd[0-9]+]], [[AO]], [[ROWB]];
// CHECK-NEXT: and.b64 [[AL:%rd[0-9]+]], [[AR]], 15;
// CHECK-NEXT: setp.eq.b64 [[ALIGNED:%p[0-9]+]], [[AL]], 0;
// CHECK-NEXT: @![[ALIGNED]] bra $L_st_skip_0;
// CHECK:      $L_st_col_0:
// CHECK:      ld.shared.v4.b32 {[[A:%r[0-9]+]], [[B:%r[0-9]+]], [[C:%r[0-9]+]], [[D:%r[0-9]+]]}, [{{%r[0-9]+}}];
// CHECK-NEXT: st.global.v4.b32 [{{%rd[0-9]+}}], {[[A]], [[B]], [[C]], [[D]]};
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 32;
// CHECK:      $L_st_skip_0:
// CHECK-NEXT: @[[ALIGNED]] bra $L_st_skip_1;
// CHECK:      ld.shared.b16 [[H:%h[0-9]+]], [{{%r[0-9]+}}];
// CHECK-NEXT: st.global.b16 [{{%rd[0-9]+}}], [[H]];
// CHECK:      $L_st_skip_1:

// Completion: the bulk group committed. A quiet store (no signal bits, no
// counter: nothing in the launch waits on it) waits only until its copies
// have read their source, and leaves its writes unsettled. Any other waits
// for the group (and every earlier one), fences the async proxy, meets a
// warp barrier, and lane 0 releases.
// CHECK-NEXT: $L_st_next_0:
// CHECK-NEXT: cp.async.bulk.commit_group;
// CHECK-NEXT: setp.eq.b64 [[NOSIG:%p[0-9]+]], [[SIG]], 0;
// CHECK-NEXT: setp.eq.u32 [[NOREL:%p[0-9]+]], [[W9]], 0;
// CHECK-NEXT: and.pred [[QUIET:%p[0-9]+]], [[NOSIG]], [[NOREL]];
// CHECK-NEXT: @![[QUIET]] bra.uni $L_st_complete_0;
// CHECK-NEXT: cp.async.bulk.wait_group.read 0;
// CHECK-NEXT: mov.u32 [[UNSETTLED]], 1;
// CHECK-NEXT: bra.uni $L_st_completed_0;
// CHECK-NEXT: $L_st_complete_0:
// CHECK-NEXT: cp.async.bulk.wait_group 0;
// CHECK-NEXT: fence.proxy.async.global;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: setp.ne.b64 [[HS:%p[0-9]+]], [[SIG]], 0;
// CHECK-NEXT: and.pred [[PS:%p[0-9]+]], [[HS]], [[LANE0]];
// CHECK-NEXT: @[[PS]] atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK-NEXT: setp.ne.u32 [[HR:%p[0-9]+]], [[W9]], 0;
// CHECK-NEXT: and.pred [[PR:%p[0-9]+]], [[HR]], [[LANE0]];
// CHECK-NEXT: add.u32 [[RIDX:%r[0-9]+]], [[W9]], -1;
// CHECK-NEXT: mul.wide.u32 [[ROFF:%rd[0-9]+]], [[RIDX]], 4;
// CHECK-NEXT: add.u64 [[RADDR:%rd[0-9]+]], [[CTR]], [[ROFF]];
// CHECK-NEXT: @[[PR]] red.release.gpu.global.add.u32 {{\[}}[[RADDR]]], 1;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: mov.u32 [[UNSETTLED]], 0;
// CHECK-NEXT: $L_st_completed_0:
// CHECK-NEXT: add.u32 [[POS]], [[POS]], 1;
// CHECK:      cp.async.commit_group;
// CHECK-NEXT: bra.uni $L_st_top_0;
// CHECK-NEXT: $L_st_done_0:
// CHECK-NEXT: bra.uni $L_kernel_exit_0;
// CHECK-NEXT: $L_role_stream_0:

vdir.program @stores(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %xt, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
