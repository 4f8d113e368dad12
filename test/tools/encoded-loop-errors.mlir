// RUN: not vdir-run %S/Inputs/forged-loop.mlir --backend sim 2>&1 | filecheck %s
// RUN: vdir-opt %S/Inputs/forged-loop.mlir -t isa | filecheck %s --check-prefix=ISA

// An encoded program whose loop record runs past its queue is refused when
// it is read, with the queue and the record named, before any backend runs
// it; -t isa still lists the queue, record by record, under the reason.

// CHECK:      forged-loop.mlir:5:3: error: SM 0 stream queue, loop record 4: its body of 40 instructions and 1 step record run past the queue's 10 records
// CHECK-NOT:  Traceback

// ISA:      sm 0 stream:
// ISA-NEXT:   // malformed queue: loop record 4: its body of 40 instructions and 1 step record run past the queue's 10 records
// ISA-NEXT:   r0: load  @x+0
// ISA:        r4: nop
