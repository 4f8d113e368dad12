// vdir is an xDSL plugin (the xdsl.universe entry point): once installed, the
// stock xdsl-opt parses vdir programs and runs the vdir passes and targets.

// RUN: xdsl-opt %s | filecheck %s --check-prefix=PARSE
// RUN: xdsl-opt %s -p vdir-fuse | filecheck %s --check-prefix=FUSE
// RUN: xdsl-opt %s -p vdir-pipeline -t isa | filecheck %s --check-prefix=ISA
// RUN: xdsl-opt %S/../../examples/gemv.mlir | filecheck %s --check-prefix=EXAMPLE

// PARSE:      vdir.program @p
// PARSE:      %g = vdir.compute gemv(%wt, %xt) on compute
// PARSE-NEXT: %y = vdir.compute add(%g, %rt) on compute

// FUSE:      %y = vdir.compute gemv_add(%wt, %xt, %rt) on compute
// FUSE-NOT:  vdir.compute add

// The three loads wait on nothing, so vdir-place puts the weight tile on
// the stream engine and leaves the two rows, small beside it, on the load
// engine, which has nothing else to issue.
// ISA:       sm 0 load:
// ISA-NEXT:    0: load  @x+0
// ISA-NEXT:    1: load  @r+0
// ISA:       sm 0 compute:
// ISA:       sm 0 stream:
// ISA-NEXT:    0: load  @w+0

// EXAMPLE:   vdir.program @gemv

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %r: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %rt = vdir.load %r[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %g = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute add(%g, %rt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
