// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 keep-trips=true}' -t isa | filecheck %s --check-prefix=KEEP
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=DEFAULT
// RUN: vdir-opt %s -p 'vdir-fuse,vdir-verify-deps,vdir-place{num-sms=2 keep-trips=true}' | filecheck %s --check-prefix=PLACED
// RUN: vdir-opt %s -p 'vdir-fuse,vdir-verify-deps,vdir-place{num-sms=2 keep-trips=true},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s --check-prefix=KEEP

// An eight-layer loop, each layer six 16-row gemv tiles of 64 KiB over the
// row the layer before stored, on two SMs. With keep-trips every layer runs
// the same micro-ops on each SM, in the same tile slots (three per SM: a
// layer's three weight tiles fill the ring once), with the same bits or a
// pair of them in turn, so each queue is one loop of one layer: 7 trips
// after the first layer (the load queue: the first layer reads the program's
// input, on the stream engine) or before the last (the compute and store
// queues: nothing waits on the last layer). What changes per trip: the
// addresses and tensor-map rows, the micro-op ids, the counters (one per
// layer), and the parities, by XOR on the odd trips. By default the layers
// differ in SMs, slots and bits, and little folds. The placed program records
// each micro-op's trip and its index in the trip (PLACED), so the passes run
// one at a time keep the layers alike as the pipeline does (the third RUN
// line checks the same listing).

// PLACED: vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, trip = 0, template = 0, label = "%ht[l=0]">}
// PLACED: vdir.load %h[7, 0] on load {vdir.sched = #vdir.sched<id = {{[0-9]+}}, seq = {{[0-9]+}}, sm = 0, trip = 7, template = 0, label = "%ht[l=7]"

// KEEP-LABEL: sm 0 load:
// KEEP-NEXT:    0: loop 7 x 1 {
// KEEP-NEXT:      load  @h+4096 [1 x 4096B, stride 4096] -> smem[{{[0-9]+}}] tmap0(1, 0) wait({{.*}}) wait(c0>=2*epoch)
// KEEP-NEXT:        step wait_parity^0x{{[0-9a-f]+}} wait_counter+1 uop_id+10 global_offset+4096 trow+1
// KEEP-NEXT:  }
// KEEP-LABEL: sm 0 compute:
// KEEP:         {{[0-9]+}}: loop 7 x 3 {
// KEEP:       }
// KEEP-NEXT:    {{2[0-9]}}: gemv
// KEEP-LABEL: sm 0 store:
// KEEP-NEXT:    0: loop 7 x 3 {
// KEEP:             step wait_parity^0x{{[0-9a-f]+}} release_counter+1 uop_id+10 global_offset+4096 trow+1
// KEEP-NEXT:  }
// KEEP-NEXT:    21: store
// KEEP-LABEL: sm 0 stream:
// KEEP:         4: loop 7 x 3 {
// KEEP-NEXT:      load  @w+393216 [16 x 4096B, stride 4096] -> smem[0] tmap2(96, 0)
// KEEP-NEXT:        step wait_parity^0x{{[0-9a-f]+}} uop_id+10 global_offset+393216 trow+96

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
