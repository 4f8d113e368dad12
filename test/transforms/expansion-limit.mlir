// RUN: not vdir-opt %s -p vdir-place 2>&1 | filecheck %s

// A program may expand to at most 500,000 micro-ops by default
// (vdir.limits.MAX_MICRO_OPS, what compiles in well under a minute and about 1.1 GB;
// --max-micro-ops sets another limit, see test/tools/limits.mlir). One that
// expands to more is refused before anything is expanded, at the repeat
// that takes it over, rather than expanding for hours.

vdir.program @huge(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {
  // CHECK: expansion-limit.mlir:[[# @LINE + 1]]:3: error: vdir-place: the program expands to more than 500,000 micro-ops (the limit; --max-micro-ops raises it): this repeat alone reaches 2,000,000,000,000
  vdir.repeat %i = 0 to 1000000000000 {
    %t = vdir.load %x[0, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<1x16xbf16>
    %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}
