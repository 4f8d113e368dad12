// RUN: not vdir-opt %s -p vdir-fuse 2>&1 | filecheck %s

// Fusion runs before placement: on a placed program every op names its SM,
// and fusing across SMs would move work silently, so the pass refuses.

// CHECK: fuse-stage.mlir:[[# @LINE + 1]]:1: error: vdir-fuse: fusion needs a source program, but @placed is at stage 'placed'; run vdir-fuse before vdir-place
vdir.program @placed(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, in, out]>} {
  %xt = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] {vdir.sched = #vdir.sched<id = 1, sm = 0>} : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) on compute {vdir.sched = #vdir.sched<id = 2, sm = 0>} : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute add(%a, %xt) on compute {vdir.sched = #vdir.sched<id = 3, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %y, %out[0, 0] {vdir.sched = #vdir.sched<id = 4, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
