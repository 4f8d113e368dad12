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

// -----

// Something in a region that starts neither an operation nor a block
// (xDSL's own message was " in block definition", with no head).

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: expected an operation, a block label (^bb0) or '}' closing the region{{$}}
  5
}

// -----

// A sigil without a name after it (a non-ASCII letter is not part of a
// name; xDSL's message printed "{first_char}" unformatted).

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: expected a name after '%' (letters, digits, $ . _ -){{$}}
  %ñ = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
