// RUN: not vdir-opt %s -p vdir-layout-deps --split-input-file 2>&1 | filecheck %s --check-prefix=LAYOUT
// RUN: not vdir-opt %s -p vdir-encode --split-input-file 2>&1 | filecheck %s --check-prefix=ENCODE

// A scheduled program's queue positions must follow program order (with
// hoisted loads moved up), as vdir-schedule numbers them: the dependency
// layout walks the micro-ops in that order, and the bits it lays out are for
// it. A hand-edited pos that puts %u, which waits on a store of %t's tile,
// ahead of %t in the load queue is one located error (it was a KeyError
// traceback from vdir-layout-deps, and vdir-encode took it as it was).

// LAYOUT: queue-order-errors.mlir:[[# @LINE + 5]]:5: error: vdir-layout-deps: %u (pos = 0) comes before %t (pos = 1, {{.*}}queue-order-errors.mlir:[[# @LINE + 3]]:5) in the load queue of SM 0, but after it in program order
// ENCODE: queue-order-errors.mlir:[[# @LINE + 1]]:1: error: vdir-encode: vdir-encode needs a program at stage 'laid-out' (it is 'allocated')
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 896, buffer_roles = [in, out]>} {
    %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 1, smem = 0>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %t, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
    %u = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, smem = 128, after = [[1]]>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %1 = vdir.store %u, %y[1, 0] on store {vdir.sched = #vdir.sched<id = 3, sm = 0, pos = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}

// -----

// LAYOUT: queue-order-errors.mlir:[[# @LINE + 2]]:1: error: vdir-layout-deps: the program is already at stage 'laid-out'; this pass expects 'allocated'
// ENCODE: queue-order-errors.mlir:[[# @LINE + 4]]:5: error: vdir-encode: %u (pos = 0) comes before %t (pos = 1, {{.*}}queue-order-errors.mlir:[[# @LINE + 2]]:5) in the load queue of SM 0, but after it in program order
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 896, buffer_roles = [in, out]>} {
    %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 1, smem = 0, signal = [0]>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %t, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, wait = [0 : 1], signal = [1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
    %u = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, smem = 128, wait = [1 : 1], signal = [0], after = [[1]]>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %1 = vdir.store %u, %y[1, 0] on store {vdir.sched = #vdir.sched<id = 3, sm = 0, pos = 1, wait = [0 : 0]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}

// -----

// An after group that names the micro-op itself, or a later one, is a
// dependency cycle (a KeyError traceback from vdir-layout-deps before).

// LAYOUT: queue-order-errors.mlir:[[# @LINE + 5]]:5: error: vdir-layout-deps: %u waits on itself: a dependency cycle
// ENCODE: queue-order-errors.mlir:[[# @LINE + 1]]:1: error: vdir-encode: vdir-encode needs a program at stage 'laid-out' (it is 'allocated')
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 896, buffer_roles = [in, out]>} {
    %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %t, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
    %u = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 1, smem = 128, after = [[2]]>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %1 = vdir.store %u, %y[1, 0] on store {vdir.sched = #vdir.sched<id = 3, sm = 0, pos = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}

// -----

// LAYOUT: queue-order-errors.mlir:[[# @LINE + 5]]:5: error: vdir-layout-deps: %u waits on store to @y on SM 0 ({{.*}}queue-order-errors.mlir:[[# @LINE + 6]]:5), which comes later: a dependency cycle
// ENCODE: queue-order-errors.mlir:[[# @LINE + 1]]:1: error: vdir-encode: vdir-encode needs a program at stage 'laid-out' (it is 'allocated')
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 896, buffer_roles = [in, out]>} {
    %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %t, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
    %u = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 1, smem = 128, after = [[3]]>} : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
    %1 = vdir.store %u, %y[1, 0] on store {vdir.sched = #vdir.sched<id = 3, sm = 0, pos = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}
