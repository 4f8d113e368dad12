// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 reroll=false}' -t isa | filecheck %s --check-prefix=UNROLLED

// vdir-encode rerolls each queue: a block of instructions that repeats with
// every word stepping by a constant becomes one loop record ("loop TRIPS x
// BODY {"), the body's instructions as the first trip runs them and, under
// each, what changes from one trip to the next. Straight instructions are
// numbered by their position in the executed stream, so the loop of 3 trips
// of 8 at position 4 is followed by position 28. With reroll=false every
// executed instruction is its own record.

// The loads wait on nothing, so vdir-place puts them on the stream engine,
// whose queue is listed last (queues print in the target's engine order:
// load, compute, store, stream; the empty load queue is not listed).

// CHECK-NOT:  sm 0 load:
// CHECK:      sm 0 compute:
// CHECK:        loop 3 x 8 {
// CHECK-NEXT:     add(smem[0], smem[0]) -> smem[128] p=(1, 64, 0) wait({{.*}}) signal(b{{[0-9]+}})  // %s[i=4]
// CHECK-NEXT:       step uop_id+24
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: loop 3 x 8 {
// CHECK-NEXT:     store smem[128] -> @y+0 [1 x 128B, stride 128] tmap0(0, 0)
// CHECK-NEXT:       step uop_id+24 global_offset+1024 trow+8
// CHECK:        }
// CHECK-NEXT:   24: store smem[128] -> @y+3072
// CHECK:      sm 0 stream:
// CHECK-NEXT:   0: load  @x+0 [1 x 128B, stride 128] -> smem[0] tmap1(0, 0) signal(b{{[0-9]+}})  // %t[i=0]
// CHECK:        4: loop 3 x 8 {
// CHECK-NEXT:     load  @x+512 [1 x 128B, stride 128] -> smem[0] tmap1(4, 0) wait(b{{[0-9]+}}=1) signal(b{{[0-9]+}})  // %t[i=4]
// CHECK-NEXT:       step uop_id+24 global_offset+1024 trow+8
// CHECK-NEXT:     load  @x+640
// CHECK:        }
// CHECK-NEXT:   28: load  @x+3584 [1 x 128B, stride 128] -> smem[0] tmap1(28, 0)

// UNROLLED-NOT: sm 0 load:
// UNROLLED:     sm 0 store:
// UNROLLED-NOT: : loop
// UNROLLED:       31: store smem[896] -> @y+3968
// UNROLLED:     sm 0 stream:
// UNROLLED-NOT: : loop
// UNROLLED:       31: load  @x+3968

vdir.program @rows(%x: !vdir.buffer<32x64xbf16>, %y: !vdir.buffer<32x64xbf16>) {
  vdir.repeat %i = 0 to 32 {
    %t = vdir.load %x[%i, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.compute add(%t, %t) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %d = vdir.store %s, %y[%i, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<32x64xbf16>
  }
}
