// RUN: vdir-opt %s --verify-diagnostics --split-input-file

// SSA values are defined before they are used, exactly once. (A dependency
// cycle therefore cannot be written in text; the verifier still rejects one
// built through the Python API.)

vdir.program @use_before_def(%a: !vdir.buffer<1x8xbf16>) {
  // expected-error @+1 {{SSA value %t is not defined before this use}}
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @cycle(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // expected-error @+1 {{SSA value %v is not defined before this use}}
  %u = vdir.compute add(%t, %v) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %v = vdir.compute add(%t, %u) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %v, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @undefined(%a: !vdir.buffer<1x8xbf16>) {
  // expected-error @below {{SSA value %nothing is not defined before this use}}
  %s = vdir.store %nothing, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @redefined(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // expected-error @above {{SSA value %t is already defined}}
}
