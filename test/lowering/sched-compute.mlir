// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{signal-warp=false}' | filecheck %s --check-prefix=WARP0

// The compute engine without a control warp (the default; the lowering
// option control_warp is in sched-compute-control.mlir): warps 2..9, 256
// threads. Only its first warp
// prefetches instructions (window at base + 2048) and spins on the wait;
// named barrier 1 over the 256 compute threads then passes its acquire on to
// the group. On abort the leader raises the shared abort flag (base + 8),
// which every thread reads after the barrier. The group decodes the
// instruction, checks opcode 2, dispatches on the family (word 0 bits
// 8..15), runs the body and meets at the barrier again; then lane 0 of the
// group's last warp (compute thread 224: the lowering option signal_warp,
// on by default) toggles the signal bits, releases the counter and counts
// the instruction as signalled (base + 12), while the first warp refills
// its window and moves on. Before it tests a wait that names a bit the
// instruction before toggled, the first warp waits for that count.
// A family the kernel has no body for writes error code 2.

// CHECK:      ld.param.u64 [[PSYNC:%rd[0-9]+]], [p_sync];
// CHECK:      ld.param.u64 [[PERR:%rd[0-9]+]], [p_error];
// CHECK:      cvta.to.global.u64 [[SYNC:%rd[0-9]+]], [[PSYNC]];
// CHECK-NEXT: cvta.to.global.u64 [[ERR:%rd[0-9]+]], [[PERR]];
// CHECK-NEXT: cvta.to.global.u64 {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: cvta.to.global.u64 {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: mov.u32 [[TID:%r[0-9]+]], %tid.x;
// CHECK-NEXT: shr.u32 {{%r[0-9]+}}, [[TID]], 5;
// CHECK-NEXT: mov.u32 [[SM:%r[0-9]+]], %ctaid.x;
// CHECK-NEXT: mov.u32 [[BASE:%r[0-9]+]], vdir_smem;

// The warp's queue (a compute warp's: engine 1), loaded in the prologue.
// CHECK:      mad.lo.u32 {{%r[0-9]+}}, [[SM]], 4, {{%r[0-9]+}};
// CHECK-NEXT: mul.wide.u32 {{%rd[0-9]+}}, {{%r[0-9]+}}, 16;
// CHECK-NEXT: add.u64 [[ROW:%rd[0-9]+]], {{%rd[0-9]+}}, {{%rd[0-9]+}};
// CHECK-NEXT: ld.global.nc.v4.u32 {[[START:%r[0-9]+]], [[COUNT:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[ROW]]];
// CHECK-NEXT: add.u64 [[CTR:%rd[0-9]+]], [[SYNC]], 2048;
// CHECK:      add.u32 [[ARENA:%r[0-9]+]], [[BASE]], 5120;

// CHECK-LABEL: $L_role_compute_0:
// CHECK-NEXT: sub.u32 [[CT:%r[0-9]+]], [[TID]], 64;
// CHECK-NEXT: shr.u32 [[CW:%r[0-9]+]], [[CT]], 5;
// CHECK-NEXT: setp.eq.u32 [[LEADER:%p[0-9]+]], [[CT]], 0;
// CHECK-NEXT: setp.eq.u32 [[FIRST:%p[0-9]+]], [[CW]], 0;
// CHECK-NEXT: mov.u32 [[POS:%r[0-9]+]], 0;
// CHECK-NEXT: mov.b64 [[PREV:%rd[0-9]+]], 0;
// CHECK-NEXT: add.u32 [[WIN:%r[0-9]+]], [[BASE]], 2048;
// CHECK:      @![[FIRST]] bra.uni $L_cp_prime_skip_0;
// CHECK-COUNT-8: cp.async.ca.shared.global
// CHECK:      $L_cp_prime_skip_0:

// The group states of the program's families, made once before the loop:
// the gemv bodies' row split of the last gemv the group ran (its rows, K and
// eight split registers; 2^32 - 1 rows: no tile's yet), which a gemv of the
// same rows and K takes instead of working the split out (family-gemv.mlir).
// CHECK-NEXT: mov.u32 [[SPLIT_ROWS:%r[0-9]+]], 4294967295;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: $L_cp_top_0:
// CHECK-NEXT: setp.ge.u32 [[END:%p[0-9]+]], [[POS]], [[COUNT]];
// CHECK-NEXT: @[[END]] bra.uni $L_cp_done_0;
// CHECK-NEXT: @![[FIRST]] bra.uni $L_cp_sync_0;
// CHECK-NEXT: cp.async.wait_group 7;
// CHECK:      mov.b64 [[MASK:%rd[0-9]+]], {{{%r[0-9]+}}, {{%r[0-9]+}}};
// CHECK:      and.b64 [[SHARED:%rd[0-9]+]], [[PREV]], [[MASK]];
// CHECK-NEXT: setp.ne.b64 [[SHP:%p[0-9]+]], [[SHARED]], 0;
// CHECK-NEXT: @![[SHP]] bra.uni $L_cp_bits_apart_0;
// CHECK-NEXT: $L_cp_signal_seen_0:
// CHECK-NEXT: ld.acquire.cta.shared.u32 [[SEEN:%r[0-9]+]], {{\[}}[[BASE]]+12];
// CHECK-NEXT: setp.ge.u32 [[SEENP:%p[0-9]+]], [[SEEN]], [[POS]];
// CHECK-NEXT: vote.sync.all.pred [[SEENALL:%p[0-9]+]], [[SEENP]], 4294967295;
// CHECK-NEXT: @![[SEENALL]] bra.uni $L_cp_signal_seen_0;
// CHECK-NEXT: $L_cp_bits_apart_0:
// CHECK:      $L_spin_{{[0-9]+}}:
// CHECK-NEXT: ld.acquire.cta.shared.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]];
// CHECK:      ld.acquire.gpu.global.u32
// CHECK:      vote.sync.all.pred [[ALL:%p[0-9]+]], {{%p[0-9]+}}, 4294967295;
// CHECK-NEXT: @[[ALL]] bra.uni $L_go_[[GO:[0-9]+]];
// CHECK:      @{{%p[0-9]+}} bra.uni $L_cp_abort_0;
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 1;
// CHECK:      bra.uni $L_cp_abort_0;
// CHECK-NEXT: $L_go_[[GO]]:
// CHECK-NEXT: bra.uni $L_cp_sync_0;
// CHECK-NEXT: $L_cp_abort_0:
// CHECK-NEXT: @[[LEADER]] st.shared.u32 {{\[}}[[BASE]]+8], 1;
// CHECK-NEXT: $L_cp_sync_0:
// CHECK-NEXT: barrier.sync 1, 256;

// Decode: after the barrier the group issues the loads of the abort flag and
// of every word of the instruction it decodes, then tests the flag and the
// opcode in one branch (ptxas keeps the operand words' loads below it: two
// shared-memory latencies before the dispatch instead of three).
// CHECK-NEXT: and.b32 [[WS:%r[0-9]+]], [[POS]], 7;
// CHECK-NEXT: mad.lo.u32 [[IA:%r[0-9]+]], [[WS]], 128, [[WIN]];
// CHECK-NEXT: ld.shared.u32 [[AB:%r[0-9]+]], {{\[}}[[BASE]]+8];
// CHECK-NEXT: ld.shared.v4.b32 {[[W0:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]];
// CHECK-NEXT: ld.shared.v4.b32 {{\{%r[0-9]+}}, [[W5:%r[0-9]+]], [[W6:%r[0-9]+]], {{%r[0-9]+}}}, {{\[}}[[IA]]+16];
// CHECK-NEXT: ld.shared.v4.b32 {{\{%r[0-9]+}}, [[W9:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+32];
// CHECK:      mov.b64 [[SIG:%rd[0-9]+]], {[[W5]], [[W6]]};
// Operand addresses are arena-relative; f0 (eps) is word 22 as f32.
// CHECK:      ld.shared.v4.b32 {[[O0:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, {{\[}}[[IA]]+48];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}, {{\[}}[[IA]]+64];
// CHECK-NEXT: ld.shared.v4.b32 {{\{%r[0-9]+}}, {{%r[0-9]+}}, [[F0W:%r[0-9]+]], {{%r[0-9]+}}}, {{\[}}[[IA]]+80];
// CHECK-NEXT: setp.ne.u32 [[ABP:%p[0-9]+]], [[AB]], 0;
// CHECK-NEXT: and.b32 [[OPC:%r[0-9]+]], [[W0]], 255;
// CHECK-NEXT: setp.ne.u32 [[NOTCP:%p[0-9]+]], [[OPC]], 2;
// CHECK-NEXT: or.pred [[SKIP:%p[0-9]+]], [[NOTCP]], [[ABP]];
// CHECK-NEXT: @[[SKIP]] bra.uni $L_cp_not_run_0;
// A compute whose runtime condition fails skips its body; it still signals.
// CHECK-NEXT: shr.u32 {{%r[0-9]+}}, [[W0]], 16;
// CHECK:      @{{%p[0-9]+}} bra.uni [[CD:\$L_cond_done_[0-9]+]];
// CHECK:      [[CD]]:
// CHECK-NEXT: setp.ne.u32 [[RUNS:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: @![[RUNS]] bra.uni $L_cp_body_done_0;
// CHECK-NEXT: shr.u32 [[F8:%r[0-9]+]], [[W0]], 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[ARENA]], [[O0]];
// CHECK:      mov.b32 %f{{[0-9]+}}, [[F0W]];

// One dispatch per family the program uses (here only gemv = 1), then the
// unknown-family report (code 2).
// CHECK-NEXT: setp.eq.u32 [[ISF1:%p[0-9]+]], [[FAM]], 1;
// CHECK-NEXT: @[[ISF1]] bra.uni $L_fam1_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 [[OLD:%r[0-9]+]], {{\[}}[[ERR]]], 0, 2;
// CHECK-NEXT: setp.eq.u32 [[WON:%p[0-9]+]], [[OLD]], 0;
// CHECK-NEXT: @![[WON]] bra $L_report_done_[[RD:[0-9]+]];
// CHECK:      $L_report_done_[[RD]]:
// CHECK-NEXT: bra.uni $L_cp_done_0;
// CHECK-NEXT: $L_fam1_0:
// CHECK:      setp.eq.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, [[SPLIT_ROWS]];
// CHECK:      bra.uni $L_cp_body_done_0;

// Not a compute, or the abort flag raised: which of the two is found out here.
// CHECK-NEXT: $L_cp_not_run_0:
// CHECK-NEXT: @[[ABP]] bra.uni $L_cp_done_0;

// Completion by lane 0 of the last warp after the group barrier; every
// thread keeps the bits for the next wait's test.
// CHECK-NEXT: $L_cp_body_done_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK-NEXT: mov.b64 [[PREV]], [[SIG]];
// CHECK-NEXT: setp.eq.u32 [[LAST:%p[0-9]+]], [[CW]], 7;
// CHECK-NEXT: @![[LAST]] bra.uni $L_cp_signalled_0;
// CHECK-NEXT: setp.eq.u32 [[SIGNALLER:%p[0-9]+]], [[CT]], 224;
// CHECK-NEXT: setp.ne.b64 [[HS:%p[0-9]+]], [[SIG]], 0;
// CHECK-NEXT: and.pred [[PS:%p[0-9]+]], [[HS]], [[SIGNALLER]];
// CHECK-NEXT: @[[PS]] atom.release.cta.shared.xor.b64 {{%rd[0-9]+}}, {{\[}}[[BASE]]], [[SIG]];
// CHECK-NEXT: setp.ne.u32 [[HR:%p[0-9]+]], [[W9]], 0;
// CHECK-NEXT: and.pred [[PR:%p[0-9]+]], [[HR]], [[SIGNALLER]];
// CHECK-NEXT: add.u32 [[RIDX:%r[0-9]+]], [[W9]], -1;
// CHECK-NEXT: mul.wide.u32 [[ROFF:%rd[0-9]+]], [[RIDX]], 4;
// CHECK-NEXT: add.u64 [[RADDR:%rd[0-9]+]], [[CTR]], [[ROFF]];
// CHECK-NEXT: @[[PR]] red.release.gpu.global.add.u32 {{\[}}[[RADDR]]], 1;
// CHECK-NEXT: add.u32 [[COUNT1:%r[0-9]+]], [[POS]], 1;
// CHECK-NEXT: @[[SIGNALLER]] st.release.cta.shared.u32 {{\[}}[[BASE]]+12], [[COUNT1]];
// CHECK-NEXT: $L_cp_signalled_0:
// CHECK-NEXT: add.u32 [[POS]], [[POS]], 1;
// Only the first warp refills the window.
// CHECK-NEXT: @![[FIRST]] bra.uni $L_cp_top_0;
// CHECK:      cp.async.ca.shared.global
// CHECK-NEXT: cp.async.commit_group;
// CHECK-NEXT: bra.uni $L_cp_top_0;
// CHECK-NEXT: $L_cp_done_0:
// CHECK-NEXT: bra.uni $L_kernel_exit_0;
// CHECK-NEXT: $L_kernel_exit_0:
// CHECK:      ret;
// CHECK-NEXT: }

// Without the signal warp the leader (compute thread 0) signals, and the
// first warp tests the next wait at once (nothing to wait for).
// WARP0-LABEL: $L_role_compute_0:
// WARP0-NEXT: sub.u32 [[GT:%r[0-9]+]], {{%r[0-9]+}}, 64;
// WARP0-NEXT: shr.u32 {{%r[0-9]+}}, [[GT]], 5;
// WARP0-NEXT: setp.eq.u32 [[LEAD:%p[0-9]+]], [[GT]], 0;
// WARP0-NOT: $L_cp_bits_apart
// WARP0:      $L_cp_body_done_0:
// WARP0-NEXT: barrier.sync 1, 256;
// WARP0-NEXT: setp.ne.b64 [[HS:%p[0-9]+]], {{%rd[0-9]+}}, 0;
// WARP0-NEXT: and.pred [[PS:%p[0-9]+]], [[HS]], [[LEAD]];
// WARP0-NEXT: @[[PS]] atom.release.cta.shared.xor.b64
// WARP0:      @{{%p[0-9]+}} red.release.gpu.global.add.u32
// WARP0-NEXT: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1;
// WARP0-NOT: st.release.cta.shared.u32
// WARP0:      $L_cp_done_0:

vdir.program @compute(%w: !vdir.buffer<16x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
