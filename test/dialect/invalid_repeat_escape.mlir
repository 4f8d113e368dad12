// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Values do not escape a repeat iteration: a name defined in the body is not
// visible after it (custom and generic form). Cross-iteration data goes
// through global buffers.

vdir.program @tile_escapes(%a: !vdir.buffer<1x8xbf16>) {
  vdir.repeat %i = 0 to 2 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  }
  // CHECK: {{.*}}:[[# @LINE + 1]]:19: error: SSA value %t is not defined before this use
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @token_escapes(%a: !vdir.buffer<1x8xbf16>) {
  vdir.repeat %i = 0 to 2 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  }
  // CHECK: {{.*}}:[[# @LINE + 1]]:18: error: SSA value %s is not defined before this use
  %j = vdir.join %s
}

// -----

"builtin.module"() ({
  "vdir.program"() <{sym_name = "generic"}> ({
  ^bb0(%a: !vdir.buffer<1x8xbf16>):
    "vdir.repeat"() <{lower = 0 : i64, upper = 2 : i64, step = 1 : i64}> ({
    ^bb1(%i: index):
      %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    }) : () -> ()
    // CHECK: {{.*}}:[[# @LINE + 1]]:23: error: SSA value %t is not defined before this use
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()
