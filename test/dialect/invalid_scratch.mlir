// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// `scratch` follows a buffer argument's type; in the generic form,
// `scratch_args` lists buffer arguments by position, once each, ascending.

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: scratch_args names argument #1, which is not a buffer argument
"vdir.program"() <{sym_name = "scalar", arg_names = ["a", "n"], scalar_ranges = array<i64: 0, 4>, scratch_args = array<i64: 1>}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>, %n: index):
}) : () -> ()

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: scratch_args must list argument positions once each, ascending, got [1, 0]
"vdir.program"() <{sym_name = "order", arg_names = ["a", "b"], scratch_args = array<i64: 1, 0>}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>, %b: !vdir.buffer<1x8xbf16>):
}) : () -> ()

// -----

// A scalar argument takes a range, not `scratch`.
// CHECK: {{.*}}:[[# @LINE + 1]]:68: error: Expected 'in' and the range of a scalar argument ('%n: index in 0 to 64')
vdir.program @scalar_scratch(%a: !vdir.buffer<1x8xbf16>, %n: index scratch) {
}
