// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 reroll=false}' -t isa | filecheck %s --check-prefix=UNROLLED

// vdir-encode rerolls each queue: a block of instructions that repeats with
// every word stepping by a constant becomes one loop record ("loop TRIPS x
// BODY {"), the body's instructions as the first trip runs them and, under
// each, the step record it names: what changes from one trip to the next
// (here the four instructions of a body share one, "1 step"). The loop
// record's flips name the bits whose awaited parity flips on the odd trips
// ("flips 0xaa"): each slot's bit is toggled once a trip, so its waiter
// expects 1, 0, 1, ... Straight instructions are
// numbered by their position in the executed stream, so the compute queue's
// loop of 6 trips of 4 at position 4 is followed by position 28 (the stream
// queue's 7 trips from position 4 end it). With reroll=false every
// executed instruction is its own record.

// The loads wait on nothing, so vdir-place puts them on the stream engine,
// whose queue is listed last (queues print in the target's engine order:
// load, compute, store, stream; the empty load queue is not listed).

// CHECK-NOT:  sm 0 load:
// CHECK:      sm 0 compute:
// CHECK:        4: loop 6 x 4 {  // 1 step, flips 0xf55
// CHECK-NEXT:     add(smem[0], smem[0]) -> smem[128] p=(1, 64, 0) wait(b0=0, b8=1) signal(b1)  // %s[i=4]
// CHECK-NEXT:       step #0: uop_id+12
// CHECK-NEXT:     add(smem[256], smem[256])
// CHECK-NEXT:       step #0: uop_id+12
// CHECK:        }
// CHECK-NEXT:   28: add(smem[0], smem[0])
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: loop 7 x 4 {  // 1 step, flips 0xaa
// CHECK-NEXT:     store smem[128] -> @y+0 [1 x 128B, stride 128] tmap0(0, 0) wait(b1=1) signal(b0)
// CHECK-NEXT:       step #0: uop_id+12 global_offset+512 trow+4
// CHECK:        }
// CHECK-NEXT:   28: store smem[128] -> @y+3584
// CHECK:      sm 0 stream:
// CHECK-NEXT:   0: load  @x+0 [1 x 128B, stride 128] -> smem[0] tmap1(0, 0) signal(b0)  // %t[i=0]
// CHECK:        4: loop 7 x 4 {  // 1 step, flips 0xaa
// CHECK-NEXT:     load  @x+512 [1 x 128B, stride 128] -> smem[0] tmap1(4, 0) wait(b1=1) signal(b8)  // %t[i=4]
// CHECK-NEXT:       step #0: uop_id+12 global_offset+512 trow+4
// CHECK-NEXT:     load  @x+640
// CHECK:        }
// CHECK-NOT:    {{[0-9]+}}:

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
