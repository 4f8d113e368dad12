// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A repeat must run at least once.

vdir.program @empty_range(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.repeat from 4 to 4 runs no iterations
  vdir.repeat %i = 4 to 4 {
  }
}

// -----

vdir.program @backwards(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.repeat from 16 to 0 runs no iterations
  vdir.repeat %i = 16 to 0 {
  }
}
