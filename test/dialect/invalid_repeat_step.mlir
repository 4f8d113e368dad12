// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A repeat's step is positive.

vdir.program @zero(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.repeat step must be positive, got 0
  vdir.repeat %i = 0 to 8 step 0 {
  }
}

// -----

vdir.program @negative(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.repeat step must be positive, got -2
  vdir.repeat %i = 8 to 0 step -2 {
  }
}
