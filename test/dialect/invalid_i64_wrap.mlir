// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s
// RUN: not vdir-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// An integer in [2^63, 2^64) is not wrapped around to a negative number
// (xDSL keeps it in an i64 as its two's complement): wherever the text gives
// one that vdir reads as a signed integer, the error shows the number as
// written, at the number. The same holds for the other signless widths.

// EXIT: {{.*}}:16:40: error: flow id 18446744073709551615 does not fit in a signed 64-bit integer
// EXIT-NOT: Traceback

// A flow id in the custom form.

vdir.program @flow(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:40: error: flow id 18446744073709551615 does not fit in a signed 64-bit integer
  %t = vdir.load %a[0, 0] on load flow 18446744073709551615 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

// A flow id in the generic form, typed and untyped.

"vdir.program"() <{sym_name = "generic_flow", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:97: error: integer 18446744073709551615 does not fit in i64 (a signed 64-bit integer)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, flow = 18446744073709551615 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}) : () -> ()

// -----

"vdir.program"() <{sym_name = "untyped_flow", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:97: error: integer 9223372036854775808 does not fit in i64 (a signed 64-bit integer)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, flow = 9223372036854775808, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}) : () -> ()

// -----

// Generic repeat bounds (a hexadecimal literal too).

"vdir.program"() <{sym_name = "repeat_upper", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:46: error: integer 18446744073709551615 does not fit in i64 (a signed 64-bit integer)
  "vdir.repeat"() <{lower = 0 : i64, upper = 18446744073709551615 : i64, step = 1 : i64}> ({
  ^bb0(%i: index):
    %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()

// -----

"vdir.program"() <{sym_name = "repeat_step", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:62: error: integer 18446744073709551615 does not fit in i64 (a signed 64-bit integer)
  "vdir.repeat"() <{lower = 0 : i64, upper = 4 : i64, step = 18446744073709551615 : i64}> ({
  ^bb0(%i: index):
    %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()

// -----

"vdir.program"() <{sym_name = "repeat_lower", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:29: error: integer 0xFFFFFFFFFFFFFFFF does not fit in i64 (a signed 64-bit integer)
  "vdir.repeat"() <{lower = 0xFFFFFFFFFFFFFFFF : i64, upper = 4 : i64, step = 1 : i64}> ({
  ^bb0(%i: index):
    %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()

// -----

// A repeat bound of another integer type is refused (not read as unsigned), naming the property.

"vdir.program"() <{sym_name = "repeat_ui64", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: property 'upper' of vdir.repeat: Expected attribute i64 but got ui64
  "vdir.repeat"() <{lower = 0 : i64, upper = 18446744073709551615 : ui64, step = 1 : i64}> ({
  ^bb0(%i: index):
    %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  }) : () -> ()
}) : () -> ()

// -----

// A condition's bound, an offset, a scalar's range, a vdir.read position.

vdir.program @guard(%a: !vdir.buffer<1x8xbf16>, %n: index in 0 to 4) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:38: error: condition bound 18446744073709551615 does not fit in a signed 64-bit integer
  %t = vdir.load %a[0, 0] when %n >= 18446744073709551615 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @offset(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:21: error: offset 18446744073709551615 does not fit in a signed 64-bit integer
  %t = vdir.load %a[18446744073709551615, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

"vdir.program"() <{sym_name = "generic_offset", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:54: error: integer 18446744073709551615 does not fit in i64 (a signed 64-bit integer)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 18446744073709551615, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}) : () -> ()

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:67: error: scalar range bound 18446744073709551615 does not fit in a signed 64-bit integer
vdir.program @range(%a: !vdir.buffer<1x8xbf16>, %n: index in 0 to 18446744073709551615) {
  %t = vdir.load %a[0, 0] when %n >= 2 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @read(%ids: !vdir.buffer<1x4xi32>, %a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:26: error: vdir.read position 18446744073709551615 does not fit in a signed 64-bit integer
  %v = vdir.read %ids[0, 18446744073709551615] : !vdir.buffer<1x4xi32>
  %t = vdir.load %a[0, 0] when %v >= 1 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

// A family parameter, and a 32-bit segment size that would wrap.

vdir.program @param(%a: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:44: error: integer 18446744073709551615 does not fit in i64 (a signed 64-bit integer)
  %u = vdir.compute rmsnorm(%t, %t) {eps = 18446744073709551615 : i64} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

"vdir.program"() <{sym_name = "segments", arg_names = ["a"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
  // CHECK: {{.*}}:[[# @LINE + 1]]:132: error: integer 4294967295 does not fit in i32 (a signed 32-bit integer)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 4294967295>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = "vdir.store"(%t, %a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
}) : () -> ()
