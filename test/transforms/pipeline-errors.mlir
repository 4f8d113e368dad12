// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=0x}' 2>&1 | filecheck %s --check-prefix=OPT
// RUN: not vdir-opt %s -p 'vdir-pipeline,vdir-pipeline' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not vdir-opt %s -t isa 2>&1 | filecheck %s --check-prefix=ISA
// RUN: not vdir-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=PTX

// OPT: error: bad pass pipeline
// TWICE: error: vdir-pipeline: expected one vdir.program in the module, found 0
// ISA: error: -t isa needs an encoded program; run '-p vdir-pipeline' first
// PTX: error: -t ptx needs an encoded program
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
