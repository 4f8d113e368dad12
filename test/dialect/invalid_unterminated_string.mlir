// An unterminated string is one located error, found at once: xDSL's own
// lexer takes exponential time in the string's length (26 characters take
// seconds, 40 never finish); vdir's tools read input through a lexer whose
// string pattern runs in linear time (LinearLexer in vdir/tools/common.py).

// RUN: not vdir-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not vdir-run %s --backend sim 2>&1 | filecheck %s --check-prefix=SIM

// CHECK: {{.*}}invalid_unterminated_string.mlir:[[# @LINE + 2]]:64: error: the string is not closed before the end of its line (or has a bad escape)
// SIM: {{.*}}invalid_unterminated_string.mlir:[[# @LINE + 1]]:64: error: the string is not closed before the end of its line (or has a bad escape)
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) attributes {note = "an unterminated string of well over forty characters, which xDSL's lexer never finishes } {
}

// -----

// CHECK: {{.*}}invalid_unterminated_string.mlir:[[# @LINE + 1]]:64: error: the string is not closed before the end of its line (or has a bad escape)
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) attributes {note = "\q is not an escape"} {
}
// CHECK-NOT: error:
