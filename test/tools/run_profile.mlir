// RUN: vdir-run %s --backend sim --num-sms 2 --profile | filecheck %s
// RUN: vdir-run %s --backend sim --num-sms 2 --profile --seed 3 | filecheck %s --check-prefix=SEED
// RUN: vdir-run %s --backend sim --num-sms 2 | filecheck %s --check-prefix=PLAIN

// --profile prints where the launch's time went, after the outputs: the
// micro-ops' span (on the simulator, its cost model's time with the
// launch's fixed cost beside it), each engine kind's busy share, and the
// critical path split into running time by stage (a micro-op's name
// without its indices) and the gaps in which the next micro-op on the path
// waited, by how. Here two gemv blocks on two SMs hand their rows over
// through `mid` to the sum on one SM: the path crosses SMs through the
// counter, whose hand-off the simulator's clock charges 2.0 us after the
// store's bytes, the first 1.6 of them in the store's span (its release
// fence), so 0.4 us on the counter. Last, the timeline: each engine's first
// micro-ops on an SM, in the order it ran them, over the SMs.

// CHECK:      backend: sim
// CHECK:      y: 1x8 f32
// CHECK-NEXT: profile (modelled: the simulator's cost model): 12 micro-ops on 2 SMs in {{[0-9.]+}} us, {{[0-9.]+}} us with the launch's fixed 3.50
// CHECK-NEXT: engines busy (share of the span, mean over SMs): load {{[0-9.]+}}%, compute {{[0-9.]+}}%, store {{[0-9.]+}}%, stream {{[0-9.]+}}%
// CHECK-NEXT: critical path: 6 micro-ops
// CHECK-NEXT: on the path: {{[0-9.]+}} us running, {{.*}}0.4 us between a micro-op and its counter wait
// CHECK-DAG:  {{^}}  ->y {{ +[0-9.]+}} us
// CHECK-DAG:  {{^}}  ->mid {{ +[0-9.]+}} us
// CHECK-DAG:  {{^}}  wt {{ +[0-9.]+}} us
// CHECK-DAG:  {{^}}  p {{ +[0-9.]+}} us
// CHECK-DAG:  {{^}}  m {{ +[0-9.]+}} us
// CHECK-DAG:  {{^}}  yt {{ +[0-9.]+}} us
// CHECK:      timeline (an engine's n-th micro-op on an SM, and its last: median start and end over the SMs)
// CHECK-NEXT: {{^}}  load {{ +}}#0 {{ +}}2 SMs {{ +[0-9.]+}} -> {{ +[0-9.]+}} us  (ends {{[0-9.]+}} to {{[0-9.]+}})
// SEED:       critical path:
// PLAIN-NOT:  profile

vdir.program @two_phase(%x: !vdir.buffer<1x1024xbf16>, %w: !vdir.buffer<16x1024xbf16>,
                        %mid: !vdir.buffer<1x16xbf16>, %y: !vdir.buffer<1x8xf32>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  vdir.repeat %i = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<16x1024xbf16> -> !vdir.tile<8x1024xbf16>
    %p = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x8xbf16>
    %s = vdir.store %p, %mid[0, %r] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x16xbf16>
  }
  %m0 = vdir.load %mid[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x8xbf16>
  %m1 = vdir.load %mid[0, 8] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x8xbf16>
  %yt = vdir.compute add(%m0, %m1) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xf32>
  %ys = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<1x8xf32>
}
