// The scalar table of a vdir.encoded_program is checked like a program's
// scalar arguments: each entry is name:lo:hi, a non-empty half-open range
// of 32-bit integers (the runtime's values) written in plain digits, under a
// name no buffer or other scalar has (a launch binds both by name), else one
// located line (a malformed entry was a Python unpacking error; a scalar
// named like a buffer a Python TypeError at the launch).

// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | vdir-opt - | filecheck %s --check-prefix=OK
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"n:0:8:9"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=PARTS
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"n:zero:8"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=WORD
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"n:0:4294967296"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=WIDE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"n:8:8"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"n:0:1_0"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=UNDERSCORE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"n:0:8"/"x:0:8"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=BUFFER
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"m:0:4"/"n:0:4"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=TWICE

// OK:         scalars = ["n:0:8", "m:0:4"]
// PARTS:      <stdin>:2:3: error: bad encoded program: malformed scalar entry 'n:0:8:9' (want name:lo:hi with lo < hi, a half-open range of 32-bit integers)
// PARTS-NOT:  {{.}}
// WORD:       <stdin>:2:3: error: bad encoded program: malformed scalar entry 'n:zero:8'
// WIDE:       <stdin>:2:3: error: bad encoded program: malformed scalar entry 'n:0:4294967296'
// EMPTY:      <stdin>:2:3: error: bad encoded program: malformed scalar entry 'n:8:8'
// UNDERSCORE: <stdin>:2:3: error: bad encoded program: malformed scalar entry 'n:0:1_0'
// BUFFER:     <stdin>:2:3: error: bad encoded program: scalar #0: name 'x' is already taken by buffer 'x'
// TWICE:      <stdin>:2:3: error: bad encoded program: scalar #1: name 'n' is already taken by scalar #0

vdir.program @copy(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>, %n: index in 0 to 8, %m: index in 0 to 4) {
  %t = vdir.load %x[%n, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.store %t, %y[%m, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
}
