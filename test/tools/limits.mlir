// The size limits are options of vdir-opt and vdir-run (vdir.limits):
// --max-micro-ops (the most micro-ops a program may expand to, default
// 500,000), --max-code-bytes and --max-names-bytes (the most bytes an
// encoded program's code and micro-op names may decompress to). This
// program expands to 4 * 2 = 8 micro-ops.

// RUN: not vdir-opt %s -p vdir-place --max-micro-ops 7 2>&1 | filecheck %s --check-prefix=OPT-LOW
// RUN: vdir-opt %s -p vdir-place --max-micro-ops 8 | filecheck %s --check-prefix=OPT-OK
// RUN: not vdir-run %s --backend sim --max-micro-ops 7 2>&1 | filecheck %s --check-prefix=RUN-LOW
// RUN: vdir-run %s --backend sim --check --max-micro-ops 8 | filecheck %s --check-prefix=RUN-OK

// OPT-LOW:      limits.mlir:[[# @LINE + 38]]:3: error: vdir-place: the program expands to more than 7 micro-ops (the limit; --max-micro-ops raises it): this repeat alone reaches 8
// OPT-LOW-NOT:  {{.}}
// OPT-OK:       vdir.program @p
// RUN-LOW:      limits.mlir:[[# @LINE + 35]]:3: error: the program expands to more than 7 micro-ops (the limit; --max-micro-ops raises it): this repeat alone reaches 8
// RUN-LOW-NOT:  {{.}}
// RUN-OK:       check passed

// An encoded program's code and names are inflated only up to their limits,
// when the encoded text is read back (by the verifier, on either tool).

// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -o %t.encoded.mlir
// RUN: not vdir-opt %t.encoded.mlir --max-code-bytes 1000 2>&1 | filecheck %s --check-prefix=CODE
// RUN: not vdir-run %t.encoded.mlir --backend sim --max-names-bytes 10 2>&1 | filecheck %s --check-prefix=NAMES
// RUN: vdir-run %t.encoded.mlir --backend sim --max-code-bytes 100000 | filecheck %s --check-prefix=ENCODED-OK

// CODE:       encoded.mlir:2:3: error: bad encoded program: the program's code decompressed to more than 1,000 bytes (the limit; --max-code-bytes raises it)
// NAMES:      encoded.mlir:2:3: error: bad encoded program: the micro-op names decompressed to more than 10 bytes (the limit; --max-names-bytes raises it)
// ENCODED-OK: backend: sim

// A value that is not a positive integer in plain digits (Python's int()
// would also take '1_000', ' 8' or other scripts' digits) is one line and
// exit status 1, before the input is read.

// RUN: not vdir-opt %s --max-micro-ops 0 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not vdir-opt %s --max-code-bytes=-3 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not vdir-run %s --backend sim --max-names-bytes 1.5 2>&1 | filecheck %s --check-prefix=FRACTION
// RUN: not vdir-run %s --backend sim --max-micro-ops lots 2>&1 | filecheck %s --check-prefix=WORD
// RUN: not vdir-run %s --backend sim --max-micro-ops 1_000 2>&1 | filecheck %s --check-prefix=UNDERSCORE

// ZERO:          {{^}}error: --max-micro-ops: expected a positive integer, got '0'
// ZERO-NOT:      {{.}}
// NEGATIVE:      {{^}}error: --max-code-bytes: expected a positive integer, got '-3'
// FRACTION:      {{^}}error: --max-names-bytes: expected a positive integer, got '1.5'
// FRACTION-NOT:  {{.}}
// WORD:          {{^}}error: --max-micro-ops: expected a positive integer, got 'lots'
// UNDERSCORE:    {{^}}error: --max-micro-ops: expected a positive integer, got '1_000'

vdir.program @p(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %a = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<16x16xbf16>
    %b = vdir.store %a, %y[%r, 0] : !vdir.tile<16x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}
