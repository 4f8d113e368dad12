// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=DEFAULT
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-path=lsu}' | filecheck %s --check-prefix=LSU
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{release_fence=true compute-warps=4}' | filecheck %s --check-prefix=FENCE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{load-path=dma}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=33}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=2,4}' 2>&1 | filecheck %s --check-prefix=TWO
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t 'ptx{split-copies=}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=' 2>&1 | filecheck %s --check-prefix=PIPELINE

// -t ptx takes the lowering options (vdir.lowering.options.LoweringOptions)
// in xDSL's option syntax, names with '-' or '_'. A bad option is one line on
// stderr naming it (an unknown one lists the known ones), checked before the
// input is read, and no PTX is printed.

// DEFAULT:     mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// DEFAULT-NOT: fence.acq_rel.gpu
// DEFAULT:     cp.async.bulk
// LSU:         mbarrier.init.shared::cta.b64 [{{.*}}], 32;
// FENCE:       .maxntid 192, 1, 1
// FENCE:       fence.acq_rel.gpu
// FENCE:       red.release.gpu

// UNKNOWN:     error: target 'ptx': unknown lowering option 'no-such-option' (known: split_copies, load_path, fetch_depth, compute_warps, tensor_copies, release_fence)
// UNKNOWN-NOT: {{.}}
// VALUE:       error: target 'ptx': lowering option load_path must be 'bulk' or 'lsu', got 'dma'
// RANGE:       error: target 'ptx': lowering option split_copies must be in 1..32, got 33
// TWO:         error: target 'ptx': lowering option 'split-copies' takes one value
// SYNTAX:      error: bad option syntax: Unknown argument value, wrap argument in quotes to pass arbitrary string values
// SYNTAX-NOT:  Traceback
// PIPELINE:    error: bad pass pipeline 'vdir-pipeline{num-sms=': Unknown argument value
// PIPELINE-NOT: Traceback

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
