// --list-passes lists the vdir passes and targets apart from xDSL's, each
// with the first line of its docstring and its options with their defaults;
// --help points at it.

// RUN: vdir-opt --list-passes | filecheck %s
// RUN: vdir-opt --help | filecheck %s --check-prefix=HELP

// CHECK:      vdir passes:
// CHECK-NEXT:   vdir-verify-deps Check the expanded dependency graph; 'annotate' records its statistics.
// CHECK-NEXT:       annotate=false
// CHECK-NEXT:   vdir-fuse {{ +}}Fuse producer/consumer compute micro-ops and merge duplicate loads.
// CHECK-NEXT:       min-benefit=0.0
// CHECK-NEXT:       only=<unset>
// CHECK-NEXT:   vdir-place {{ +}}Assign micro-ops to SMs.
// CHECK-NEXT:       num-sms=<unset>
// CHECK-NEXT:       target=""
// CHECK-NEXT:       stream-loads=true
// CHECK-NEXT:       phase-balance=true
// CHECK-NEXT:       keep-trips=false
// CHECK-NEXT:       side-loads=idle
// CHECK-NEXT:   vdir-schedule {{ +}}Order every (SM, engine) queue.
// CHECK-NEXT:       prefetch=2
// CHECK:        vdir-hold-streams {{ +}}Make the stream load that would issue into a hand-off store's compute slot wait for the store.
// CHECK-NEXT:       phases=1
// CHECK-NEXT:   vdir-layout-deps
// CHECK:        vdir-encode {{ +}}Encode the laid-out program into per-engine instruction streams.
// CHECK-NEXT:       reroll=true
// CHECK-NEXT:       l2-prefetch=0
// CHECK-NEXT:       release-first=false
// CHECK-NEXT:   vdir-pipeline {{ +}}All vdir passes in order.
// CHECK-NEXT:       target=""
// CHECK-NEXT:       num-sms=<unset>
// CHECK-NEXT:       fuse=true
// CHECK-NEXT:       prefetch=2
// CHECK-NEXT:       reroll=true
// CHECK-NEXT:       l2-prefetch=0
// CHECK-NEXT:       stream-loads=true
// CHECK-NEXT:       run-ahead=2
// CHECK-NEXT:       weight-ring=0
// CHECK-NEXT:       phase-balance=true
// CHECK-NEXT:       keep-trips=false
// CHECK-NEXT:       stamp-trips=true
// CHECK-NEXT:       side-loads=idle
// CHECK-NEXT:       flag-words=0
// CHECK-NEXT:       hold-streams=<unset>
// CHECK-NEXT:       release-first=<unset>
// CHECK-EMPTY:
// CHECK-NEXT: vdir targets:
// CHECK-NEXT:   ptx {{ +}}Emit the PTX kernel that runs the module's encoded program
// CHECK-NEXT:       split-copies=1
// CHECK-NEXT:       load-path=bulk
// CHECK-NEXT:       fetch-depth=8
// CHECK-NEXT:       load-ring=8
// CHECK:        isa {{ +}}Print the encoded program's queues as a readable listing.
// CHECK:        queues {{ +}}Print, per SM and engine, the work and the synchronisation of the encoded program's queues.
// CHECK-NOT:    convert-
// CHECK-NOT:    riscv

// HELP: --list-passes
// HELP: 'vdir-opt --list-passes'
