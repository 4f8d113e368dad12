// vdir-opt reports a missing input file and an unknown pass in one line on
// stderr and exits non-zero, writing nothing to stdout.

// RUN: not vdir-opt %S/no-such-file.mlir > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=MISSING < %t.err
// RUN: filecheck %s --check-prefix=OUT --allow-empty < %t.out
// RUN: not vdir-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS

// MISSING: {{.*}}no-such-file.mlir: error: no such file
// MISSING-NOT: {{.}}
// OUT-NOT: {{.}}
// PASS: error: bad pass pipeline 'no-such-pass': Unrecognized passes: ['no-such-pass']
// PASS-NOT: {{.}}

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
}
