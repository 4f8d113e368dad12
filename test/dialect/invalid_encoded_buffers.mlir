// The buffer table of a vdir.encoded_program is checked like a program's
// arguments: entries well formed, names an argument could have and unique,
// known element types, buffers the target's memory holds, and no store into
// a buffer whose role says it is only read (the runtime would neither return
// nor keep what is written there). The code must also be whole.

// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | vdir-opt - | filecheck %s --check-prefix=OK
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"y:1x64:bf16:out"/"x:1x64:bf16:out"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=DUP
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/"x:1x64/"a b:1x64/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=NAME
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/1x64:bf16:in/1x64:f64:in/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=DTYPE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/x:1x64:bf16:in/x:99999999999999999999x64:bf16:in/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/x:1x64:bf16:in/x:0x64:bf16:in/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/y:1x64:bf16:out/y:1x64:bf16:in/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=ROLE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' | sed 's/:out"/:gone"/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=BADROLE

// OK:         vdir.encoded_program @copy
// DUP:        <stdin>:2:3: error: buffer #1: name 'x' is already taken by buffer #0
// NAME:       <stdin>:2:3: error: buffer #0: name 'a b' is not an identifier
// DTYPE:      <stdin>:2:3: error: buffer entry 'x:1x64:f64:in': element type 'f64' is not one of bf16, f32, i32
// HUGE:       <stdin>:2:3: error: buffer #0 ('x') is 12,799,999,999,999,999,999,872 bytes, more than the {{[0-9,]+}} bytes of global memory of h200
// EMPTY:      <stdin>:2:3: error: buffer entry 'x:0x64:bf16:in': the shape must be RxC with positive rows and columns
// ROLE:       <stdin>:2:3: error: bad encoded program: buffer 'y' is stored to, but its role is 'in' (a written buffer is out, inout or scratch)
// BADROLE:    <stdin>:2:3: error: buffer entry 'y:1x64:bf16:gone': role 'gone' is not one of in, inout, out, scratch

vdir.program @copy(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
