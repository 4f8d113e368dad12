// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule' | filecheck %s

// Micro-ops of one flow keep their program order in their engine's queue;
// here two flows of loads interleave and each stays in order.

// CHECK: vdir.load %x[0, 0] on load flow 1 {{{.*}}pos = 0>}
// CHECK: vdir.load %x[1, 0] on load flow 2 {{{.*}}pos = 1>}
// CHECK: vdir.load %x[2, 0] on load flow 1 {{{.*}}pos = 2>}
// CHECK: vdir.load %x[3, 0] on load flow 2 {{{.*}}pos = 3>}
vdir.program @flows(%x: !vdir.buffer<4x64xbf16>, %y: !vdir.buffer<4x64xbf16>) {
  %a = vdir.load %x[0, 0] on load flow 1 : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x64xbf16>
  %b = vdir.load %x[1, 0] on load flow 2 : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x64xbf16>
  %c = vdir.load %x[2, 0] on load flow 1 : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x64xbf16>
  %d = vdir.load %x[3, 0] on load flow 2 : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x64xbf16>
  %ta = vdir.store %a, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<4x64xbf16>
  %tb = vdir.store %b, %y[1, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<4x64xbf16>
  %tc = vdir.store %c, %y[2, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<4x64xbf16>
  %td = vdir.store %d, %y[3, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<4x64xbf16>
}
