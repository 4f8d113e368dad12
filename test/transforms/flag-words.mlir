// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-flag-words{max-bytes=4096}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-flag-words,vdir-layout-deps' | filecheck %s --check-prefix=LAID
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 flag-words=4096}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-flag-words,vdir-layout-deps,vdir-encode' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-flag-words{max-bytes=256}' | filecheck %s --check-prefix=SMALL
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=PLAIN

// Two SMs each store half of @mid's row; SM 0 loads the whole row back. With
// vdir-flag-words the two stores and the load carry flag_words: the stores
// also write their bytes as flag words, and the load polls those words rather
// than waiting for a counter. vdir-layout-deps then gives the hand-off no
// counter (the load signals its own consumer, the stores wait for their
// tiles), and the encoding puts each store's words in the sync block, first,
// then its plain store into @mid (the program's output).

// CHECK:      vdir.store %s, %mid[0, 0] on store {vdir.sched = #vdir.sched<{{.*}}flag_words = 1
// CHECK:      %mt = vdir.load %mid[0, 0] on load {vdir.sched = #vdir.sched<{{.*}}flag_words = 1
// CHECK:      vdir.store %s_1, %mid[0, 128] on store {vdir.sched = #vdir.sched<{{.*}}flag_words = 1
// CHECK-NOT:  flag_words

// LAID-NOT:   wait_counters
// LAID-NOT:   release =
// LAID:       %mt = vdir.load %mid[0, 0] on load {vdir.sched = #vdir.sched<{{.*}}flag_words = 1, signal = [{{[0-9]+}}], after = [[2, 8]]>}

// ISA:        // @handoff: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 0 global counter(s)
// ISA-NEXT:   // flag words: 1024 bytes at sync+2048
// ISA:        sm 0 load:
// ISA-NEXT:     0: load  words(@mid) sync+2048 [1 x 512B, stride 512] -> smem[{{[0-9]+}}] signal(b{{[0-9]+}})  // %mt
// ISA:        sm 0 store:
// ISA-NEXT:     0: store smem[[[T0:[0-9]+]]] -> words(@mid) sync+2048 [1 x 256B, stride 512] wait(b{{[0-9]+}}=1)  // store to @mid[i=0]
// ISA-NEXT:     1: store smem[[[T0]]] -> @mid+0 [1 x 256B, stride 512]
// ISA:        sm 1 store:
// ISA-NEXT:     0: store smem[[[T1:[0-9]+]]] -> words(@mid) sync+2560 [1 x 256B, stride 512] wait(b{{[0-9]+}}=1)  // store to @mid[i=1]
// ISA-NEXT:     1: store smem[[[T1]]] -> @mid+256 [1 x 256B, stride 512]

// A load of more bytes than max-bytes keeps its counter.
// SMALL-NOT:  flag_words

// Without the option: a counter, no flag words.
// PLAIN:      // @handoff: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 1 global counter(s)
// PLAIN-NOT:  words(
// PLAIN:      0: load  @mid+0 [1 x 512B, stride 512] -> smem[{{[0-9]+}}] {{.*}}wait(c0>=2*epoch)

vdir.program @handoff(%x: !vdir.buffer<1x256xbf16>, %mid: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x256xbf16>) {
  vdir.repeat %i = 0 to 2 {
    %c = affine.apply affine_map<(d0) -> (d0 * 128)> (%i)
    %xt = vdir.load %x[0, %c] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x128xbf16>
    %s = vdir.compute add(%xt, %xt) : (!vdir.tile<1x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x128xbf16>
    %t = vdir.store %s, %mid[0, %c] : !vdir.tile<1x128xbf16>, !vdir.buffer<1x256xbf16>
  }
  %mt = vdir.load %mid[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %u = vdir.compute add(%mt, %mt) : (!vdir.tile<1x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x256xbf16>
  %w = vdir.store %u, %y[0, 0] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x256xbf16>
}
