// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:{{[0-9]+}}: error: Operation vdir.prefetch is not registered
  vdir.prefetch %a
}

// -----

// CHECK: error: Operation vdir.kernel is not registered
"vdir.kernel"() : () -> ()
