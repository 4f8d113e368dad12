// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2 stream-loads=false}' | filecheck %s --check-prefix=NOSTREAM
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 stream-loads=false}' -t isa | filecheck %s --check-prefix=ISA-NOSTREAM

// vdir-place picks the load engine of every load. A load that waits on
// nothing (no dependency, no flow) goes to the stream engine of its SM: here
// the input row %xt (a copy on each SM) and the weight tiles %wa and %wb.
// The loads that wait stay on the load engine: %ht reads @h, which both SMs
// store (a memory dependency on a store of the other SM), and %zt is ordered
// behind the store %sa by an `after` token. So on each SM the weight tiles
// stream in their own queue and never sit behind a load that waits on
// another SM.

vdir.program @stream(%w: !vdir.buffer<128x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %h: !vdir.buffer<1x128xbf16>, %z: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x128xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wa = vdir.load %w[0, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %ha = vdir.compute gemv(%wa, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %sa = vdir.store %ha, %h[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %wb = vdir.load %w[64, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %hb = vdir.compute gemv(%wb, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %sb = vdir.store %hb, %h[0, 64] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %ht = vdir.load %h[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %sy = vdir.store %ht, %y[0, 0] : !vdir.tile<1x128xbf16>, !vdir.buffer<1x128xbf16>
  %zt = vdir.load %z[0, 0] after %sa : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %so = vdir.store %zt, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// The gemv clusters land on SM 0 (%wa) and SM 1 (%wb); %ht waits on the
// stores of both (ids S0 on SM 0, S1 on SM 1), %zt, on SM 1, on S0.

// CHECK-LABEL: vdir.program @stream
// CHECK-SAME:    vdir.stage = #vdir.stage<placed>
// CHECK:       %xt = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0>}
// CHECK-NEXT:  %wa = vdir.load %w[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0>}
// CHECK-NEXT:  %ha = vdir.compute gemv(%wa, %xt) on compute {vdir.sched = #vdir.sched<id = 2, sm = 0>}
// CHECK-NEXT:  vdir.store %ha, %h[0, 0] on store {vdir.sched = #vdir.sched<id = [[S0:[0-9]+]], sm = 0>}
// CHECK-NEXT:  %ht = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 4, seq = 7, sm = 0, after = {{\[\[}}[[S0]], [[S1:[0-9]+]]]]>}
// CHECK-NEXT:  vdir.store %ht, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 5, seq = 8, sm = 0>}
// CHECK-NEXT:  %xt_1 = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 6, seq = 0, sm = 1>}
// CHECK-NEXT:  %wb = vdir.load %w[64, 0] on stream {vdir.sched = #vdir.sched<id = 7, seq = 4, sm = 1>}
// CHECK-NEXT:  %hb = vdir.compute gemv(%wb, %xt_1) on compute {vdir.sched = #vdir.sched<id = 8, seq = 5, sm = 1>}
// CHECK-NEXT:  vdir.store %hb, %h[0, 64] on store {vdir.sched = #vdir.sched<id = [[S1]], seq = 6, sm = 1>}
// CHECK-NEXT:  %zt = vdir.load %z[0, 0] on load {vdir.sched = #vdir.sched<id = 10, seq = 9, sm = 1, after = {{\[\[}}[[S0]]]]>}
// CHECK-NEXT:  vdir.store %zt, %out[0, 0] on store {vdir.sched = #vdir.sched<id = 11, seq = 10, sm = 1>}

// stream-loads=false: the same placement, every load on the load engine.

// NOSTREAM-LABEL: vdir.program @stream
// NOSTREAM:       %xt = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>}
// NOSTREAM-NEXT:  %wa = vdir.load %w[0, 0] on load {vdir.sched = #vdir.sched<id = 1, sm = 0>}
// NOSTREAM:       %ht = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 4, seq = 7, sm = 0, after = {{\[\[}}3, 9]]>}
// NOSTREAM:       %xt_1 = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 6, seq = 0, sm = 1>}
// NOSTREAM-NEXT:  %wb = vdir.load %w[64, 0] on load {vdir.sched = #vdir.sched<id = 7, seq = 4, sm = 1>}
// NOSTREAM:       %zt = vdir.load %z[0, 0] on load {vdir.sched = #vdir.sched<id = 10, seq = 9, sm = 1, after = {{\[\[}}3]]>}
// NOSTREAM-NOT:   on stream

// The encoded program has four queues per SM, listed in the target's engine
// order (load, compute, store, stream): each SM's load queue holds only its
// waiting load (a global counter wait), its stream queue its weight tile and
// the input row, which wait for nothing: vdir-schedule issues an SM's lone
// weight tile ahead of the small row, and the gemv then waits on the row's
// bit alone (the stream engine completes its loads in order).

// ISA:      sm 0 load:
// ISA-NEXT:   0: load  @h+0 [1 x 256B, stride 256] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) wait(c{{[0-9]+}}>=2*epoch) signal(b{{[0-9]+}})  // %ht
// ISA-NEXT: sm 0 compute:
// ISA-NEXT:   0: gemv(
// ISA:      sm 0 store:
// ISA:      sm 0 stream:
// ISA-NEXT:   0: load  @w+0 [64 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0)  // %wa
// ISA-NEXT:   1: load  @x+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal(b{{[0-9]+}})  // %xt
// ISA-NEXT: sm 1 load:
// ISA-NEXT:   0: load  @z+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) wait(c{{[0-9]+}}>=1*epoch) signal(b{{[0-9]+}})  // %zt
// ISA-NEXT: sm 1 compute:
// ISA-NEXT:   0: gemv(
// ISA:      sm 1 store:
// ISA:      sm 1 stream:
// ISA-NEXT:   0: load  @w+8192 [64 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(64, 0)  // %wb
// ISA-NEXT:   1: load  @x+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal(b{{[0-9]+}})  // %xt
// ISA-NOT:  load

// vdir-pipeline takes the option too: without it the stream queues are empty
// (and not listed) and each load queue holds its SM's three loads.

// ISA-NOSTREAM:      sm 0 load:
// ISA-NOSTREAM-NEXT:   0: load  @w+0
// ISA-NOSTREAM-NEXT:   1: load  @x+0
// ISA-NOSTREAM-NEXT:   2: load  @h+0 {{.*}}wait(c{{[0-9]+}}>=2*epoch)
// ISA-NOSTREAM-NEXT: sm 0 compute:
// ISA-NOSTREAM:      sm 1 load:
// ISA-NOSTREAM-NEXT:   0: load  @w+8192
// ISA-NOSTREAM-NEXT:   1: load  @x+0
// ISA-NOSTREAM-NEXT:   2: load  @z+0 {{.*}}wait(c{{[0-9]+}}>=1*epoch)
// ISA-NOSTREAM-NEXT: sm 1 compute:
// ISA-NOSTREAM-NOT:  stream:
