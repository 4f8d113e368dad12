// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 keep-trips=true}' -t isa > %t.stamped
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 keep-trips=true stamp-trips=false}' -t isa > %t.full
// RUN: diff %t.stamped %t.full
// RUN: filecheck %s < %t.stamped
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 keep-trips=true}' | vdir-opt -t isa | filecheck %s

// The twelve-layer loop of pipeline-keep-trips.mlir (there eight layers).
// With keep-trips, vdir-pipeline compiles the loop at 4 and at 5 trips and
// stamps the encoding to 12 (vdir.analysis.trip_stamp): the words that move
// with the trip count (the loop's trips, the micro-op ids, the counters)
// step from 4 to 5 trips as from 5 to 12. The listing is the one that
// compiling all twelve layers gives (stamp-trips=false; the diff above),
// down to the micro-op names of the last layer and the counter of each.

// CHECK:       // @layers: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 12 global counter(s)
// CHECK-LABEL: sm 0 load:
// CHECK-NEXT:    0: loop 12 x 1 {  // 1 step, flips 0x{{[0-9a-f]+}}
// CHECK-NEXT:      load  @h+0 [1 x 4096B, stride 4096] -> smem[{{[0-9]+}}] tmap0(0, 0) wait(b{{[0-9]+}}=0) signal({{.*}})  // %ht[l=0]
// CHECK-NEXT:        step #0: wait_counter+1 uop_id+10 global_offset+4096 trow+1
// CHECK-NEXT:  }
// CHECK-LABEL: sm 0 store:
// CHECK-NEXT:    0: loop 12 x 3 {  // 2 steps, flips 0x{{[0-9a-f]+}}
// CHECK:             step #1: release_counter+1 uop_id+10 global_offset+4096 trow+1
// CHECK-NEXT:  }
// CHECK-LABEL: sm 1 load:
// CHECK-NEXT:    0: loop 12 x 1 {

vdir.program @layers(%h: !vdir.buffer<13x2048xbf16>, %w: !vdir.buffer<1152x2048xbf16>) {
  vdir.repeat %l = 0 to 12 {
    %ht = vdir.load %h[%l, 0] : !vdir.buffer<13x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %next = affine.apply affine_map<(d0) -> (d0 + 1)> (%l)
    vdir.repeat %i = 0 to 6 {
      %r = affine.apply affine_map<(d0, d1) -> (d0 * 96 + d1 * 16)> (%l, %i)
      %wt = vdir.load %w[%r, 0] : !vdir.buffer<1152x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %yt = vdir.compute gemv(%wt, %ht) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %c = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
      %s = vdir.store %yt, %h[%next, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<13x2048xbf16>
    }
  }
}
