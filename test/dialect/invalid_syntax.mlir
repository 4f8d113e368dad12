// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Text that is not IR at all, and malformed micro-op syntax.

this is not IR
// CHECK: error: Operation this is not registered

// -----

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a(0, 0) : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
// CHECK: error: '[' expected

// -----

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, -8] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
// CHECK: error: Expected integer literal

// -----

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  vdir.repeat %i = 0 until 4 {
  }
}
// CHECK: error: Expected 'to'
