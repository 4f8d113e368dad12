// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{control-warp=true}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=OFF
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{control-warp=true compute-warps=29}' | filecheck %s --check-prefix=FULL

// The compute engine with its control warp (lowering option control_warp, in
// a kernel without loops; sched-compute.mlir is the default kernel, without
// it). Warp 11, after the
// stream warp, owns the compute window (base + 2048), waits and signals;
// warps 2..9 only run the bodies. The control warp hands an instruction over
// on named barrier 4 over the 288 threads of both (bar.arrive there,
// bar.sync in the group); each compute thread says it is done by arriving
// on the mbarrier at base + 144 (256 arrivals a phase), which the control
// warp can poll.
//
// While the group runs instruction n, the control warp decodes n + 1 (the
// window's second oldest: wait_group 6) and, if n + 1 waits on none of n's
// signal bits, polls in turn whether n + 1 is ready and whether the group is
// done. Ready first: it waits for the group, hands n + 1 over, then signals
// n. Otherwise: it waits for the group, signals n, waits for n + 1 in full
// and hands it over.

// CHECK:      mov.u32 [[TID:%r[0-9]+]], %tid.x;
// CHECK-NEXT: shr.u32 [[WARP:%r[0-9]+]], [[TID]], 5;
// CHECK:      mov.u32 [[BASE:%r[0-9]+]], vdir_smem;
// CHECK:      mbarrier.init.shared::cta.b64 {{\[}}[[BASE]]+144], 256;
// CHECK:      setp.eq.u32 [[ISCC:%p[0-9]+]], [[WARP]], 11;
// CHECK-NEXT: @[[ISCC]] bra $L_role_compute_control_0;

// CHECK-LABEL: $L_role_compute_control_0:
// CHECK-NEXT: add.u32 [[WIN:%r[0-9]+]], [[BASE]], 2048;
// The done mbarrier's address, once for every poll and wait.
// CHECK:      add.u32 [[DONE:%r[0-9]+]], [[BASE]], 144;
// CHECK-COUNT-8: cp.async.ca.shared.global
// The first instruction: waited for in full, then handed over.
// CHECK:      cp.async.wait_group 7;
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK:      vote.sync.all.pred
// CHECK:      bar.arrive 4, 288;
// CHECK-NEXT: mov.b64 [[SIG:%rd[0-9]+]], {{%rd[0-9]+}};
// CHECK-NEXT: mov.u32 [[REL:%r[0-9]+]], {{%r[0-9]+}};

// The loop: the next instruction decoded while the group runs.
// CHECK-NEXT: $L_cc_top_0:
// CHECK-NEXT: add.u32 [[NXT:%r[0-9]+]], [[POS:%r[0-9]+]], 1;
// CHECK-NEXT: setp.lt.u32 [[HAS:%p[0-9]+]], [[NXT]], {{%r[0-9]+}};
// CHECK-NEXT: cp.async.wait_group 6;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: and.b32 [[NS:%r[0-9]+]], [[NXT]], 7;
// CHECK-NEXT: mad.lo.u32 {{%r[0-9]+}}, [[NS]], 128, [[WIN]];
// CHECK:      mov.b64 [[MASK:%rd[0-9]+]], {{{%r[0-9]+}}, {{%r[0-9]+}}};
// CHECK-NEXT: mov.b64 {{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}};
// CHECK-NEXT: mov.b64 [[NSIG:%rd[0-9]+]], {{{%r[0-9]+}}, {{%r[0-9]+}}};
// Past the queue's end no counter is read from the stale slot.
// CHECK-NEXT: selp.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0, [[HAS]];
// A candidate for the early test: a next instruction that waits on none of n's bits.
// CHECK-NEXT: and.b64 [[SHARED:%rd[0-9]+]], [[SIG]], [[MASK]];
// CHECK-NEXT: setp.eq.b64 [[APART:%p[0-9]+]], [[SHARED]], 0;
// CHECK-NEXT: and.pred [[CAND:%p[0-9]+]], [[APART]], [[HAS]];
// The poll: n + 1 ready (to the early path), else the group done (to the late one).
// CHECK-NEXT: $L_cc_poll_0:
// CHECK-NEXT: @![[CAND]] bra.uni $L_cc_late_0;
// CHECK-NEXT: ld.acquire.cta.shared.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]];
// CHECK:      vote.sync.all.pred [[READY:%p[0-9]+]], {{%p[0-9]+}}, 4294967295;
// CHECK-NEXT: @[[READY]] bra.uni $L_cc_early_0;
// CHECK-NEXT: mbarrier.test_wait.parity.shared::cta.b64 {{%p[0-9]+}}, {{\[}}[[DONE]]], [[PHASE:%r[0-9]+]];
// CHECK-NEXT: vote.sync.all.pred [[ARRIVED:%p[0-9]+]], {{%p[0-9]+}}, 4294967295;
// CHECK-NEXT: @![[ARRIVED]] bra.uni $L_cc_poll_0;
// CHECK-NEXT: bra.uni $L_cc_late_0;

// Early: the group's done phase, its abort flag (an unknown family), n + 1
// handed over, then n signalled and its slot refilled.
// CHECK-NEXT: $L_cc_early_0:
// CHECK-NEXT: $L_cc_await_0:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 {{%p[0-9]+}}, {{\[}}[[DONE]]], [[PHASE]];
// CHECK-NEXT: vote.sync.all.pred
// CHECK-NEXT: @!{{%p[0-9]+}} bra.uni $L_cc_await_0;
// CHECK-NEXT: xor.b32 [[PHASE]], [[PHASE]], 1;
// CHECK-NEXT: ld.shared.u32 [[AB:%r[0-9]+]], {{\[}}[[BASE]]+8];
// CHECK-NEXT: setp.ne.u32 [[ABP:%p[0-9]+]], [[AB]], 0;
// CHECK-NEXT: @[[ABP]] bra.uni $L_cc_done_0;
// CHECK-NEXT: bar.arrive 4, 288;
// CHECK-NEXT: setp.ne.b64 {{%p[0-9]+}}, [[SIG]], 0;
// CHECK-NEXT: and.pred [[PS:%p[0-9]+]], {{%p[0-9]+}}, [[LANE0:%p[0-9]+]];
// CHECK-NEXT: @[[PS]] atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK-NEXT: setp.ne.u32 {{%p[0-9]+}}, [[REL]], 0;
// CHECK:      red.release.gpu.global.add.u32
// CHECK-NEXT: mov.u32 [[POS]], [[NXT]];
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[POS]], 7;
// CHECK:      cp.async.ca.shared.global
// CHECK-NEXT: cp.async.commit_group;
// CHECK-NEXT: mov.b64 [[SIG]], [[NSIG]];
// CHECK-NEXT: mov.u32 [[REL]], {{%r[0-9]+}};
// CHECK-NEXT: bra.uni $L_cc_top_0;

// Late: the group's done phase, n signalled, the full wait for n + 1, the
// hand-over.
// CHECK-NEXT: $L_cc_late_0:
// CHECK-NEXT: $L_cc_await_1:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 {{%p[0-9]+}}, {{\[}}[[DONE]]], [[PHASE]];
// CHECK:      xor.b32 [[PHASE]], [[PHASE]], 1;
// CHECK:      @{{%p[0-9]+}} bra.uni $L_cc_done_0;
// CHECK-NEXT: setp.ne.b64 {{%p[0-9]+}}, [[SIG]], 0;
// CHECK:      @{{%p[0-9]+}} atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK:      cp.async.commit_group;
// CHECK-NEXT: mov.b64 [[SIG]], [[NSIG]];
// CHECK-NEXT: mov.u32 [[REL]], {{%r[0-9]+}};
// CHECK-NEXT: @![[HAS]] bra.uni $L_cc_done_0;
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK:      bra.uni $L_cc_abort_0;
// CHECK:      bar.arrive 4, 288;
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
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, [[GPOS]], 7;
// CHECK-NEXT: mad.lo.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 128, {{%r[0-9]+}};
// CHECK-NEXT: ld.shared.u32 [[GAB:%r[0-9]+]], {{\[}}[[BASE]]+8];
// CHECK:      setp.ne.u32 [[GABP:%p[0-9]+]], [[GAB]], 0;
// CHECK:      or.pred [[GSKIP:%p[0-9]+]], {{%p[0-9]+}}, [[GABP]];
// CHECK-NEXT: @[[GSKIP]] bra.uni $L_cp_not_run_0;
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_cp_body_done_0;
// An unknown family reports, raises the flag and arrives.
// CHECK:      atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;
// CHECK:      bra.uni $L_cp_failed_0;
// CHECK:      $L_cp_not_run_0:
// CHECK-NEXT: @[[GABP]] bra.uni $L_cp_done_0;
// CHECK-NEXT: $L_cp_body_done_0:
// CHECK-NEXT: mbarrier.arrive.shared::cta.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]+144];
// CHECK-NEXT: add.u32 [[GPOS]], [[GPOS]], 1;
// CHECK-NEXT: bra.uni $L_cp_top_0;
// CHECK-NEXT: $L_cp_failed_0:
// CHECK-NEXT: @{{%p[0-9]+}} st.shared.u32 {{\[}}[[BASE]]+8], 1;
// CHECK-NEXT: mbarrier.arrive.shared::cta.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]+144];
// CHECK-NEXT: $L_cp_done_0:
// No group barrier around the body: the control warp's hand-over and the
// done phase order it.
// CHECK-NOT:  barrier.sync 1, 256;

// Off (the default): no control warp, 352 threads, the group's own barriers.
// OFF:       .maxntid 352, 1, 1
// OFF-NOT:   +144], 256;
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
