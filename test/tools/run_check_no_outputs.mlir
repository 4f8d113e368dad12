// RUN: not vdir-run %s --backend sim --check 2>&1 | filecheck %s
// RUN: vdir-run %s --backend sim | filecheck %s --check-prefix=PLAIN

// A program that stores to no buffer has no outputs: --check has nothing to
// compare with the reference evaluator, and says so (exit 1) rather than
// passing about nothing. Without --check it runs.

// CHECK: {{.*}}run_check_no_outputs.mlir: error: --check: the program has no outputs (it stores to no buffer), so there is nothing to compare with the reference evaluator
// CHECK-NOT: check passed
// PLAIN: backend: sim

vdir.program @no_outputs(%x: !vdir.buffer<1x64xbf16>) {
}
