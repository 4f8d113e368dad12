// RUN: vdir-opt %S/../../examples/runtime_values.mlir -p vdir-pipeline -t isa | filecheck %s
// RUN: vdir-run %S/../../examples/runtime_values.mlir --backend sim --check --scalar pos=10 --scalar blocks=3 | filecheck %s --check-prefix=EXEC

// The runtime-values example: the gather's offset is the token id read on
// the device, checked against the embedding table's rows; the append's is
// the launch-time position; the scored blocks run while b < %blocks; the
// combine waits on a counter for the partial rows.

// The gather waits on nothing (the ids are the caller's), so it runs on the
// stream engine of SM 0 (listed after its store queue); the block loads of
// the cache wait on the append (counter c0) and stay on the load engine.

// CHECK:      // scalar 0: pos in 0 to 64
// CHECK-NEXT: // scalar 1: blocks in 1 to 9
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @cache+0 + %pos * 128 (%pos in 0..63) [1 x 128B, stride 128] wait(b0=1) release(c0)
// CHECK-NEXT: sm 0 stream:
// CHECK-NEXT:   0: load  @emb+0 + @ids[0] * 128 (@ids[0] in 0..255) [1 x 128B, stride 128] -> smem[{{[0-9]+}}] signal(b0)
// CHECK-NEXT: sm 1 load:
// CHECK-NEXT:   0: load  @cache+0 [8 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) when(1 * %blocks + -1 >= 0) wait(c0>=1*epoch)
// CHECK:      store smem[{{[0-9]+}}] -> @partial+224 [1 x 32B, stride 32] tmap{{[0-9]+}}(7, 0) when(1 * %blocks + -8 >= 0)
// CHECK:      sm 9 load:
// CHECK-NEXT:   0: load  @partial+0 [8 x 32B, stride 32] {{.*}} wait(c1>=8*epoch)
// CHECK:      sum_rows(

// EXEC:     scalars: pos = 10, blocks = 3
// EXEC:     check passed: cache, partial, out equal the reference evaluator's
