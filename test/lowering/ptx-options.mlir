// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=DEFAULT
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-path=lsu}' | filecheck %s --check-prefix=LSU
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{release_fence=true compute-warps=4}' | filecheck %s --check-prefix=FENCE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{trace=true}' | filecheck %s --check-prefix=TRACE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-path=dma}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=33}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=2,4}' 2>&1 | filecheck %s --check-prefix=TWO
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=' 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-ring=4}' | filecheck %s --check-prefix=RING
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-ring=6}' 2>&1 | filecheck %s --check-prefix=RING-POW2
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-ring=16}' 2>&1 | filecheck %s --check-prefix=RING-RANGE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{stream-ring=8}' | filecheck %s --check-prefix=SRING
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{stream-ring=3}' 2>&1 | filecheck %s --check-prefix=SRING-POW2
// RUN: vdir-opt %s -p 'vdir-pipeline{target=h100 num-sms=1}' -t ptx | filecheck %s --check-prefix=SRING-H100
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{bit-signal=xor32}' | filecheck %s --check-prefix=XOR32
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{stream-evict-first=false}' | filecheck %s --check-prefix=NO-EVICT
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=EVICT
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{bit-signal=or}' 2>&1 | filecheck %s --check-prefix=XOR-BAD
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{uniform-checks=true}' | filecheck %s --check-prefix=UNI-CHECKED
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=UNI
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t 'ptx{cluster-size=2}' | filecheck %s --check-prefix=CLUSTER
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{cluster-size=2}' 2>&1 | filecheck %s --check-prefix=CLUSTER-GRID
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t 'ptx{cluster-size=3}' 2>&1 | filecheck %s --check-prefix=CLUSTER-SIZE

// -t ptx takes the lowering options (vdir.lowering.options.LoweringOptions)
// in xDSL's option syntax, names with '-' or '_'. A bad option is one line on
// stderr naming it (an unknown one lists the known ones), checked before the
// input is read, and no PTX is printed.

// DEFAULT:     .param .u64 p_scalars
// DEFAULT-NEXT: )
// DEFAULT-NOT: {{^}}.explicitcluster
// DEFAULT-NOT: {{^}}.reqnctapercluster
// DEFAULT:     mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// DEFAULT-NOT: %globaltimer;
// DEFAULT-NOT: fence.acq_rel.gpu
// DEFAULT:     ld.acquire.cta.shared.b64
// DEFAULT:     cp.async.bulk
// DEFAULT:     atom.release.cta.shared.xor.b64
// DEFAULT-NOT: red.release.cta.shared.xor.b32

// bit-signal=xor32: the bitmap read as two 32-bit acquires, each half with
// bits to toggle released by its own 32-bit XOR (words 0 and 1 of the bitmap)
// XOR32:       ld.acquire.cta.shared.v2.b32 {{[{]}}{{%r[0-9]+}}, {{%r[0-9]+}}}, [{{%r[0-9]+}}];
// XOR32:       @{{%p[0-9]+}} red.release.cta.shared.xor.b32 [{{%r[0-9]+}}], {{%r[0-9]+}};
// XOR32-NEXT:  setp.ne.b32
// XOR32-NEXT:  and.pred
// XOR32-NEXT:  @{{%p[0-9]+}} red.release.cta.shared.xor.b32 [{{%r[0-9]+}}+4], {{%r[0-9]+}};
// XOR32-NOT:   atom.release.cta.shared.xor.b64
// XOR-BAD:     error: target 'ptx': lowering option bit_signal must be 'xor64' or 'xor32', got 'or'
// LSU:         mbarrier.init.shared::cta.b64 [{{.*}}], 32;

// uniform-checks: a branch the kernel declares warp-uniform is a guarded
// bra.uni (UNI); with the option, a vote.sync.uni over the threads that reach
// it (activemask) comes first, a disagreement writes the error record (code
// 6, ERR_DIVERGENT: SM, warp, the check's number), and the branch is a plain
// bra (UNI-CHECKED).
// UNI-NOT:             vote.sync.uni
// UNI:                 $L_role_compute_0:
// UNI:                 @{{!?%p[0-9]+}} bra.uni $L_
// UNI-NOT:             vote.sync.uni
// UNI-CHECKED-NOT:     @{{!?%p[0-9]+}} bra.uni
// UNI-CHECKED:         activemask.b32 [[ACTIVE:%r[0-9]+]];
// UNI-CHECKED-NEXT:    vote.sync.uni.pred [[AGREE:%p[0-9]+]], [[CLAIM:%p[0-9]+]], [[ACTIVE]];
// UNI-CHECKED-NEXT:    @[[AGREE]] bra [[OK:\$L_uniform_ok_0]];
// UNI-CHECKED-NEXT:    atom.relaxed.gpu.global.cas.b32 [[OLD:%r[0-9]+]], [{{%rd[0-9]+}}], 0, 6;
// UNI-CHECKED-NEXT:    setp.eq.u32 [[WON:%p[0-9]+]], [[OLD]], 0;
// UNI-CHECKED-NEXT:    @[[WON]] st.relaxed.gpu.global.u32 [{{%rd[0-9]+}}+4], {{%r[0-9]+}};
// UNI-CHECKED-NEXT:    @[[WON]] st.relaxed.gpu.global.u32 [{{%rd[0-9]+}}+60], {{%r[0-9]+}};
// UNI-CHECKED-NEXT:    @[[WON]] st.relaxed.gpu.global.u32 [{{%rd[0-9]+}}+56], 0;
// UNI-CHECKED-NEXT:    [[OK]]:
// UNI-CHECKED-NEXT:    @{{!?}}[[CLAIM]] bra $L_
// UNI-CHECKED-NOT:     @{{!?%p[0-9]+}} bra.uni

// stream-evict-first (on by default): the stream engine makes one L2
// evict_first policy and its copies carry it; the load engine's do not.
// With it off, no policy and no cache hints.
// EVICT:         $L_ld_top_0:
// EVICT-NOT:     cache_hint
// EVICT:         $L_role_stream_0:
// EVICT:         createpolicy.fractional.L2::evict_first.b64 [[POL:%rd[0-9]+]];
// EVICT:         cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [{{%r[0-9]+}}], [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%r[0-9]+}}], [[POL]];
// EVICT:         cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [{{%r[0-9]+}}], [{{%rd[0-9]+}}], {{%r[0-9]+}}, [{{%r[0-9]+}}], [[POL]];
// EVICT:         $L_role_compute_0:
// NO-EVICT-NOT:  createpolicy
// NO-EVICT-NOT:  cache_hint

// load-ring / stream-ring: the loads the load and the stream engine keep in
// flight, one mbarrier per slot. Each engine has its own ring and the header
// has room for 8 slots each (MAX_LOAD_RING): with load-ring=4, the load
// engine's mbarriers are at 16 .. 40, and the stream engine's 2 (its default)
// at 80 and 88 (its ring starts 8 slots after the load engine's, whatever
// the depths are); each engine keeps up to its depth in flight and picks its
// slot as pos & (depth - 1).
// RING:          mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+16], 1;
// RING-NEXT:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+24], 1;
// RING-NEXT:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+32], 1;
// RING-NEXT:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+40], 1;
// RING-NEXT:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+80], 1;
// RING-NEXT:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+88], 1;
// RING-NEXT:     fence.mbarrier_init.release.cluster;
// RING:          $L_ld_issue_0:
// RING:          setp.ge.u32 [[FULL:%p[0-9]+]], {{%r[0-9]+}}, 4;
// RING-NEXT:     @[[FULL]] bra $L_ld_idle_0;
// RING:          selp.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%p[0-9]+}};
// RING-NEXT:     and.b32 [[SLOT:%r[0-9]+]], {{%r[0-9]+}}, 3;
// RING-NEXT:     mad.lo.u32 [[B8:%r[0-9]+]], [[SLOT]], 8, {{%r[0-9]+}};
// RING-NEXT:     add.u32 {{%r[0-9]+}}, [[B8]], 16;
// RING:          $L_ld_stream_issue_0:
// RING:          setp.ge.u32 [[SFULL:%p[0-9]+]], {{%r[0-9]+}}, 2;
// RING-NEXT:     @[[SFULL]] bra $L_ld_stream_idle_0;
// RING:          selp.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%p[0-9]+}};
// RING-NEXT:     and.b32 [[SSLOT:%r[0-9]+]], {{%r[0-9]+}}, 1;
// RING-NEXT:     mad.lo.u32 [[SB8:%r[0-9]+]], [[SSLOT]], 8, {{%r[0-9]+}};
// RING-NEXT:     add.u32 {{%r[0-9]+}}, [[SB8]], 80;
// stream-ring=8: eight mbarriers from 80, and the stream engine's slot is pos & 7.
// SRING:         mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+72], 1;
// SRING-NEXT:    mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+80], 1;
// SRING-COUNT-7: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+{{8[8-9]|9[0-9]|1[0-3][0-9]}}], 1;
// SRING-NEXT:    fence.mbarrier_init.release.cluster;
// SRING:         $L_ld_stream_issue_0:
// SRING:         setp.ge.u32 [[S8:%p[0-9]+]], {{%r[0-9]+}}, 8;
// SRING-NEXT:    @[[S8]] bra $L_ld_stream_idle_0;
// SRING-POW2:    error: target 'ptx': lowering option stream_ring must be a power of two, got 3
// stream-ring left out (0): the target's ring for the program
// (TargetDescription.stream_ring_for). This program hands nothing through
// global memory, so the H100 keeps two tiles in flight as the H200 does:
// mbarriers at 80 and 88, and the stream engine idles with two loads in
// flight (a program with hand-offs gets one there: stream-ring-handoffs.mlir).
// SRING-H100:      mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+72], 1;
// SRING-H100-NEXT: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+80], 1;
// SRING-H100-NEXT: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+88], 1;
// SRING-H100-NEXT: fence.mbarrier_init.release.cluster;
// SRING-H100:      $L_ld_stream_issue_0:
// SRING-H100:      setp.ge.u32 [[S2:%p[0-9]+]], {{%r[0-9]+}}, 2;
// SRING-H100-NEXT: @[[S2]] bra $L_ld_stream_idle_0;
// RING-POW2:     error: target 'ptx': lowering option load_ring must be a power of two, got 6
// RING-RANGE:    error: target 'ptx': lowering option load_ring must be in 1..8, got 16

// compute-warps=4: 2 + 4 + 1 warps (load, store, compute group, stream).
// FENCE:       .maxntid 224, 1, 1
// FENCE:       fence.acq_rel.gpu
// FENCE:       red.release.gpu

// trace: the trace buffer is the last parameter; thread 0 records the CTA's
// %smid + 1 in the CTA's word at the buffer's head (256 words, 2048 bytes);
// after them each engine stamps %globaltimer at an instruction's start (word 0)
// and end (word 1), 16 bytes per instruction
// TRACE:       .param .u64 p_scalars,
// TRACE-NEXT:  .param .u64 p_trace
// TRACE-NEXT:  )
// TRACE:       ld.param.u64 [[P:%rd[0-9]+]], [p_trace];
// TRACE:       cvta.to.global.u64 [[BUF:%rd[0-9]+]], [[P]];
// TRACE:       mov.u32 [[SMID:%r[0-9]+]], %smid;
// TRACE-NEXT:  add.u32 [[SMID1:%r[0-9]+]], [[SMID]], 1;
// TRACE-NEXT:  cvt.u64.u32 [[WORD:%rd[0-9]+]], [[SMID1]];
// TRACE-NEXT:  mul.wide.u32 [[OFF:%rd[0-9]+]], {{%r[0-9]+}}, 8;
// TRACE-NEXT:  add.u64 [[AT:%rd[0-9]+]], [[BUF]], [[OFF]];
// TRACE-NEXT:  @{{%p[0-9]+}} st.global.u64 {{\[}}[[AT]]], [[WORD]];
// TRACE-NEXT:  bar.sync 0;
// (the load engine's loop head retires first: its end stamp comes first in the text)
// TRACE:       $L_ld_top_0:
// TRACE:       red.release.gpu.global.add.u32
// TRACE-NEXT:  mov.u64 [[T2:%rd[0-9]+]], %globaltimer;
// TRACE:       @{{%p[0-9]+}} st.global.u64 {{\[}}{{%rd[0-9]+}}+2056], [[T2]];
// TRACE:       $L_ld_issue_0:
// TRACE:       mov.u64 [[T:%rd[0-9]+]], %globaltimer;
// TRACE-NEXT:  add.u32 [[I:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// TRACE-NEXT:  mul.wide.u32 [[O:%rd[0-9]+]], [[I]], 16;
// TRACE-NEXT:  add.u64 [[A:%rd[0-9]+]], [[BUF]], [[O]];
// TRACE-NEXT:  @{{%p[0-9]+}} st.global.u64 {{\[}}[[A]]+2048], [[T]];

// UNKNOWN:     error: target 'ptx': unknown lowering option 'no-such-option' (known: split_copies, load_path, fetch_depth, load_ring, stream_ring, stream_evict_first, compute_warps, tensor_copies, bit_signal, release_fence, run_loops, control_warp, signal_warp, cluster_size, batch_releases, trace, uniform_checks)
// UNKNOWN-NOT: {{.}}
// cluster-size: the kernel is launched in clusters of that many CTAs (the
// default, 1, prints neither directive: DEFAULT-NOT above); the grid must be
// whole clusters.
// CLUSTER:      .minnctapersm 1
// CLUSTER-NEXT: .explicitcluster
// CLUSTER-NEXT: .reqnctapercluster 2, 1, 1
// CLUSTER-GRID: error: target 'ptx{cluster-size=2}' failed: lowering option cluster_size=2 needs a grid of whole clusters; the program runs on 1 SM
// CLUSTER-SIZE: error: target 'ptx': lowering option cluster_size must be one of 1, 2, 4, 8, got 3
// VALUE:       error: target 'ptx': lowering option load_path must be 'bulk' or 'lsu', got 'dma'
// RANGE:       error: target 'ptx': lowering option split_copies must be in 1..32, got 33
// TWO:         error: target 'ptx': lowering option 'split-copies' takes one value
// SYNTAX:      {{^}}error: bad target 'ptx{split-copies=}': Unknown argument value, wrap argument in quotes to pass arbitrary string values
// SYNTAX-NOT:  Traceback
// PIPELINE:    error: bad pass pipeline 'vdir-pipeline{num-sms=': Unknown argument value
// PIPELINE-NOT: Traceback

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
