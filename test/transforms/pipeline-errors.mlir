// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=0x}' 2>&1 | filecheck %s --check-prefix=OPT
// RUN: not vdir-opt %s -p 'vdir-pipeline,vdir-pipeline' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not vdir-opt %s -t isa 2>&1 | filecheck %s --check-prefix=ISA
// RUN: not vdir-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=PTX
// RUN: not vdir-opt %s -p 'vdir-pipeline{prefetch=1000000000}' 2>&1 | filecheck %s --check-prefix=PREFETCH
// RUN: not vdir-opt %s -p 'vdir-schedule{prefetch=65}' 2>&1 | filecheck %s --check-prefix=SCHEDULE
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=true}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=true}' 2>&1 | filecheck %s --check-prefix=BOOL-PIPE
// RUN: not vdir-opt %s -p 'vdir-place{side-loads=all}' 2>&1 | filecheck %s --check-prefix=SIDE
// RUN: not vdir-opt %s -p 'vdir-pipeline{side-loads=some}' 2>&1 | filecheck %s --check-prefix=SIDE-PIPE
// RUN: not vdir-opt %s -p 'vdir-pipeline{flag-words=-1}' 2>&1 | filecheck %s --check-prefix=FLAG-PIPE
// RUN: not vdir-opt %s -p 'vdir-flag-words{max-bytes=0}' 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not vdir-opt %s -p 'vdir-flag-words' 2>&1 | filecheck %s --check-prefix=FLAG-STAGE
// RUN: not vdir-opt %s -p 'vdir-pipeline{hold-streams=-1}' 2>&1 | filecheck %s --check-prefix=HOLD-PIPE
// RUN: not vdir-opt %s -p 'vdir-hold-streams{phases=0}' 2>&1 | filecheck %s --check-prefix=HOLD
// RUN: not vdir-opt %s -p 'vdir-hold-streams' 2>&1 | filecheck %s --check-prefix=HOLD-STAGE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' | sed 's/smem_bytes = [0-9]*/smem_bytes = 300032/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=ARENA
// RUN: cat %s %s | not vdir-opt - 2>&1 | filecheck %s --check-prefix=TWO

// OPT: error: bad pass pipeline
// TWICE: error: vdir-pipeline: expected one vdir.program in the module, found 0
// ISA: error: -t isa needs an encoded program; run '-p vdir-pipeline' first
// PTX: error: -t ptx needs an encoded program

// Options out of range, or of the wrong type, are one line before anything runs (the pass's own
// message, not wrapped in another):
// prefetch moves loads within a window of 64 queue entries, so more is refused.
// PREFETCH: {{^}}error: vdir-pipeline: option 'prefetch' must be at most 64, got 1000000000
// SCHEDULE: {{^}}error: vdir-schedule: option 'prefetch' must be at most 64, got 65
// BOOL: {{^}}error: vdir-place: option 'num-sms' must be an integer, got true
// BOOL-PIPE: {{^}}error: vdir-pipeline: option 'num-sms' must be an integer, got true
// SIDE: {{^}}error: vdir-place: option 'side-loads' must be one of none, idle, got 'all'
// SIDE-PIPE: {{^}}error: vdir-pipeline: option 'side-loads' must be one of none, idle, got 'some'
// FLAG-PIPE: {{^}}error: vdir-pipeline: option 'flag-words' must be at least 0, got -1
// FLAG: {{^}}error: vdir-flag-words: option 'max-bytes' must be at least 1, got 0
// vdir-flag-words marks an allocated program (placed, scheduled, its tiles in shared memory).
// FLAG-STAGE: pipeline-errors.mlir:{{[0-9]+}}:1: error: vdir-flag-words: this pass needs a program at stage 'allocated' (it is 'source')
// HOLD-PIPE: {{^}}error: vdir-pipeline: option 'hold-streams' must be at least 0, got -1
// HOLD: {{^}}error: vdir-hold-streams: option 'phases' must be at least 1, got 0
// vdir-hold-streams reads the allocation's slot reuse, so it too needs an allocated program.
// HOLD-STAGE: pipeline-errors.mlir:{{[0-9]+}}:1: error: vdir-hold-streams: this pass needs a program at stage 'allocated' (it is 'source')

// A laid-out program whose tiles claim more shared memory than an SM gives them.
// ARENA: <stdin>:2:3: error: smem_bytes = 300032 exceeds the {{[0-9]+}} bytes of shared memory an SM of target 'h200' gives its tiles

// Two programs of one name: the second is where the error is.
// TWO: <stdin>:{{[0-9]+}}:1: error: symbol 'p' is defined twice (first defined at <stdin>:{{[0-9]+}}:1)
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
