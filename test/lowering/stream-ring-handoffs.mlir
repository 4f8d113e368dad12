// RUN: vdir-opt %S/../../examples/mlp.mlir -p 'vdir-pipeline{target=h100 num-sms=2}' -t isa | filecheck %s --check-prefix=COUNTERS
// RUN: vdir-opt %S/../../examples/mlp.mlir -p 'vdir-pipeline{target=h100 num-sms=2}' -t ptx | filecheck %s --check-prefix=H100
// RUN: vdir-opt %S/../../examples/mlp.mlir -p 'vdir-pipeline{num-sms=2}' -t ptx | filecheck %s --check-prefix=H200
// RUN: vdir-opt %S/../../examples/mlp.mlir -p 'vdir-pipeline{target=h100 num-sms=2}' -t 'ptx{stream-ring=2}' | filecheck %s --check-prefix=H200

// The stream ring left to the target is the target's ring for the program
// (TargetDescription.stream_ring_for). The MLP block on two SMs hands its
// activation row from one SM to the other through global memory (two
// counters), so on the H100 its stream engine keeps one weight tile in
// flight (handoff_stream_ring): one mbarrier at header byte 80, and the
// stream engine idles with one load in flight. The H200 keeps two for it, as
// does an explicit stream-ring=2 on the H100. (A program without hand-offs
// gets two on both: ptx-options.mlir, SRING-H100.)

// COUNTERS: // @mlp: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 2 global counter(s)

// H100:      mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+72], 1;
// H100-NEXT: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+80], 1;
// H100-NEXT: fence.mbarrier_init.release.cluster;
// H100:      $L_ld_stream_issue_0:
// H100:      setp.ge.u32 [[S1:%p[0-9]+]], {{%r[0-9]+}}, 1;
// H100-NEXT: @[[S1]] bra $L_ld_stream_idle_0;

// H200:      mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+72], 1;
// H200-NEXT: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+80], 1;
// H200-NEXT: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+88], 1;
// H200-NEXT: fence.mbarrier_init.release.cluster;
// H200:      $L_ld_stream_issue_0:
// H200:      setp.ge.u32 [[S2:%p[0-9]+]], {{%r[0-9]+}}, 2;
// H200-NEXT: @[[S2]] bra $L_ld_stream_idle_0;
