// RUN: not vdir-opt %s -p vdir-schedule --split-input-file 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p vdir-verify-deps --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// A placed program read back from its text keeps every tile on the SM that
// made it: a tile lives in that SM's shared memory. A hand-edited sm that puts
// a micro-op on another SM than the tile it reads is one located error, naming
// both (it was a KeyError traceback from vdir-schedule or vdir-layout-deps).

// CHECK: placement-errors.mlir:[[# @LINE + 4]]:5: error: vdir-schedule: compute %u on SM 0 reads %t, made on SM 1 ({{.*}}placement-errors.mlir:[[# @LINE + 3]]:5): a tile is read on the SM that made it
// VERIFY: placement-errors.mlir:[[# @LINE + 3]]:5: error: vdir-verify-deps: compute %u on SM 0 reads %t, made on SM 1
vdir.program @p(%a: !vdir.buffer<1x64xbf16>, %b: !vdir.buffer<1x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 2, buffer_roles = [in, out]>} {
    %t = vdir.load %a[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
    %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %u, %b[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: placement-errors.mlir:[[# @LINE + 4]]:5: error: vdir-schedule: store to @b on SM 1 reads %u, made on SM 0 ({{.*}}placement-errors.mlir:[[# @LINE + 3]]:5): a tile is read on the SM that made it
vdir.program @p(%a: !vdir.buffer<1x64xbf16>, %b: !vdir.buffer<1x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 2, buffer_roles = [in, out]>} {
    %t = vdir.load %a[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
    %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %u, %b[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A micro-op id numbers a micro-op of the program: one at or beyond the limit
// on micro-ops is refused (the encoded program's table of names is indexed by
// id: 2^31 took minutes and gigabytes before).

// CHECK: placement-errors.mlir:[[# @LINE + 4]]:5: error: vdir-schedule: store to @b: id 2,147,483,648 is not below the limit of 500,000 micro-ops (--max-micro-ops raises it): ids number a program's micro-ops
vdir.program @p(%a: !vdir.buffer<1x64xbf16>, %b: !vdir.buffer<1x64xbf16>) attributes {target = "h200", vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
    %t = vdir.load %a[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
    %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %u, %b[0, 0] on store {vdir.sched = #vdir.sched<id = 2147483648, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
