// A parse error also ends vdir-opt with one line on stderr and a non-zero
// exit status; with --parsing-diagnostics it goes to stdout and exits 0.

// RUN: not vdir-opt %s 2>&1 | filecheck %s
// RUN: vdir-opt %s --parsing-diagnostics | filecheck %s

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xi8>
}

// CHECK: {{.*}}driver_parse_error_exit.mlir:8:66: error: vdir.tile element type must be bf16, f32, i32 or i64, got i8
// CHECK-NOT: {{.}}
