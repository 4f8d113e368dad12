// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Each stage has the facts of the passes that ran: from 'placed' on every
// micro-op has an id and an SM, from 'scheduled' on a queue position, from
// 'allocated' on every tile a shared-memory offset, and only 'laid-out' has
// bits and counters. Facts a later pass records are errors, as are missing ones.

// Queue positions come from vdir-schedule; a placed program has none yet.
vdir.program @fact_too_early(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: pos is recorded from stage 'scheduled' on, but the program is at stage 'placed'
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @bits_too_early(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: wait is recorded from stage 'laid-out' on, but the program is at stage 'allocated'
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// From stage 'placed' on, every micro-op has an SM.
vdir.program @no_sm(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a micro-op of a program at stage 'placed' needs sm
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @no_pos(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<scheduled>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a micro-op of a program at stage 'scheduled' needs pos
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// From stage 'allocated' on, every tile has its place in shared memory.
vdir.program @no_smem(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a micro-op of a program at stage 'allocated' needs smem
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @store_smem(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a store produces no tile, so it has no smem
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, smem = 256>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @no_sched(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a micro-op of a program at stage 'placed' needs vdir.sched
  %u = vdir.compute add(%t, %t) on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A source program (no vdir.stage) has no schedule facts.
vdir.program @sched_in_source(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: vdir.sched is recorded from stage 'placed' on, but the program is at stage 'source'
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:1: error: vdir.layout is recorded from stage 'placed' on, but the program is at stage 'source'
vdir.program @layout_in_source(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<source>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:1: error: a program at stage 'placed' needs vdir.layout
vdir.program @no_layout(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:1: error: smem_bytes is recorded from stage 'allocated' on, but the program is at stage 'scheduled'
vdir.program @smem_bytes_too_early(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<scheduled>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:1: error: a program at stage 'allocated' needs smem_bytes in vdir.layout
vdir.program @no_smem_bytes(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// The stage is a #vdir.stage attribute, not a string.
// CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:1: error: vdir.stage must be a #vdir.stage<...> attribute, got "placed"
vdir.program @string_stage(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = "placed"} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// Scheduling facts live in vdir.sched only.
vdir.program @loose_attribute(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: unknown attribute 'vdir.sm' (a micro-op's scheduling facts are in vdir.sched)
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>, vdir.sm = 5 : i64} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// From stage 'placed' on, dependencies are after groups of vdir.sched, not tokens.
vdir.program @after_token(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: at stage 'placed' a micro-op's dependencies are the after groups of its vdir.sched, not 'after' tokens
  %v = vdir.load %y[0, 0] on load after %0 {vdir.sched = #vdir.sched<id = 3, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %1 = vdir.store %v, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 4, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A placed program is flat: its micro-ops are the expanded ones.
vdir.program @repeat_when_placed(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_stage.mlir:[[# @LINE + 1]]:3: error: a program at stage 'placed' holds only micro-ops, not vdir.repeat
  vdir.repeat %i = 0 to 2 {
    %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
    %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  }
}
