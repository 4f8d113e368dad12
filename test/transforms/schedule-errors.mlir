// RUN: not vdir-opt %s -p vdir-schedule 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p vdir-alloc-smem 2>&1 | filecheck %s --check-prefix=ALLOC
// RUN: not vdir-opt %s -p vdir-layout-deps 2>&1 | filecheck %s --check-prefix=LAYOUT
// RUN: not vdir-opt %s -p vdir-encode 2>&1 | filecheck %s --check-prefix=ENCODE

// Each scheduling pass says which stage it needs and what to run first.

// CHECK: schedule-errors.mlir:[[# @LINE + 4]]:1: error: vdir-schedule: this pass needs a program at stage 'placed' (it is 'source'); run the passes producing 'placed' first
// ALLOC: error: vdir-alloc-smem: this pass needs a program at stage 'scheduled' (it is 'source'); run the passes producing 'placed', 'scheduled' first
// LAYOUT: error: vdir-layout-deps: this pass needs a program at stage 'allocated'
// ENCODE: error: vdir-encode: vdir-encode needs a program at stage 'laid-out' (it is 'source'); run vdir-place, vdir-schedule, vdir-alloc-smem and vdir-layout-deps first
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
