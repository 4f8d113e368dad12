// vdir-opt reports a missing input file, an unknown pass and a usage error
// (an unknown flag or target, a flag without its value: exit status 2, as
// argparse's, without its usage text), and an -o that names a folder or is
// in a missing one (before any work), in one line on stderr and exits
// non-zero, writing nothing to stdout.

// RUN: not vdir-opt %S/no-such-file.mlir > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=MISSING < %t.err
// RUN: filecheck %s --check-prefix=OUT --allow-empty < %t.out
// RUN: not vdir-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not vdir-opt %s -t no-such-target 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not vdir-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not vdir-opt %s -p 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not vdir-opt %s -o %S 2>&1 | filecheck %s --check-prefix=OUT-FOLDER
// RUN: not vdir-opt %s -o %S/no-such-folder/out.mlir 2>&1 | filecheck %s --check-prefix=OUT-MISSING

// MISSING: {{.*}}no-such-file.mlir: error: no such file
// MISSING-NOT: {{.}}
// OUT-NOT: {{.}}
// PASS: error: bad pass pipeline 'no-such-pass': Unrecognized passes: ['no-such-pass']
// PASS-NOT: {{.}}
// TARGET: {{^}}vdir-opt: error: argument -t/--target: invalid choice: 'no-such-target' (choose from ptx, {{.*}})
// TARGET-NOT: {{.}}
// FLAG: {{^}}vdir-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT: {{.}}
// VALUE: {{^}}vdir-opt: error: argument -p/--passes: expected one argument
// VALUE-NOT: {{.}}
// OUT-FOLDER: {{^.*}}dialect: error: -o: is a folder; name the file to write
// OUT-FOLDER-NOT: {{.}}
// OUT-MISSING: no-such-folder/out.mlir: error: -o: no such folder '{{.*}}no-such-folder' (create it first)

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
}
