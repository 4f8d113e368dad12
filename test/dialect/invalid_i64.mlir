// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Repeat bounds and flow ids are signed 64-bit integers: a larger literal is
// a located error at the number (not wrapped around to a negative value);
// invalid_i64_wrap.mlir has the values in [2^63, 2^64) that xDSL would wrap.

vdir.program @upper(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:25: error: vdir.repeat upper bound 99999999999999999999 does not fit in a signed 64-bit integer
  vdir.repeat %i = 0 to 99999999999999999999 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  }
}

// -----

vdir.program @upper_wraps(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:25: error: vdir.repeat upper bound 9223372036854775808 does not fit in a signed 64-bit integer
  vdir.repeat %i = 0 to 9223372036854775808 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  }
}

// -----

vdir.program @lower(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:20: error: vdir.repeat lower bound -99999999999999999999 does not fit in a signed 64-bit integer
  vdir.repeat %i = -99999999999999999999 to 2 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  }
}

// -----

vdir.program @step(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:32: error: vdir.repeat step 99999999999999999999 does not fit in a signed 64-bit integer
  vdir.repeat %i = 0 to 4 step 99999999999999999999 {
    %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  }
}

// -----

vdir.program @flow(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:40: error: flow id 99999999999999999999 does not fit in a signed 64-bit integer
  %t = vdir.load %a[0, 0] on load flow 99999999999999999999 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

"vdir.program"() <{sym_name = "generic_flow", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:97: error: integer 99999999999999999999 does not fit in i64 (a signed 64-bit integer)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, flow = 99999999999999999999 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}) : () -> ()
