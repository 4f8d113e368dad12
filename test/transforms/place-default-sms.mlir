// RUN: vdir-opt %s -p vdir-place | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{target=h100}' | filecheck %s --check-prefix=H100
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1}' | filecheck %s --check-prefix=ONE

// Without options placement uses every SM of the program's target (h200:
// 132); the target option picks another description; with one SM every
// micro-op lands on SM 0.

// CHECK: vdir.program @p{{.*}}num_sms = 132,
// CHECK-COUNT-2: sm = 0>
// CHECK: sm = 1>
// H100: vdir.program @p{{.*}}num_sms = 132,
// ONE: vdir.program @p{{.*}}num_sms = 1,
// ONE-NOT: sm = 1>
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %a, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
  %b = vdir.load %x[1, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %t = vdir.store %b, %y[1, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}
