// RUN: not vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p 'vdir-pipeline' 2>&1 | filecheck %s --check-prefix=PIPE
// RUN: not vdir-run %s --backend sim 2>&1 | filecheck %s --check-prefix=TOOL

// Three 128 KiB tiles live at once cannot fit in 227 KiB: the error names the
// micro-op at which the working set peaks and where it is in the source.

// CHECK: alloc-smem-too-big.mlir:[[# @LINE + 5]]:3: error: vdir-alloc-smem: the tiles live at %c on SM 0 need 393216 bytes of shared memory, more than the 227328 bytes available on h200; use smaller tiles
// PIPE: alloc-smem-too-big.mlir:{{[0-9]+}}:3: error: vdir-pipeline: the tiles live at %c on SM 0
vdir.program @big(%x: !vdir.buffer<64x1024xbf16>, %y: !vdir.buffer<64x1024xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<64x1024xbf16>
  %b = vdir.load %y[0, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<64x1024xbf16>
  %c = vdir.compute add(%a, %b) : (!vdir.tile<64x1024xbf16>, !vdir.tile<64x1024xbf16>) -> !vdir.tile<64x1024xbf16>
  %t = vdir.store %c, %y[0, 0] : !vdir.tile<64x1024xbf16>, !vdir.buffer<64x1024xbf16>
}

// vdir-run reports the same failure at the same place.
// TOOL: alloc-smem-too-big.mlir:[[# @LINE - 5]]:3: error: the tiles live at %c on SM 0 need 393216 bytes
