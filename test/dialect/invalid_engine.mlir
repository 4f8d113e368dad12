// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A micro-op must run on an engine kind that can execute its class (on the
// program's target); engine names are load, compute, store and stream (the
// second load engine of h100/h200).

vdir.program @compute_on_load(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the load engine cannot run a compute micro-op (it runs: load)
  %u = vdir.compute add(%t, %t) on load : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @load_on_compute(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the compute engine cannot run a load micro-op (it runs: compute)
  %t = vdir.load %a[0, 0] on compute : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @store_on_load(%a: !vdir.buffer<1x8xbf16>) attributes {target = "h100"} {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the load engine cannot run a store micro-op (it runs: load)
  %s = vdir.store %t, %a[0, 0] on load : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @generic_engine(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the store engine cannot run a load micro-op (it runs: store)
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

// The stream engine is a load engine: it runs loads only.
vdir.program @compute_on_stream(%a: !vdir.buffer<1x8xbf16>) attributes {target = "h200"} {
  %t = vdir.load %a[0, 0] on stream : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the stream engine cannot run a compute micro-op (it runs: load)
  %u = vdir.compute add(%t, %t) on stream : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @unknown_kind(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: error: unknown engine kind 'tma' (expected load, compute, store or stream)
  %t = vdir.load %a[0, 0] on tma : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}

// -----

vdir.program @unknown_attr(%a: !vdir.buffer<1x8xbf16>) {
  // CHECK: error: Expected `load`, `compute`, `store`, or `stream`.
  %t = "vdir.load"(%a) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<tma>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
}
