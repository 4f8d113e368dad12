// RUN: vdir-opt %s -t ptx --verify-diagnostics

// A diagnostic with no line (here: the ptx target given a program that was
// not encoded) is expected with @unknown.

// expected-error @unknown {{-t ptx needs an encoded program}}
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
