// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Scalar arguments declare a non-empty 32-bit range and follow the buffers;
// a micro-op's condition compares with '>=' or '<'; a runtime repeat bound
// needs its compile-time maximum.

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: scalar %n: range 5 to 5 must be non-empty and within 32-bit integers
vdir.program @empty_range(%x: !vdir.buffer<1x8xbf16>, %n: index in 5 to 5) {
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: scalar %n: range 0 to 4294967296 must be non-empty and within 32-bit integers
vdir.program @too_wide(%x: !vdir.buffer<1x8xbf16>, %n: index in 0 to 4294967296) {
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #1: buffers come before the scalar arguments
vdir.program @order(%n: index in 0 to 4, %x: !vdir.buffer<1x8xbf16>) {
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:61: error: Expected 'in' and the range of a scalar argument ('%n: index in 0 to 64')
vdir.program @no_range(%x: !vdir.buffer<1x8xbf16>, %n: index) {
}

// -----

vdir.program @bad_comparison(%x: !vdir.buffer<1x8xbf16>, %n: index in 0 to 4) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:35: error: expected '>=' or '<' in a micro-op's condition
  %t = vdir.load %x[0, 0] when %n == 2 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}

// -----

vdir.program @no_max(%x: !vdir.buffer<1x8xbf16>, %n: index in 0 to 4) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:28: error: Expected 'max' after a runtime upper bound (it needs a compile-time maximum)
  vdir.repeat %i = 0 to %n {
  }
}

// -----

// vdir.read reads an element of an i32 buffer, inside it.

vdir.program @read_dtype(%x: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.read reads an i32 buffer, got bf16
  %v = vdir.read %x[0, 0] : !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @read_bounds(%ids: !vdir.buffer<1x4xi32>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.read of element (0, 4) is outside the 1x4 buffer
  %v = vdir.read %ids[0, 4] : !vdir.buffer<1x4xi32>
}

// -----

vdir.program @read_type(%ids: !vdir.buffer<1x4xi32>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:18: error: SSA value %ids has type !vdir.buffer<1x4xi32>, but is used as !vdir.buffer<2x4xi32>
  %v = vdir.read %ids[0, 0] : !vdir.buffer<2x4xi32>
}
