// xDSL's own targets (-t wgsl, x86-asm, ...) are for other dialects: on a vdir
// program one that prints nothing, or fails, is one located line on stderr and
// exit status 1, with vdir's targets named; nothing is written to stdout. The
// IR's text form (-t mlir) still prints it. One of xDSL's passes that fails on
// a vdir program off its diagnostics path (an assertion) is such a line too.

// RUN: not vdir-opt %s -t wgsl > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=NOTHING < %t.err
// RUN: filecheck %s --check-prefix=OUT --allow-empty < %t.out
// RUN: not vdir-opt %s -t x86-asm > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=FAILED < %t.err
// RUN: filecheck %s --check-prefix=OUT --allow-empty < %t.out
// RUN: not vdir-opt %s -t csl 2>&1 | filecheck %s --check-prefix=CSL
// RUN: vdir-opt %s -t mlir | filecheck %s --check-prefix=MLIR
// RUN: not vdir-opt %s -p apply-pdl-interp 2>&1 | filecheck %s --check-prefix=PASS

// NOTHING: {{^.*}}driver_xdsl_targets_and_passes.mlir: error: target 'wgsl' printed nothing for this program; it is one of xDSL's targets, for other dialects (vdir's: ptx, isa, queues, mlir)
// NOTHING-NOT: {{.}}
// OUT-NOT: {{.}}
// FAILED: {{^.*}}driver_xdsl_targets_and_passes.mlir: error: target 'x86-asm' failed: {{.*}}; it is one of xDSL's targets, for other dialects (vdir's: ptx, isa, queues, mlir)
// FAILED-NOT: {{.}}
// CSL-NOT: warn
// CSL: error: target 'csl' printed nothing for this program{{.*}}
// CSL-NOT: {{.}}
// MLIR: vdir.program @p
// PASS: {{^.*}}driver_xdsl_targets_and_passes.mlir: error: apply-pdl-interp: {{.*}}; it is one of xDSL's passes, and failed on this program
// PASS-NOT: {{.}}

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
}
