// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The scheduled form's attributes reject malformed text where it is written:
// pairs are written as pairs, stages and roles are known words, every field
// is known and given once, numbers are in their range.

vdir.program @odd_pair(%x: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [in]>} {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:77: error: wait entries are 'bit : parity' pairs
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, wait = [3, 1, 5]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

// CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:95: error: unknown stage 'laidout' (known: source, placed, scheduled, allocated, laid-out)
vdir.program @unknown_stage(%x: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laidout>} {
}

// -----

// CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:94: error: unknown stage 'laid-in' (known: source, placed, scheduled, allocated, laid-out)
vdir.program @dashed_stage(%x: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-in>} {
}

// -----

vdir.program @parity(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:77: error: wait parity of bit 3 must be 0 or 1, got 2
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, wait = [3 : 2]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @bit_twice(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:76: error: wait names a bit twice
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, wait = [3 : 1, 3 : 0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @zero_count(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:86: error: wait count of counter 0 must be positive, got 0
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, wait_counters = [0 : 0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @negative_sm(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:66: error: sm must be non-negative, got -1
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = -1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @positive_hoist(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:77: error: hoist counts the places a load moved ahead and must be negative, got 1
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, hoist = 1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @unknown_field(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:61: error: unknown vdir.sched field 'slot' (known: id, seq, hoist, sm, pos, smem, trip, template, flag_words, wait, signal, wait_counters, release, after, label)
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, slot = 1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @field_twice(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:69: error: vdir.sched field 'sm' is given twice
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, sm = 1>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @no_id(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:52: error: #vdir.sched needs an id
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<sm = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

vdir.program @empty_group(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:78: error: an after group names at least one micro-op
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, after = [[]]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}

// -----

// CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:125: error: unknown buffer role 'input' (known: in, out, inout, scratch)
vdir.program @unknown_role(%x: !vdir.buffer<1x64xbf16>) attributes {vdir.layout = #vdir.layout<num_sms = 1, buffer_roles = [input]>} {
}

// -----

// CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:89: error: #vdir.layout needs num_sms
vdir.program @no_sms(%x: !vdir.buffer<1x64xbf16>) attributes {vdir.layout = #vdir.layout<buffer_roles = [in]>} {
}

// -----

vdir.program @flag_words_not_one(%x: !vdir.buffer<1x64xbf16>) {
  // CHECK: invalid_sched_syntax.mlir:[[# @LINE + 1]]:82: error: flag_words is 1 where present, got 2
  %t = vdir.load %x[0, 0] {vdir.sched = #vdir.sched<id = 0, sm = 0, flag_words = 2>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
}
