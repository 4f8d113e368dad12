// RUN: sed '/^\/\/ -----/q' %s | vdir-opt - -p 'vdir-pipeline{num-sms=1}' | filecheck %s
// RUN: not vdir-opt %s --split-input-file -p 'vdir-pipeline{num-sms=1}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: sed '/^\/\/ -----/q' %s | vdir-opt - -p 'vdir-place{num-sms=1}' | sed 's/buffer_roles = \[in, scratch, out\]/buffer_roles = [in, out, out]/' | not vdir-opt - 2>&1 | filecheck %s --check-prefix=FORGED

// A buffer declared `scratch` is neither an input nor an output, even where
// the program stores to it: the caller never binds it and never gets it.

// CHECK: buffers = ["x:1x64:bf16:in", "mid:1x64:bf16:scratch", "y:1x64:bf16:out"]
vdir.program @staged(%x: !vdir.buffer<1x64xbf16>, %mid: !vdir.buffer<1x64xbf16> scratch, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %mid[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %u = vdir.load %mid[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %v = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

// A load of bytes no earlier store surely wrote would read what the caller
// passed: a scratch buffer has nothing there.

// ERR: scratch-buffers.mlir:[[# @LINE + 4]]:3: error: vdir-pipeline: load %u reads bytes of scratch buffer 'mid' that no earlier store surely writes (a scratch buffer holds only what the program wrote)
vdir.program @half(%x: !vdir.buffer<1x64xbf16>, %mid: !vdir.buffer<1x128xbf16> scratch, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %mid[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %u = vdir.load %mid[0, 64] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x64xbf16>
  %v = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// A scheduled program whose roles contradict its declaration is refused.
// FORGED: error: buffer_roles gives 'out' for argument #1 ('mid'), which is declared scratch
