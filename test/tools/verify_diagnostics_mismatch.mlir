// RUN: not vdir-opt %s --verify-diagnostics --split-input-file 2> %t.err
// RUN: filecheck %s < %t.err
// RUN: echo 'vdir.program @p() {} // expected-''error without its text' | not vdir-opt - --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MALFORMED
// RUN: echo '// expected-''error @+3 {{nothing there}}' | not vdir-opt - --verify-diagnostics 2>&1 | filecheck %s --check-prefix=NOWHERE

// --verify-diagnostics fails (status 1) when the diagnostics differ from the
// expected-* comments, with one located line for each diagnostic that was not
// expected and each expectation that was not met (at its comment).

// A wrong expected text: the diagnostic is unexpected, the expectation unmet.
vdir.program @wrong_text(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @+1 {{row offset 4 is not 16-byte aligned}}
  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x64xbf16>
}
// CHECK:      verify_diagnostics_mismatch.mlir:13:3: error: unexpected error: load: column offset 4 is not 16-byte aligned
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:12:6: error: expected error "row offset 4 is not 16-byte aligned" was not produced

// -----

// The right text on the wrong line.
vdir.program @wrong_line(%a: !vdir.buffer<4x64xbf16>) {
  // expected-error @+2 {{load: column offset 4 is not 16-byte aligned}}
  %t = vdir.load %a[0, 4] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x64xbf16>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:24:3: error: unexpected error: load: column offset 4
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:23:6: error: expected error "load: column offset 4 is not 16-byte aligned" was not produced

// -----

// An expected error that a valid program does not produce.
vdir.program @missing(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16> // expected-error {{is produced but never used}}
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:34:79: error: expected error "is produced but never used" was not produced

// -----

// An error with no expectation.
vdir.program @unexpected(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:43:3: error: unexpected error: tile %t is produced but never used

// -----

// An expected warning is not met by an error with its text.
vdir.program @kind(%a: !vdir.buffer<1x8xbf16>) {
  // expected-warning @+1 {{is produced but never used}}
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:52:3: error: unexpected error: tile %t is produced but never used
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:51:6: error: expected warning "is produced but never used" was not produced
// CHECK-NOT:  {{.}}

// MALFORMED: <stdin>:1:25: error: malformed expected-{{e}}rror directive: want {{[{][{]text[}][}]}}
// NOWHERE: <stdin>:1:4: error: expected-{{e}}rror @+3 points at no line of the input
