// VDIR_JOBS sets how many processes the per-SM stages of vdir-pipeline may
// be split over (vdir.analysis.parallel; a program this small is never
// split). The output does not depend on it; a value that is not a positive
// integer is one located line and exit status 1, whatever the program's size.

// RUN: env VDIR_JOBS=1 vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -o %t.one.mlir
// RUN: env VDIR_JOBS=3 vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -o %t.three.mlir
// RUN: diff %t.one.mlir %t.three.mlir
// RUN: env VDIR_JOBS=0 not vdir-opt %s -p vdir-pipeline 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: env VDIR_JOBS=two not vdir-run %s --backend sim 2>&1 | filecheck %s --check-prefix=WORD

// ZERO:      jobs.mlir: error: vdir-pipeline: VDIR_JOBS must be a positive integer, got '0'
// ZERO-NOT:  {{.}}
// WORD:      jobs.mlir: error: VDIR_JOBS must be a positive integer, got 'two'
// WORD-NOT:  {{.}}

vdir.program @p(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %a = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<16x16xbf16>
    %b = vdir.store %a, %y[%r, 0] : !vdir.tile<16x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}
