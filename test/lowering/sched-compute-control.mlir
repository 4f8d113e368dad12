// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{control-warp=false}' | filecheck %s --check-prefix=OFF
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{compute-warps=29}' | filecheck %s --check-prefix=FULL

// The compute engine with its control warp (the default in a kernel without
// loops; sched-compute.mlir is the kernel without it). Warp 11, after the
// stream warp, owns the compute window (base + 2048), waits and signals;
// warps 2..9 only run the bodies. Two named barriers over the 288 threads of
// both: 4, the control warp hands an instruction over (bar.arrive) and the
// group takes it (bar.sync); 5, the group says it is done (bar.arrive) and
// the control warp waits for that (bar.sync).
//
// While the group runs instruction n, the control warp decodes n + 1 (the
// window's second oldest: wait_group 6) and tests its wait once; after the
// done barrier it hands n + 1 over before signalling n when the test passed
// and n + 1 waits on none of n's signal bits, and otherwise signals n, then
// waits for n + 1 in full and hands it over.

// CHECK:      mov.u32 [[TID:%r[0-9]+]], %tid.x;
// CHECK-NEXT: shr.u32 [[WARP:%r[0-9]+]], [[TID]], 5;
// CHECK:      mov.u32 [[BASE:%r[0-9]+]], vdir_smem;
// CHECK:      setp.eq.u32 [[ISCC:%p[0-9]+]], [[WARP]], 11;
// CHECK-NEXT: @[[ISCC]] bra $L_role_compute_control_0;

// CHECK-LABEL: $L_role_compute_control_0:
// CHECK-NEXT: add.u32 [[WIN:%r[0-9]+]], [[BASE]], 2048;
// CHECK-COUNT-8: cp.async.ca.shared.global
// The first instruction: waited for in full, then handed over.
// CHECK:      cp.async.wait_group 7;
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK:      vote.sync.all.pred
// CHECK:      bar.arrive 4, 288;
// CHECK-NEXT: mov.b64 [[SIG:%rd[0-9]+]], {{%rd[0-9]+}};
// CHECK-NEXT: mov.u32 [[REL:%r[0-9]+]], {{%r[0-9]+}};

// The loop: the next instruction decoded and tested while the group runs.
// CHECK-NEXT: $L_cc_top_0:
// CHECK-NEXT: add.u32 [[NXT:%r[0-9]+]], [[POS:%r[0-9]+]], 1;
// CHECK-NEXT: setp.lt.u32 [[HAS:%p[0-9]+]], [[NXT]], {{%r[0-9]+}};
// CHECK-NEXT: cp.async.wait_group 6;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: and.b32 [[NS:%r[0-9]+]], [[NXT]], 7;
// CHECK-NEXT: mad.lo.u32 {{%r[0-9]+}}, [[NS]], 128, [[WIN]];
// CHECK:      mov.b64 [[MASK:%rd[0-9]+]], {{{%r[0-9]+}}, {{%r[0-9]+}}};
// Past the queue's end no counter is read from the stale slot.
// CHECK:      selp.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0, [[HAS]];
// CHECK-NEXT: ld.acquire.cta.shared.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]];
// CHECK:      vote.sync.all.pred [[READY:%p[0-9]+]], {{%p[0-9]+}}, 4294967295;
// CHECK-NEXT: and.b64 [[SHARED:%rd[0-9]+]], [[SIG]], [[MASK]];
// CHECK-NEXT: setp.eq.b64 [[APART:%p[0-9]+]], [[SHARED]], 0;
// CHECK-NEXT: and.pred [[RA:%p[0-9]+]], [[READY]], [[APART]];
// CHECK-NEXT: and.pred [[EARLY:%p[0-9]+]], [[RA]], [[HAS]];

// The group is done with n: a raised flag (an unknown family) ends the warp.
// CHECK-NEXT: bar.sync 5, 288;
// CHECK-NEXT: ld.shared.u32 [[AB:%r[0-9]+]], {{\[}}[[BASE]]+8];
// CHECK-NEXT: setp.ne.u32 [[ABP:%p[0-9]+]], [[AB]], 0;
// CHECK-NEXT: @[[ABP]] bra.uni $L_cc_done_0;
// Early: n + 1 handed over, then n signalled.
// CHECK-NEXT: @![[EARLY]] bra.uni $L_cc_later_0;
// CHECK-NEXT: bar.arrive 4, 288;
// CHECK-NEXT: $L_cc_later_0:
// CHECK-NEXT: setp.ne.b64 {{%p[0-9]+}}, [[SIG]], 0;
// CHECK-NEXT: and.pred [[PS:%p[0-9]+]], {{%p[0-9]+}}, [[LANE0:%p[0-9]+]];
// CHECK-NEXT: @[[PS]] atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK-NEXT: setp.ne.u32 {{%p[0-9]+}}, [[REL]], 0;
// CHECK:      red.release.gpu.global.add.u32
// CHECK-NEXT: mov.u32 [[POS]], [[NXT]];
// CHECK-NEXT: @![[HAS]] bra.uni $L_cc_done_0;
// n's slot refilled with n + 8.
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[POS]], 7;
// CHECK:      cp.async.ca.shared.global
// CHECK-NEXT: cp.async.commit_group;
// Late: the full wait, then the hand-over.
// CHECK-NEXT: @[[EARLY]] bra.uni $L_cc_handed_0;
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK:      bra.uni $L_cc_abort_0;
// CHECK:      bar.arrive 4, 288;
// CHECK-NEXT: $L_cc_handed_0:
// CHECK-NEXT: mov.b64 [[SIG]], {{%rd[0-9]+}};
// CHECK-NEXT: mov.u32 [[REL]], {{%r[0-9]+}};
// CHECK-NEXT: bra.uni $L_cc_top_0;
// On a watchdog report or an abort: the flag, and one more hand-over for the
// group to read it.
// CHECK-NEXT: $L_cc_abort_0:
// CHECK-NEXT: @[[LANE0]] st.shared.u32 {{\[}}[[BASE]]+8], 1;
// CHECK-NEXT: bar.arrive 4, 288;
// CHECK-NEXT: $L_cc_done_0:
// CHECK-NEXT: bra.uni $L_kernel_exit_0;

// The group: take an instruction, read the flag, decode, run, arrive.
// CHECK-LABEL: $L_role_compute_0:
// CHECK:      $L_cp_top_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, [[GPOS:%r[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT: @{{%p[0-9]+}} bra.uni $L_cp_done_0;
// CHECK-NEXT: bar.sync 4, 288;
// CHECK-NEXT: ld.shared.u32 [[GAB:%r[0-9]+]], {{\[}}[[BASE]]+8];
// CHECK-NEXT: setp.ne.u32 [[GABP:%p[0-9]+]], [[GAB]], 0;
// CHECK-NEXT: @[[GABP]] bra.uni $L_cp_done_0;
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[GPOS]], 7;
// CHECK:      @{{%p[0-9]+}} bra.uni $L_cp_body_done_0;
// An unknown family reports, raises the flag and arrives.
// CHECK:      atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;
// CHECK:      bra.uni $L_cp_failed_0;
// CHECK:      $L_cp_body_done_0:
// CHECK-NEXT: bar.arrive 5, 288;
// CHECK-NEXT: add.u32 [[GPOS]], [[GPOS]], 1;
// CHECK-NEXT: bra.uni $L_cp_top_0;
// CHECK-NEXT: $L_cp_failed_0:
// CHECK-NEXT: @{{%p[0-9]+}} st.shared.u32 {{\[}}[[BASE]]+8], 1;
// CHECK-NEXT: bar.arrive 5, 288;
// CHECK-NEXT: $L_cp_done_0:
// No group barrier around the body: the control warp's barriers order it.
// CHECK-NOT:  barrier.sync 1, 256;

// Off: no control warp, 352 threads, the group's own barriers.
// OFF:       .maxntid 352, 1, 1
// OFF-NOT:   $L_role_compute_control
// OFF:       barrier.sync 1, 256;

// A group of 29 warps leaves no room for it (32 warps with the load, store
// and stream warps): the first warp waits and signals, as without it.
// FULL:      .maxntid 1024, 1, 1
// FULL-NOT:  $L_role_compute_control
// FULL:      barrier.sync 1, 928;

vdir.program @compute(%w: !vdir.buffer<16x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
