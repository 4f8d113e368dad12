// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' | filecheck %s
// RUN: vdir-run %s --backend sim --num-sms 1 --check | filecheck %s --check-prefix=SIM

// Each phase fits on its own (three 64 KiB tiles live together, then three
// 32 KiB tiles), but a ring per size class, each as deep as its peak for the
// whole program, would need 288 KiB of the 223 KiB tile arena. The SM is
// allocated by liveness instead: the second phase's tiles reuse the first
// phase's bytes (never-used bytes are too few), and each waits for the
// consumer of the tile whose bytes it takes (%c, the add). The loads wait on
// nothing when vdir-place places them, so all four run on the stream engine;
// the waits for %c are the allocator's, added after placement.

// CHECK:      %a = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>}
// CHECK-NEXT: %b = vdir.load %x[32, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 1, smem = 65536>}
// CHECK-NEXT: %c = vdir.compute add(%a, %b) on compute {vdir.sched = #vdir.sched<id = [[C:[0-9]+]], sm = 0, pos = 0, smem = 131072>}
// CHECK:      %d = vdir.load %y[0, 0] on stream {vdir.sched = #vdir.sched<id = 4, sm = 0, pos = 2, smem = 0, after = {{\[\[}}[[C]]]]>}
// CHECK-NEXT: %e = vdir.load %y[16, 0] on stream {vdir.sched = #vdir.sched<id = 5, sm = 0, pos = 3, smem = 32768, after = {{\[\[}}[[C]]]]>}
// CHECK-NEXT: %f = vdir.compute add(%d, %e) on compute {vdir.sched = #vdir.sched<id = 6, sm = 0, pos = 1, smem = 65536, after = {{\[\[}}[[C]]]]>}

// SIM: check passed: o equal the reference evaluator's
vdir.program @phases(%x: !vdir.buffer<64x1024xbf16>, %y: !vdir.buffer<32x1024xbf16>, %o: !vdir.buffer<48x1024xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %b = vdir.load %x[32, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %c = vdir.compute add(%a, %b) : (!vdir.tile<32x1024xbf16>, !vdir.tile<32x1024xbf16>) -> !vdir.tile<32x1024xbf16>
  %s = vdir.store %c, %o[0, 0] : !vdir.tile<32x1024xbf16>, !vdir.buffer<48x1024xbf16>
  %d = vdir.load %y[0, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %e = vdir.load %y[16, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %f = vdir.compute add(%d, %e) : (!vdir.tile<16x1024xbf16>, !vdir.tile<16x1024xbf16>) -> !vdir.tile<16x1024xbf16>
  %t = vdir.store %f, %o[32, 0] : !vdir.tile<16x1024xbf16>, !vdir.buffer<48x1024xbf16>
}
