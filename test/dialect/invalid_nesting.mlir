// Deeply nested input is refused with one located line and exit status 1,
// before xDSL's recursive parser runs out of stack: an input nests at most
// 64 levels of (), [] and {} (MAX_NESTING in vdir/tools/common.py), and a
// program at most 32 repeats (MAX_REPEAT_NESTING in vdir/dialects/vdir.py).

// 200 nested repeats: the 65th level of braces opens on line 64.
// RUN: python -c "print('vdir.program @p(%%a: !vdir.buffer<1x8xbf16>) {' + ''.join(f' vdir.repeat %%i{n} = 0 to 1 {{\n' for n in range(200)) + '}\n' * 201)" > %t.repeats.mlir
// RUN: not vdir-opt %t.repeats.mlir 2>&1 | filecheck %s --check-prefix=REPEATS
// RUN: not vdir-run %t.repeats.mlir --backend sim 2>&1 | filecheck %s --check-prefix=REPEATS
// REPEATS: {{.*}}.repeats.mlir:64:28: error: the input nests deeper than 64 levels of (), [] and {}
// REPEATS-NOT: {{.}}

// 5,000 parentheses in an affine map.
// RUN: python -c "print('vdir.program @p(%%a: !vdir.buffer<1x8xbf16>) {\n  %%r = affine.apply affine_map<(d0) -> (' + '(' * 5000 + 'd0' + ')' * 5001 + '> (%%a)\n}')" > %t.parens.mlir
// RUN: not vdir-opt %t.parens.mlir 2>&1 | filecheck %s --check-prefix=PARENS
// PARENS: {{.*}}.parens.mlir:2:103: error: the input nests deeper than 64 levels of (), [] and {}
// PARENS-NOT: {{.}}

// 10,000 brackets in an attribute.
// RUN: python -c "print('vdir.program @p(%%a: !vdir.buffer<1x8xbf16>) attributes {x = ' + '[' * 10000 + ']' * 10000 + '} {\n}')" > %t.brackets.mlir
// RUN: not vdir-opt %t.brackets.mlir 2>&1 | filecheck %s --check-prefix=BRACKETS
// BRACKETS: {{.*}}.brackets.mlir:1:124: error: the input nests deeper than 64 levels of (), [] and {}
// BRACKETS-NOT: {{.}}

// Nesting that is not made of (), [] or {} (3,000 nested tuple types) is
// stopped where the parser's stack runs out, at the position it reached.
// RUN: python -c "print('vdir.program @p(%%a: !vdir.buffer<1x8xbf16>) attributes {x = ' + 'tuple<' * 3000 + 'i32' + '>' * 3000 + '} {\n}')" > %t.tuples.mlir
// RUN: not vdir-opt %t.tuples.mlir 2>&1 | filecheck %s --check-prefix=TUPLES
// TUPLES: {{.*}}.tuples.mlir:1:{{[0-9]+}}: error: the input nests too deeply to parse
// TUPLES-NOT: {{.}}

// 40 nested repeats are within the text's limit, but over the program's.
// RUN: python -c "print('vdir.program @p(%%a: !vdir.buffer<1x8xbf16>) {\n' + ''.join(f'  vdir.repeat %%i{n} = 0 to 1 {{\n' for n in range(40)) + '  }\n' * 40 + '}')" > %t.forty.mlir
// RUN: not vdir-opt %t.forty.mlir 2>&1 | filecheck %s --check-prefix=FORTY
// FORTY: {{.*}}.forty.mlir:34:3: error: vdir.repeat nested 33 deep; a program nests at most 32 repeats
// FORTY-NOT: {{.}}
