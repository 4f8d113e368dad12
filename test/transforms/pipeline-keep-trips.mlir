// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 keep-trips=true}' -t isa | filecheck %s --check-prefix=KEEP
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=DEFAULT
// RUN: vdir-opt %s -p 'vdir-fuse,vdir-verify-deps,vdir-place{num-sms=2 keep-trips=true}' | filecheck %s --check-prefix=PLACED
// RUN: vdir-opt %s -p 'vdir-fuse,vdir-verify-deps,vdir-place{num-sms=2 keep-trips=true},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s --check-prefix=KEEP

// An eight-layer loop, each layer six 16-row gemv tiles of 64 KiB over the
// row the layer before stored, on two SMs. With keep-trips every layer runs
// the same micro-ops on each SM, in the same tile slots (three per SM: a
// layer's three weight tiles fill the ring once), with the same bits, so
// each queue is one loop of all eight layers ("loop 8 x ..."), with no
// record outside it. The first and the last layer are made alike too:
//  - the first layer's row load stays on the load engine, as the later
//    layers' (which wait on the other SM); its wait count is the loop's,
//    which without a counter (wait_counter 0, stepping to c0 on the second
//    trip) is never read;
//  - the first layer's micro-ops wait, as the later layers' do on the layer
//    before, on bits that nothing has toggled yet, with parity 0: met at
//    once ("wait(b8=0)" on the first row load, "wait(b2=0)" on the first
//    weight tile);
//  - the last layer signals and releases (a counter of its own, c7) as the
//    others do, though nothing waits on it.
// What changes per trip: the addresses and tensor-map rows, the micro-op
// ids and the counters (one per layer), in step records that the body's
// instructions share ("1 step", "step #0"), and the parities, which flip on
// the odd trips in the loop record's flips. By default the layers differ in
// SMs, slots and bits, and little folds. The placed program records each
// micro-op's trip and its index in the trip (PLACED), so the passes run one
// at a time keep the layers alike as the pipeline does (the third RUN line
// checks the same listing).

// PLACED: vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, trip = 0, template = 0, label = "%ht[l=0]">}
// PLACED: vdir.load %h[7, 0] on load {vdir.sched = #vdir.sched<id = {{[0-9]+}}, seq = {{[0-9]+}}, sm = 0, trip = 7, template = 0, label = "%ht[l=7]"

// KEEP:       // @layers: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 8 global counter(s)
// KEEP-LABEL: sm 0 load:
// KEEP-NEXT:    0: loop 8 x 1 {  // 1 step, flips 0x{{[0-9a-f]+}}
// KEEP-NEXT:      load  @h+0 [1 x 4096B, stride 4096] -> smem[{{[0-9]+}}] tmap0(0, 0) wait(b{{[0-9]+}}=0) signal({{.*}})  // %ht[l=0]
// KEEP-NEXT:        step #0: wait_counter+1 uop_id+10 global_offset+4096 trow+1
// KEEP-NEXT:  }
// KEEP-LABEL: sm 0 compute:
// KEEP-NEXT:    0: loop 8 x 3 {  // 1 step, flips 0x{{[0-9a-f]+}}
// KEEP:       }
// KEEP-LABEL: sm 0 store:
// KEEP-NEXT:    0: loop 8 x 3 {  // 2 steps, flips 0x{{[0-9a-f]+}}
// KEEP:             step #1: release_counter+1 uop_id+10 global_offset+4096 trow+1
// KEEP-NEXT:  }
// KEEP-LABEL: sm 0 stream:
// KEEP-NEXT:    0: loop 8 x 3 {  // 1 step, flips 0x{{[0-9a-f]+}}
// KEEP-NEXT:      load  @w+0 [16 x 4096B, stride 4096] -> smem[0] tmap2(0, 0) wait(b{{[0-9]+}}=0)
// KEEP-NEXT:        step #0: uop_id+10 global_offset+393216 trow+96
// KEEP:       }
// KEEP-NEXT:  sm 1 load:

// DEFAULT-LABEL: sm 0 load:
// DEFAULT-NOT:   loop 7 x
// DEFAULT-LABEL: sm 0 stream:
// DEFAULT-NOT:   loop 7 x
// DEFAULT-LABEL: sm 1 load:

vdir.program @layers(%h: !vdir.buffer<9x2048xbf16>, %w: !vdir.buffer<768x2048xbf16>) {
  vdir.repeat %l = 0 to 8 {
    %ht = vdir.load %h[%l, 0] : !vdir.buffer<9x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %next = affine.apply affine_map<(d0) -> (d0 + 1)> (%l)
    vdir.repeat %i = 0 to 6 {
      %r = affine.apply affine_map<(d0, d1) -> (d0 * 96 + d1 * 16)> (%l, %i)
      %wt = vdir.load %w[%r, 0] : !vdir.buffer<768x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %yt = vdir.compute gemv(%wt, %ht) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %c = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
      %s = vdir.store %yt, %h[%next, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<9x2048xbf16>
    }
  }
}
