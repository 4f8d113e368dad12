// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{control-warp=true}' | filecheck %s --check-prefixes=CHECK,CONTROL
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefixes=CHECK,FIRST

// The watchdog of every spin loop, in role order (load, store, compute).
// A stalled engine spins on shared memory alone for 2^16 SM cycles
// (%clock64); after that it also polls the abort flag (error record word 0,
// ld.relaxed.gpu) and %globaltimer, whose start is taken at the first slow
// poll. Past the bound (the p_watchdog_ns parameter) it writes the error
// record: one atom.cas winner turns word 0 from 0 into code 1, then stores
// SM, engine (0 load, 2 store, 1 compute), queue position, micro-op id,
// wait mask, parity, bitmap, counter index + 1, counter value and wanted
// value (byte offsets 4..52).

// CHECK:      ld.param.u64 [[PERR:%rd[0-9]+]], [p_error];
// CHECK-NEXT: ld.param.u64 [[BOUND:%rd[0-9]+]], [p_watchdog_ns];
// CHECK:      cvta.to.global.u64 [[ERR:%rd[0-9]+]], [[PERR]];
// CHECK:      mov.u32 [[SM:%r[0-9]+]], %ctaid.x;

// Load engine: polled from its idle path.
// CHECK-LABEL: $L_ld_idle_0:
// CHECK:      mov.u64 [[CLK:%rd[0-9]+]], %clock64;
// CHECK-NEXT: setp.eq.u64 [[C0:%p[0-9]+]], [[TCLK:%rd[0-9]+]], 0;
// CHECK-NEXT: @[[C0]] mov.u64 [[TCLK]], [[CLK]];
// CHECK-NEXT: sub.u64 [[D:%rd[0-9]+]], [[CLK]], [[TCLK]];
// CHECK-NEXT: setp.ge.u64 [[SLOW:%p[0-9]+]], [[D]], 65536;
// CHECK-NEXT: vote.sync.any.pred [[SLOWA:%p[0-9]+]], [[SLOW]], 4294967295;
// CHECK-NEXT: @![[SLOWA]] bra.uni $L_ld_top_0;
// CHECK-NEXT: ld.relaxed.gpu.global.u32 [[CODE:%r[0-9]+]], {{\[}}[[ERR]]];
// CHECK-NEXT: setp.ne.u32 [[AB:%p[0-9]+]], [[CODE]], 0;
// CHECK-NEXT: vote.sync.any.pred [[ABA:%p[0-9]+]], [[AB]], 4294967295;
// CHECK-NEXT: @[[ABA]] bra.uni $L_ld_abort_0;
// CHECK-NEXT: mov.u64 [[NOW:%rd[0-9]+]], %globaltimer;
// CHECK-NEXT: setp.eq.u64 [[T0:%p[0-9]+]], [[TGL:%rd[0-9]+]], 0;
// CHECK-NEXT: @[[T0]] mov.u64 [[TGL]], [[NOW]];
// CHECK-NEXT: sub.u64 [[EL:%rd[0-9]+]], [[NOW]], [[TGL]];
// CHECK-NEXT: setp.gt.u64 [[EXP:%p[0-9]+]], [[EL]], [[BOUND]];
// CHECK-NEXT: vote.sync.any.pred [[EXPA:%p[0-9]+]], [[EXP]], 4294967295;
// CHECK-NEXT: @![[EXPA]] bra.uni $L_ld_top_0;
// CHECK:      atom.relaxed.gpu.global.cas.b32 [[OLD:%r[0-9]+]], {{\[}}[[ERR]]], 0, 1;
// CHECK-NEXT: setp.eq.u32 [[WON:%p[0-9]+]], [[OLD]], 0;
// CHECK-NEXT: @![[WON]] bra [[DONE:\$L_report_done_[0-9]+]];
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+4], [[SM]];
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 0;
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+12], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+16], {{%r[0-9]+}};
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+20], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+24], {{%r[0-9]+}};
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+28], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+32], {{%r[0-9]+}};
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+36], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+40], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+44], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+48], {{%r[0-9]+}};
// CHECK-NEXT: st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+52], {{%r[0-9]+}};
// CHECK-NEXT: [[DONE]]:
// CHECK-NEXT: $L_ld_abort_0:

// Store engine: the same poll inside its spin, aborting to its exit.
// CHECK-LABEL: $L_role_store_0:
// CHECK:      $L_spin_[[S1:[0-9]+]]:
// CHECK:      mov.u64 {{%rd[0-9]+}}, %clock64;
// CHECK:      setp.ge.u64 {{%p[0-9]+}}, {{%rd[0-9]+}}, 65536;
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S1]];
// CHECK-NEXT: ld.relaxed.gpu.global.u32 {{%r[0-9]+}}, {{\[}}[[ERR]]];
// CHECK:      @{{%p[0-9]+}} bra.uni $L_st_done_0;
// CHECK-NEXT: mov.u64 {{%rd[0-9]+}}, %globaltimer;
// CHECK:      setp.gt.u64 {{%p[0-9]+}}, {{%rd[0-9]+}}, [[BOUND]];
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S1]];
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, {{\[}}[[ERR]]], 0, 1;
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 2;
// CHECK:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+52], {{%r[0-9]+}};
// CHECK:      bra.uni $L_st_done_0;

// Compute engine, with the control warp (option control_warp): it polls in both of
// its waits, the first instruction's and a later one's that the early test
// did not pass; on abort it raises the shared flag and hands over once more,
// so that the group, waiting for a hand-over, reads the flag and leaves.
// CONTROL-LABEL: $L_role_compute_control_0:
// CONTROL:      $L_spin_[[S2:[0-9]+]]:
// CONTROL:      mov.u64 {{%rd[0-9]+}}, %clock64;
// CONTROL:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S2]];
// CONTROL-NEXT: ld.relaxed.gpu.global.u32 {{%r[0-9]+}}, {{\[}}[[ERR]]];
// CONTROL:      @{{%p[0-9]+}} bra.uni $L_cc_abort_0;
// CONTROL-NEXT: mov.u64 {{%rd[0-9]+}}, %globaltimer;
// CONTROL:      setp.gt.u64 {{%p[0-9]+}}, {{%rd[0-9]+}}, [[BOUND]];
// CONTROL:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S2]];
// CONTROL-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, {{\[}}[[ERR]]], 0, 1;
// CONTROL:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 1;
// CONTROL:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+52], {{%r[0-9]+}};
// CONTROL:      bra.uni $L_cc_abort_0;
// CONTROL:      $L_spin_[[S3:[0-9]+]]:
// CONTROL:      mov.u64 {{%rd[0-9]+}}, %clock64;
// CONTROL:      @{{%p[0-9]+}} bra.uni $L_cc_abort_0;
// CONTROL-NEXT: mov.u64 {{%rd[0-9]+}}, %globaltimer;
// CONTROL:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S3]];
// CONTROL:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 1;
// CONTROL:      bra.uni $L_cc_abort_0;
// CONTROL:      $L_cc_abort_0:
// CONTROL-NEXT: @{{%p[0-9]+}} st.shared.u32 [{{%r[0-9]+}}+8], 1;
// CONTROL-NEXT: bar.arrive 4, 288;
// CONTROL-NEXT: $L_cc_done_0:

// Without it (the default), the first compute warp polls; on abort the
// group is told through the shared flag.
// FIRST-LABEL: $L_role_compute_0:
// FIRST:      $L_spin_[[S2:[0-9]+]]:
// FIRST:      mov.u64 {{%rd[0-9]+}}, %clock64;
// FIRST:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S2]];
// FIRST-NEXT: ld.relaxed.gpu.global.u32 {{%r[0-9]+}}, {{\[}}[[ERR]]];
// FIRST:      @{{%p[0-9]+}} bra.uni $L_cp_abort_0;
// FIRST-NEXT: mov.u64 {{%rd[0-9]+}}, %globaltimer;
// FIRST:      setp.gt.u64 {{%p[0-9]+}}, {{%rd[0-9]+}}, [[BOUND]];
// FIRST:      @!{{%p[0-9]+}} bra.uni $L_spin_[[S2]];
// FIRST-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, {{\[}}[[ERR]]], 0, 1;
// FIRST:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+8], 1;
// FIRST:      st.relaxed.gpu.global.u32 {{\[}}[[ERR]]+52], {{%r[0-9]+}};
// FIRST:      bra.uni $L_cp_abort_0;
// No other timer reads.
// CHECK-NOT:  %globaltimer

vdir.program @watchdog(%w: !vdir.buffer<16x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
