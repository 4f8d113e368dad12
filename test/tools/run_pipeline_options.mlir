// RUN: vdir-run %s --backend sim --check --pipeline 'num-sms=2 flag-words=4096 prefetch=1' | filecheck %s --check-prefix=RAN
// RUN: not vdir-run %s --backend sim --pipeline 'flag-wrds=64' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not vdir-run %s --backend sim --pipeline 'prefetch=99' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not vdir-run %s --backend sim --num-sms 2 --pipeline 'num-sms=4' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -o %t.mlir
// RUN: not vdir-run %t.mlir --backend sim --pipeline 'prefetch=1' 2>&1 | filecheck %s --check-prefix=ENCODED

// --pipeline gives vdir-pipeline's options to the compile of a source
// program; each is checked before anything is compiled, one line, exit 1.

// RAN: check passed
// UNKNOWN: {{^}}error: --pipeline: unknown pipeline option 'flag-wrds' (known: target, num_sms, fuse, prefetch,
// RANGE: {{^}}error: --pipeline: vdir-pipeline: option 'prefetch' must be at most 64, got 99
// TWICE: {{^}}error: --pipeline: num-sms=2 and the pipeline option num-sms=4 disagree
// ENCODED: run_pipeline_options.mlir.tmp.mlir:2:3: error: --pipeline applies when compiling; the program is already encoded

vdir.program @copy2(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) {
  %t0 = vdir.load %x[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %s0 = vdir.store %t0, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
  %t1 = vdir.load %x[1, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %t1, %y[1, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}
