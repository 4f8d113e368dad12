// With --disable-verify a pass may meet a program its verifiers would have
// refused; where it then fails, the failure is one line naming the pass and
// pointing at the verifiers, not a Python traceback.

// RUN: not vdir-opt %s --disable-verify -p 'vdir-pipeline{num-sms=2}' 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=2}' 2>&1 | filecheck %s --check-prefix=VERIFY

// CHECK: {{^.*}}disable_verify_pass_failure.mlir: error: vdir-pipeline: failed on a program that was not verified: KeyError: 'width'; without --disable-verify, the verifiers say what is wrong{{$}}
// CHECK-NOT: Traceback
// VERIFY: disable_verify_pass_failure.mlir:[[# @LINE + 4]]:3: error: family 'slice' needs parameter 'width'

vdir.program @no_width(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %y = vdir.compute slice(%x) {start = 0 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
