// Accesses of global buffers in program order; not a test itself.
vdir.program @memdeps(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %t1 = vdir.store %a, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %b = vdir.load %y[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %c = vdir.compute add(%b, %b) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %t2 = vdir.store %c, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %t3 = vdir.store %c, %x[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
