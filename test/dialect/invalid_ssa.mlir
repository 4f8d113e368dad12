// RUN: vdir-opt %s --verify-diagnostics --split-input-file | filecheck %s

// SSA values are defined before they are used, exactly once. (A dependency
// cycle therefore cannot be written in text; the verifier still rejects one
// built through the Python API.)

vdir.program @use_before_def(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:25: error: SSA value %t is not defined before this use
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @cycle(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:29: error: SSA value %v is not defined before this use
  %u = vdir.compute add(%t, %v) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %v = vdir.compute add(%t, %u) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %v, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @undefined(%a: !vdir.buffer<1x8xbf16>) {
  %s = vdir.store %nothing, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
// CHECK: {{.*}}:{{[0-9]+}}:19: error: SSA value %nothing is not defined before this use

// -----

vdir.program @redefined(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
// CHECK: error: SSA value %t is already defined
