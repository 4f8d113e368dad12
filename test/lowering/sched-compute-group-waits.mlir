// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{group-waits=true}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{group-waits=true signal-warp=false}' | filecheck %s --check-prefix=WARP0

// The compute engine with the lowering option group_waits (the default
// kernel is in sched-compute.mlir): every compute warp tests each wait
// itself, and the group meets at one barrier per instruction. The first
// warp primes its window and waits for the first instruction's copies; a
// barrier publishes them. In the loop each warp decodes the instruction from
// its slot, waits for the signal count where the wait names a bit the
// instruction before toggles, and spins on the wait, sleeping between polls
// unless it is the first warp. It runs the body; then the first warp waits
// for the next instruction's copies, and the group meets at the barrier, to
// which a warp whose wait failed comes with the abort flag raised. After it
// every thread reads the flag, the last warp's lane 0 signals and counts,
// and the first warp refills the slot.

// CHECK-LABEL: $L_role_compute_0:
// CHECK-NEXT: sub.u32 [[CT:%r[0-9]+]], {{%r[0-9]+}}, 64;
// CHECK-NEXT: shr.u32 [[CW:%r[0-9]+]], [[CT]], 5;
// CHECK-NEXT: setp.eq.u32 [[LEADER:%p[0-9]+]], [[CT]], 0;
// CHECK-NEXT: setp.eq.u32 [[FIRST:%p[0-9]+]], [[CW]], 0;
// CHECK-NEXT: setp.eq.u32 [[LANE0:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.b64 [[PREV:%rd[0-9]+]], 0;
// CHECK:      mov.u32 [[POS:%r[0-9]+]], 0;
// CHECK-NEXT: @![[FIRST]] bra.uni $L_cp_primed_0;
// CHECK-COUNT-8: cp.async.ca.shared.global
// CHECK:      cp.async.commit_group;
// CHECK-NEXT: cp.async.wait_group 7;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: $L_cp_primed_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK:      not.pred [[SLEEPER:%p[0-9]+]], [[FIRST]];
// CHECK-NEXT: $L_cp_top_0:
// CHECK-NEXT: setp.ge.u32 [[END:%p[0-9]+]], [[POS]], {{%r[0-9]+}};
// CHECK-NEXT: @[[END]] bra.uni $L_cp_done_0;
// CHECK-NOT:  barrier.sync
// CHECK:      ld.shared.v4.b32
// CHECK:      and.b64 {{%rd[0-9]+}}, [[PREV]], {{%rd[0-9]+}};
// CHECK:      $L_cp_signal_seen_0:
// CHECK-NEXT: ld.acquire.cta.shared.u32 {{%r[0-9]+}}, [{{%r[0-9]+}}+12];
// CHECK:      $L_cp_bits_apart_0:
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK-NEXT: ld.acquire.cta.shared.b64
// CHECK:      vote.sync.all.pred [[READY:%p[0-9]+]]
// CHECK-NEXT: @[[READY]] bra.uni $L_go_{{[0-9]+}};
// CHECK-NEXT: @[[SLEEPER]] nanosleep.u32 64;
// CHECK:      $L_report_done_{{[0-9]+}}:
// CHECK-NEXT: bra.uni $L_cp_abort_0;
// CHECK-NEXT: $L_go_{{[0-9]+}}:
// CHECK-NOT:  barrier.sync 1, 256;
// CHECK:      $L_fam1_0:
// CHECK:      $L_cp_body_done_0:
// CHECK-NEXT: @![[FIRST]] bra.uni $L_cp_landed_0;
// CHECK-NEXT: cp.async.wait_group 6;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK-NEXT: $L_cp_landed_0:
// CHECK-NEXT: bra.uni $L_cp_joined_0;
// CHECK-NEXT: $L_cp_abort_0:
// CHECK-NEXT: @[[LANE0]] st.shared.u32 [{{%r[0-9]+}}+8], 1;
// CHECK-NEXT: $L_cp_joined_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK-NEXT: ld.shared.u32 [[ABORT:%r[0-9]+]], [{{%r[0-9]+}}+8];
// CHECK-NEXT: setp.ne.u32 [[ABORTED:%p[0-9]+]], [[ABORT]], 0;
// CHECK-NEXT: @[[ABORTED]] bra.uni $L_cp_done_0;
// CHECK-NEXT: mov.b64 [[PREV]], [[SIG:%rd[0-9]+]];
// CHECK-NEXT: setp.eq.u32 [[SW:%p[0-9]+]], [[CW]], 7;
// CHECK-NEXT: @![[SW]] bra.uni $L_cp_signalled_0;
// CHECK-NEXT: setp.eq.u32 [[SIGNALLER:%p[0-9]+]], [[CT]], 224;
// CHECK:      atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, [{{%r[0-9]+}}], [[SIG]];
// CHECK:      st.release.cta.shared.u32 [{{%r[0-9]+}}+12]
// CHECK-NEXT: $L_cp_signalled_0:
// CHECK-NEXT: add.u32 [[POS]], [[POS]], 1;
// CHECK-NEXT: @![[FIRST]] bra.uni $L_cp_top_0;
// CHECK:      cp.async.ca.shared.global
// CHECK-NEXT: cp.async.commit_group;
// CHECK-NEXT: bra.uni $L_cp_top_0;
// CHECK-NEXT: $L_cp_done_0:

// Without the signal warp the leader (compute thread 0) signals after the
// barrier, and no wait looks at the signal count.
// WARP0-LABEL: $L_role_compute_0:
// WARP0-NOT:  $L_cp_signal_seen
// WARP0:      $L_cp_joined_0:
// WARP0-NEXT: barrier.sync 1, 256;
// WARP0:      @{{%p[0-9]+}} bra.uni $L_cp_done_0;
// WARP0-NEXT: setp.ne.b64
// WARP0:      atom.release.cta.shared.xor.b64
// WARP0:      red.release.gpu.global.add.u32
// WARP0-NOT:  st.release.cta.shared.u32
// WARP0:      bra.uni $L_cp_top_0;

vdir.program @compute(%w: !vdir.buffer<16x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
