// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s --check-prefix=PLACED
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | vdir-opt -p vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=ISA

// Runtime values through the passes. Expansion lays a runtime-bounded repeat
// out to its maximum and gives each iteration's micro-ops the condition
// `i < n` (written `n - (i + 1) >= 0`); an offset affine in a scalar stays
// symbolic. The flat (placed) form writes both as affine.apply of the scalar
// argument, and reads back to the same program. The encoding puts the
// scalar, the coefficient and the range that keeps the region in bounds into
// the instruction; a runtime region gets no tensor map. The loads wait on
// nothing (a condition on a launch-time scalar is no wait), so vdir-place
// puts them on the stream engine, and the load queues are empty.

vdir.program @p(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 31, %n: index in 0 to 3) {
  %r0 = affine.apply affine_map<(d0) -> (d0 * 2 + 1)> (%pos)
  %t = vdir.load %x[%r0, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
  %s = vdir.store %t, %y[%r0, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
  vdir.repeat %i = 0 to %n max 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %a = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<8x16xbf16>
    %b = vdir.store %a, %y[%r, 0] : !vdir.tile<8x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}

// PLACED:      vdir.program @p(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 31, %n: index in 0 to 3)
// PLACED-NEXT:   %0 = affine.apply affine_map<(d0) -> (((d0 * 2) + 1))> (%pos)
// PLACED-NEXT:   %t = vdir.load %x[%0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0{{(, label = "[^"]*")?}}>}
// PLACED-NEXT:   %1 = vdir.store %t, %y[%0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0{{(, label = "[^"]*")?}}>}
// PLACED-NEXT:   %2 = affine.apply affine_map<(d0) -> ((d0 + -2))> (%n)
// PLACED-NEXT:   %a = vdir.load %x[8, 0] when %2 >= 0 on stream {vdir.sched = #vdir.sched<id = 2, seq = 4, sm = 0{{(, label = "[^"]*")?}}>}
// The stores at the runtime rows may reach rows 1..62: each is ordered after
// that store (write after write).
// PLACED-NEXT:   %3 = vdir.store %a, %y[8, 0] when %2 >= 0 on store {vdir.sched = #vdir.sched<id = 3, seq = 5, sm = 0{{(, label = "[^"]*")?}}, after = {{\[\[}}1]]>}
// PLACED-NEXT:   %4 = affine.apply affine_map<(d0) -> ((d0 + -1))> (%n)
// PLACED-NEXT:   %a_1 = vdir.load %x[0, 0] when %4 >= 0 on stream {vdir.sched = #vdir.sched<id = 4, seq = 2, sm = 1{{(, label = "[^"]*")?}}>}
// PLACED-NEXT:   %5 = vdir.store %a_1, %y[0, 0] when %4 >= 0 on store {vdir.sched = #vdir.sched<id = 5, seq = 3, sm = 1{{(, label = "[^"]*")?}}, after = {{\[\[}}1]]>}

// ISA:       // scalar 0: pos in 0 to 31
// ISA-NEXT:  // scalar 1: n in 0 to 3
// ISA-NOT:   sm 0 load:
// ISA:       sm 0 store:
// ISA-NEXT:    0: store smem[{{[0-9]+}}] -> @y+32 + %pos * 64 (%pos in 0..30) [2 x 32B, stride 32] wait(b0=1) release(c0)
// ISA-NEXT:    1: store smem[{{[0-9]+}}] -> @y+256 [8 x 32B, stride 32] tmap{{[0-9]+}}(8, 0) when(1 * %n + -2 >= 0) wait(b1=1)
// ISA-NEXT:  sm 0 stream:
// ISA-NEXT:    0: load  @x+32 + %pos * 64 (%pos in 0..30) [2 x 32B, stride 32] -> smem[{{[0-9]+}}] signal(b0)
// ISA-NEXT:    1: load  @x+256 [8 x 32B, stride 32] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(8, 0) when(1 * %n + -2 >= 0) signal(b1)
// ISA-NOT:   sm 1 load:
// ISA:       sm 1 store:
// ISA-NEXT:    0: store smem[0] -> @y+0 [8 x 32B, stride 32] tmap{{[0-9]+}}(0, 0) when(1 * %n + -1 >= 0) wait(b0=1) wait(c0>=1*epoch)
// ISA-NEXT:  sm 1 stream:
// ISA-NEXT:    0: load  @x+0 [8 x 32B, stride 32] -> smem[0] tmap{{[0-9]+}}(0, 0) when(1 * %n + -1 >= 0) signal(b0)
