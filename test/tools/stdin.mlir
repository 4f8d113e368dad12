// `-` (or no file) reads standard input; errors there are located in <stdin>.

// RUN: vdir-opt - < %s | filecheck %s
// RUN: cat %s | vdir-opt | filecheck %s
// RUN: echo 'vdir.program @p(%a: !vdir.buffer<1x8xbf16>) { %t = vdir.nope }' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: vdir.program @p(
// ERR: <stdin>:1:{{[0-9]+}}: error: {{.*}}
// ERR-NOT: Traceback

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
}
