// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The facts of a laid-out program are checked against the program's layout
// (num_sms, smem_bytes, counter_counts) and its target (SMs, dependency bits,
// shared-memory alignment); each error points at the micro-op at fault.

// The load claims SM 5 of a program placed on one SM; unchecked, vdir-encode
// would leave it out of the encoded program.
vdir.program @sm_out_of_range(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: sm = 5 is out of range: the program is placed on 1 SM
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 5, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// h200 has 64 dependency bits (0..63).
vdir.program @wait_bit_out_of_range(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: wait bit 64 is out of range: target 'h200' has 64 dependency bits
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [64 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @signal_bit_out_of_range(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: signal bit 70 is out of range: target 'h200' has 64 dependency bits
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [70]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// The program has no global counter at all.
vdir.program @wait_counter_out_of_range(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: wait counter 0 is out of range: the program has 0 counters (counter_counts)
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], wait_counters = [0 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @release_counter_out_of_range(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, counter_counts = [1], buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: release counter 1 is out of range: the program has 1 counter (counter_counts)
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], release = [0, 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A wait must expect exactly the releases its counter receives.
vdir.program @wait_count_mismatch(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, counter_counts = [1], buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: wait_counters waits for 2 releases of counter 0, but counter_counts gives it 1
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], wait_counters = [0 : 2], release = [0]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// Nobody releases counter 0, so its waiter would wait forever.
// CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:1: error: counter 0 is released by 0 micro-ops, but counter_counts gives it 1
vdir.program @release_count_mismatch(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, counter_counts = [1], buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], wait_counters = [0 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @smem_misaligned(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: smem = 100 is not a multiple of the 128-byte alignment of target 'h200'
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 100, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @smem_past_arena(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: the 128-byte tile at smem = 1024 ends past smem_bytes = 1024
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 1024, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:1: error: num_sms = 500 exceeds the 132 SMs of target 'h200'
vdir.program @too_many_sms(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 500, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:1: error: buffer_roles gives 1 role for 2 buffer arguments
vdir.program @roles_per_argument(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A micro-op of the layer loop has its trip and its index in the trip
// (vdir-place{keep-trips}), or neither.
vdir.program @trip_without_template(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in, out]>} {
  // CHECK: invalid_sched_ranges.mlir:[[# @LINE + 1]]:3: error: vdir.load: #vdir.sched has a trip and a template of the layer loop, or neither
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, trip = 1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %t, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 1, sm = 0, trip = 1, template = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
