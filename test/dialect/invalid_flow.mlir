// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A flow id is a non-negative integer.

vdir.program @negative_flow(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: flow id -1 is negative
  %t = vdir.load %a[0, 0] on load flow -1 : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @not_an_integer(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:40: error: Expected integer literal
  %t = vdir.load %a[0, 0] on load flow x : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
