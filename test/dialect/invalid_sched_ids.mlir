// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Micro-op ids are unique, after groups name ids of the program, and each
// (SM, engine) queue position belongs to one micro-op.

vdir.program @duplicate_id(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ids.mlir:[[# @LINE + 1]]:3: error: id 0 is already the id of the micro-op at {{.*}}invalid_sched_ids.mlir:[[# @LINE - 1]]:3
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 0, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @unknown_after_id(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ids.mlir:[[# @LINE + 1]]:3: error: after names micro-op id 7, which is not in the program
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, after = [[0], [1, 7]]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @shared_position(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<scheduled>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ids.mlir:[[# @LINE + 1]]:3: error: pos = 0 in the load queue of SM 0 is taken by the micro-op at {{.*}}invalid_sched_ids.mlir:[[# @LINE - 1]]:3
  %v = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %v) on compute {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 3, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
