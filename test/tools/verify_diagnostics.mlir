// RUN: vdir-opt %s --verify-diagnostics --split-input-file
// RUN: vdir-opt %s --verify-diagnostics --split-input-file 2>&1 | filecheck %s

// --verify-diagnostics (as in mlir-opt) passes, silently and with status 0,
// when the diagnostics are exactly the expected-* comments: on the op's line,
// @+N / @-N lines away, @below / @above (the nearest line with no directive),
// or @unknown for a diagnostic with no line. Lines count in the whole file.
// A chunk with no expectation must run without a diagnostic.

// CHECK-NOT: error

vdir.program @same_line(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16> // expected-error {{tile %t is produced but never used}}
}

// -----

vdir.program @offsets(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @+2 {{load: column offset 4 is not 16-byte aligned}}

  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @below(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @below {{load: column offset 4}}
  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @above(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // expected-error @above {{SSA value %t is already defined}}
}

// -----

vdir.program @good(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
