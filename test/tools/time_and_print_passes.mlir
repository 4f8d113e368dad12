// --time-passes prints each pass's wall time in a table on stderr;
// --print-between-passes dumps the IR after each pass to stderr. Stdout keeps
// only the final IR.

// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule' --time-passes 2> %t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=TIME < %t.err
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule' --print-between-passes 2> %t.dump | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=DUMP < %t.dump

// OUT: vdir.program
// OUT-NOT: IR Dump
// OUT-NOT: Execution Time

// TIME: ... Pass execution timing report ...
// TIME: Total Execution Time: {{[0-9.]+}} seconds
// TIME: ----Wall Time----  ----Name----
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  vdir-place
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  vdir-schedule
// TIME-NEXT: {{[0-9.]+}} (100.0%)  Total

// DUMP: // -----// IR Dump After vdir-place //----- //
// DUMP-NEXT: builtin.module {
// DUMP: // -----// IR Dump After vdir-schedule //----- //
// DUMP-NEXT: builtin.module {

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
