// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{run-loops=true}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=PLAIN
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{run-loops=true compute-warps=29}' | filecheck %s --check-prefix=FULL

// A program whose queues are loops (vdir-encode rerolls the 32 rows): the
// engines run the loop records with the lowering option run_loops (off by
// default: the CUDA backend then uploads the executed stream).
// Checked on the store engine (warp 1); every engine fetches the same way.
//
// Its queue row is 16 bytes: first record, executed count, first executed
// index (the trace's), and the byte offset of its first loop entry in the
// same table (layout.kernel_queue_table).

// The kernel runs loops: one more warp than the engines' roles (12 on the H200,
// 384 threads), the compute fetch warp, last (after the stream warp, 10).
// CHECK:      .maxntid 384, 1, 1
// The store warp's queue row (engine 2), loaded in the prologue: its count
// and its loops' byte offset.
// CHECK:      ld.global.nc.v4.u32 {{{%r[0-9]+}}, [[COUNT:%r[0-9]+]], {{%r[0-9]+}}, [[LOOPS:%r[0-9]+]]}, {{\[}}{{%rd[0-9]+}}];
// CHECK:      setp.eq.u32 [[STREAM:%p[0-9]+]], {{%r[0-9]+}}, 10;
// CHECK-NEXT: @[[STREAM]] bra $L_role_stream_0;
// CHECK-NEXT: setp.eq.u32 [[FETCHER:%p[0-9]+]], {{%r[0-9]+}}, 11;
// CHECK-NEXT: @[[FETCHER]] bra $L_role_compute_fetch_0;
// CHECK-NEXT: setp.ge.u32 [[GROUP:%p[0-9]+]], {{%r[0-9]+}}, 2;
// CHECK-NEXT: @[[GROUP]] bra $L_role_compute_0;

// CHECK-LABEL: $L_role_store_0:

// The window (base + 3072, the store engine's) holds 4 slots of 256 bytes:
// lanes 0..7 copy the base record, lanes 8..15 the step record (offset
// lane * 16 mod 128 in it).
// CHECK:      add.u32 [[WIN:%r[0-9]+]], {{%r[0-9]+}}, 3072;
// CHECK:      setp.lt.u32 [[BASE_COPIER:%p[0-9]+]], [[LANE:%r[0-9]+]], 8;
// CHECK-NEXT: and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 127;
// CHECK-NEXT: cvt.u64.u32 {{%rd[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: setp.lt.u32 [[STEP_COPIER:%p[0-9]+]], [[LANE]], 16;

// The cursors' first loop entry: the queue table plus the row's offset.
// CHECK-NEXT: cvt.u64.u32 [[LOFF:%rd[0-9]+]], [[LOOPS]];
// CHECK-NEXT: add.u64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, [[LOFF]];

// Two cursors over the loop entries, each loading the first: the one that
// issues the copies, and the one that reads (it also keeps the loop's pairs,
// flips and ring: the vector at entry + 32).
// CHECK:      ld.global.nc.v4.u32 {{{.*}}}, {{\[}}[[ISSUING:%rd[0-9]+]]];
// CHECK:      ld.global.nc.v4.u32 {{{.*}}}, {{\[}}{{%rd[0-9]+}}+32];

// Priming: each position is located (the cursor moves past entries whose
// loop has ended), in a loop at trip t, body index j (counted, not divided),
// its step record found by the step-index byte j (a shuffle from lane j / 4).
// CHECK:      $L_loop_scan_[[N:[0-9]+]]:
// CHECK-NEXT: setp.lt.u32 [[BEFORE_END:%p[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: @[[BEFORE_END]] bra $L_loop_found_[[N]];
// CHECK-NEXT: add.u64 [[ISSUING]], [[ISSUING]], 128;
// CHECK:      $L_loop_found_[[N]]:
// CHECK-NOT:  div.u32
// CHECK:      shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, 31, 4294967295;
// CHECK:      $L_loop_straight_[[N]]:
// CHECK:      mad.lo.u32 [[DST:%r[0-9]+]], {{%r[0-9]+}}, 256, {{%r[0-9]+}};
// CHECK-NEXT: @{{%p[0-9]+}} cp.async.ca.shared.global {{\[}}[[DST]]], [{{%rd[0-9]+}}], 16;
// CHECK-NEXT: cp.async.commit_group;

// Reading a position: the reading cursor locates it while the copies land,
// then (in a loop, once per position) each lane writes its word of the trip
// over the base: word + t * step, the dependency-bit words by the loop's
// pairs and flips (the parity lanes take the wait mask from two lanes down).
// CHECK-LABEL: $L_st_top_0:
// CHECK:      $L_loop_scan_{{[0-9]+}}:
// CHECK:      cp.async.wait_group 3;
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK:      ld.shared.u32 [[BASEW:%r[0-9]+]], {{\[}}[[WORD:%r[0-9]+]]];
// CHECK-NEXT: ld.shared.u32 [[STEPW:%r[0-9]+]], {{\[}}[[WORD]]+128];
// CHECK:      mad.lo.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, [[STEPW]], [[BASEW]];
// A word in the loop's ring: (base - ring base + (t mod ring) * step) mod
// ring, the quotient from an f64 product with the loop's 1 / ring (worked
// out once per loop entry), no 64-bit division.
// CHECK-NOT:  rem.u64
// CHECK:      mul.wide.u32 {{%rd[0-9]+}}, {{%r[0-9]+}}, [[STEPW]];
// CHECK-NEXT: add.u64
// CHECK-NEXT: cvt.rn.f64.u64
// CHECK-NEXT: mul.rn.f64
// CHECK-NEXT: cvt.rzi.u64.f64
// CHECK-NOT:  rem.u64
// CHECK:      $L_ring_done_{{[0-9]+}}:
// The dependency-bit words: each lane swaps the pairs of one word on an odd
// trip, the parity lanes (3, 4) their flipped parity, the others their base
// word; then the parity lanes keep the bits of the swapped wait mask that
// lanes 1 and 2 worked out (one shuffle up by two lanes, one swap per lane).
// CHECK:      selp.b32 [[BITS_IN:%r[0-9]+]], {{%r[0-9]+}}, [[BASEW]], [[IN_PARITY:%p[0-9]+]];
// CHECK:      selp.b32 [[SWAPPED:%r[0-9]+]], {{%r[0-9]+}}, [[BITS_IN]], {{%p[0-9]+}};
// CHECK-NEXT: shfl.sync.up.b32 [[MASK:%r[0-9]+]], [[SWAPPED]], 2, 0, 4294967295;
// CHECK-NEXT: and.b32 [[PARITY:%r[0-9]+]], [[SWAPPED]], [[MASK]];
// CHECK-NEXT: selp.b32 {{%r[0-9]+}}, [[PARITY]], [[SWAPPED]], [[IN_PARITY]];
// CHECK-NOT:  shfl.sync.up.b32
// CHECK:      st.shared.u32 {{\[}}[[WORD]]], {{%r[0-9]+}};
// CHECK-NEXT: bar.warp.sync 4294967295;
// CHECK:      $L_st_done_0:

// The compute fetch warp owns the compute engine's window (base + 2048): it
// primes it, steps position 0 (the oldest of 4 commit groups), then per
// position hands it over (bar.arrive on barrier 2, 64 threads: it and the
// first compute warp), refills the slot handed back the trip before, steps
// the next position (one commit group lower) while the group runs this one,
// and waits on barrier 3 for the slot (bar.red.or.pred: the group's abort
// flag, its own false), leaving on an abort.
// CHECK-LABEL: $L_role_compute_fetch_0:
// CHECK:      add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2048;
// CHECK:      rcp.rn.f64
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 4294967295;
// CHECK-NEXT: mov.u32 {{%r[0-9]+}}, 0;
// CHECK-NEXT: setp.ne.u32 [[NO_ABORT:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK:      cp.async.commit_group;
// CHECK:      cp.async.wait_group 3;
// CHECK:      $L_cf_top_0:
// CHECK-NEXT: bar.arrive 2, 64;
// CHECK-NEXT: setp.eq.u32 [[FIRST:%p[0-9]+]], [[POS:%r[0-9]+]], 0;
// CHECK-NEXT: @[[FIRST]] bra.uni $L_cf_refilled_0;
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, [[POS]], 3;
// CHECK:      cp.async.commit_group;
// CHECK-NEXT: $L_cf_refilled_0:
// CHECK-NEXT: add.u32 [[NEXT:%r[0-9]+]], [[POS]], 1;
// CHECK:      cp.async.wait_group 2;
// CHECK:      st.shared.u32
// CHECK:      bar.red.or.pred [[ABORTED:%p[0-9]+]], 3, 64, [[NO_ABORT]];
// CHECK-NEXT: @[[ABORTED]] bra.uni $L_cf_done_0;
// CHECK-NEXT: mov.u32 [[POS]], [[NEXT]];

// The compute group neither copies nor steps: its first warp takes the
// position (bar.sync 2, 64) and reads the slot; after the body's barrier it
// hands the slot back (the flag false) before the leader signals; leaving on
// an abort, it hands it back with the flag true.
// CHECK-LABEL: $L_role_compute_0:
// CHECK-NOT:  cp.async
// CHECK:      $L_cp_top_0:
// CHECK-NOT:  cp.async
// CHECK:      bar.sync 2, 64;
// CHECK-NEXT: ld.shared.v4.b32
// CHECK-NOT:  cp.async
// CHECK:      barrier.sync 1, 256;
// CHECK-NOT:  cp.async
// CHECK:      $L_cp_body_done_0:
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK-NEXT: @!{{%p[0-9]+}} bra.uni $L_cp_handed_back_0;
// CHECK-NEXT: setp.ne.u32 [[DONE:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: bar.red.or.pred {{%p[0-9]+}}, 3, 64, [[DONE]];
// CHECK-NEXT: $L_cp_handed_back_0:
// CHECK:      atom.release.cta.shared.xor.b64
// CHECK:      $L_cp_leave_0:
// CHECK-NEXT: @!{{%p[0-9]+}} bra.uni $L_cp_handed_back_1;
// CHECK-NEXT: setp.eq.u32 [[ABORT:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: bar.red.or.pred {{%p[0-9]+}}, 3, 64, [[ABORT]];
// CHECK-NEXT: $L_cp_handed_back_1:
// CHECK-NEXT: $L_cp_done_0:
// Every role, the compute fetch warp's too, leaves through the one exit.
// CHECK:      $L_kernel_exit_0:
// CHECK-NEXT: setp.eq.u32
// CHECK-NEXT: add.u64
// CHECK-NEXT: st.relaxed.gpu.global.u64

// A compute group with no room for one more warp (29 warps: 32 with the load,
// store and stream warps) keeps the window in the group: its second warp
// hands a position over, then works out the next one at once (its copies:
// one commit group later) while the first warp waits for the handed one's
// dependencies.
// FULL:       .maxntid 1024, 1, 1
// FULL-NOT:   $L_role_compute_fetch
// FULL-NOT:   bar.red
// FULL:       $L_cp_top_0:
// FULL:       cp.async.wait_group 3;
// FULL:       bar.arrive 2, 64;
// FULL-NEXT:  add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1;
// FULL:       cp.async.wait_group 2;
// FULL:       shfl.sync.up.b32
// FULL:       barrier.sync 1, 928;
// FULL-NOT:   bar.red

// Without run_loops: the plain walk of the executed stream (which the CUDA
// backend then uploads), 8 slots of one record.
// PLAIN-NOT:  $L_loop_scan
// PLAIN:      cp.async.wait_group 7;

vdir.program @rows(%x: !vdir.buffer<32x64xbf16>, %y: !vdir.buffer<32x64xbf16>) {
  vdir.repeat %i = 0 to 32 {
    %t = vdir.load %x[%i, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.compute add(%t, %t) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %d = vdir.store %s, %y[%i, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<32x64xbf16>
  }
}
