// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s
// RUN: not vdir-opt %s -p vdir-pipeline --split-input-file 2>&1 | filecheck %s --check-prefix=PIPELINE

// A buffer must fit in the target's global memory (global_memory_bytes of
// its TargetDescription), all of a program's buffers together too, and a
// buffer's row must fit the 32-bit row stride of a load or store. Such
// programs are refused by the verifier rather than failing at run time.

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 ('a') is a buffer of 128,000,000,000,000,000,000,000,000,000,000 bytes, more than the 141,000,000,000 bytes of global memory of h200
vdir.program @rows_1e30(%a: !vdir.buffer<1000000000000000000000000000000x64xbf16>, %b: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1000000000000000000000000000000x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 ('a') is a buffer of 1,180,591,620,717,411,303,424 bytes, more than the 141,000,000,000 bytes of global memory of h200
vdir.program @rows_2p63(%a: !vdir.buffer<9223372036854775808x64xbf16>, %b: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<9223372036854775808x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// 2 TiB
// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 ('a') is a buffer of 2,199,023,255,552 bytes, more than the 141,000,000,000 bytes of global memory of h200
vdir.program @two_tib(%a: !vdir.buffer<16777216x65536xbf16>, %b: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<16777216x65536xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// The limit is the program's target's: 80 GiB fit an h200, not an h100.
// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 ('a') is a buffer of 85,899,345,920 bytes, more than the 80,000,000,000 bytes of global memory of h100
vdir.program @on_h100(%a: !vdir.buffer<655360x65536xbf16>, %b: !vdir.buffer<1x64xbf16>) attributes {target = "h100"} {
  %t = vdir.load %a[0, 0] : !vdir.buffer<655360x65536xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// Two 96 GiB buffers fit one by one, not together.
// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: the program's buffers take 206,158,430,208 bytes together, more than the 141,000,000,000 bytes of global memory of h200
vdir.program @together(%a: !vdir.buffer<786432x65536xbf16>, %b: !vdir.buffer<786432x65536xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<786432x65536xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<786432x65536xbf16>
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 ('a') has rows of 8,589,934,592 bytes, more than the 4,294,967,295 of an instruction's row stride
vdir.program @wide(%a: !vdir.buffer<2x4294967296xbf16>, %b: !vdir.buffer<2x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<2x4294967296xbf16> -> !vdir.tile<2x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<2x64xbf16>, !vdir.buffer<2x64xbf16>
}

// -----

// A tile of 10^6 x 10^6 elements needs a buffer at least as large, which
// the check above refuses; a tile of 10^6 x 64 elements fits its buffer but
// no SM can hold it: the pipeline refuses it where it is made.
vdir.program @huge_tile(%a: !vdir.buffer<1000000x64xbf16>, %b: !vdir.buffer<1000000x64xbf16>) {
  // PIPELINE: {{.*}}:[[# @LINE + 1]]:3: error: vdir-pipeline: the tiles live at %t on SM 0 need 128000000 bytes of shared memory, more than the 227328 bytes available on h200; use smaller tiles
  %t = vdir.load %a[0, 0] : !vdir.buffer<1000000x64xbf16> -> !vdir.tile<1000000x64xbf16>
  %s = vdir.store %t, %b[0, 0] : !vdir.tile<1000000x64xbf16>, !vdir.buffer<1000000x64xbf16>
}
