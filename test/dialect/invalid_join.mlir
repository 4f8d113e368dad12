// RUN: vdir-opt %s --verify-diagnostics --split-input-file

// vdir.join takes one or more tokens.

vdir.program @empty(%a: !vdir.buffer<1x8xbf16>) {
  %j = vdir.join // expected-error {{vdir.join needs at least one token}}
}

// -----

vdir.program @tile(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
  // expected-error @+1 {{operand 'tokens' at position 0 does not verify: !vdir.tile<1x8xbf16> should be of base attribute vdir.token}}
  %j = "vdir.join"(%t) : (!vdir.tile<1x8xbf16>) -> !vdir.token
}
