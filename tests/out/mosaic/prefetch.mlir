// kernel prefetch_blocks
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<1x8x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<1x8x128xi32, #tpu.memory_space<smem>>, %arg5: memref<1x8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":9:13)
    %1 = "stable_mosaic.arith.constant"() {value = 3 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":9:13)
    %2 = "stable_mosaic.arith.constant"() {value = 5 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":9:13)
    %3 = "stable_mosaic.memref.load"(%arg4, %0, %1, %2) : (memref<1x8x128xi32, #tpu.memory_space<smem>>, index, index, index) -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":9:13)
    %4 = "stable_mosaic.arith.index_cast"(%arg0) : (i32) -> index loc("lowering/tests/mosaic_ops/prefetch.pk":9:26)
    %5 = "stable_mosaic.memref.load"(%arg1, %4) : (memref<4xi32, #tpu.memory_space<smem>>, index) -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":9:26)
    %6 = "stable_mosaic.arith.addi"(%3, %5) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":9:13)
    %7 = "stable_mosaic.arith.constant"() {value = 2 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":10:12)
    %8 = "stable_mosaic.arith.cmpi"(%6, %7) {predicate = 4 : i64} : (i32, i32) -> i1 loc("lowering/tests/mosaic_ops/prefetch.pk":10:8)
    "stable_mosaic.scf.if"(%8) ({
      %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:17)
      %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:17)
      %11 = "stable_mosaic.vector.load"(%arg2, %9, %10) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":11:17)
      %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:29)
      %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:29)
      %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:29)
      %15 = "stable_mosaic.vector.load"(%arg3, %12, %13, %14) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> vector<1x8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":11:29)
      %16 = "stable_mosaic.vector.shape_cast"(%15) : (vector<1x8x128xf32>) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":11:29)
      %17 = "stable_mosaic.arith.mulf"(%11, %16) {fastmath = #arith.fastmath<none>} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":11:17)
      %18 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:9)
      %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:9)
      %20 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":11:9)
      %21 = "stable_mosaic.vector.shape_cast"(%17) : (vector<8x128xf32>) -> vector<1x8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":11:9)
      "stable_mosaic.tpu.vector_store"(%21, %arg5, %18, %19, %20) {add = false, operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>} : (vector<1x8x128xf32>, memref<1x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":11:9)
      "stable_mosaic.scf.yield"() : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":10:5)
    }, {
      %22 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":13:17)
      %23 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":13:17)
      %24 = "stable_mosaic.vector.load"(%arg2, %22, %23) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":13:17)
      %25 = "stable_mosaic.arith.sitofp"(%6) : (i32) -> f32 loc("lowering/tests/mosaic_ops/prefetch.pk":13:29)
      %26 = "stable_mosaic.vector.broadcast"(%25) : (f32) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":13:29)
      %27 = "stable_mosaic.arith.addf"(%24, %26) {fastmath = #arith.fastmath<none>} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":13:17)
      %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":13:9)
      %29 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":13:9)
      %30 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/prefetch.pk":13:9)
      %31 = "stable_mosaic.vector.shape_cast"(%27) : (vector<8x128xf32>) -> vector<1x8x128xf32> loc("lowering/tests/mosaic_ops/prefetch.pk":13:9)
      "stable_mosaic.tpu.vector_store"(%31, %arg5, %28, %29, %30) {add = false, operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>} : (vector<1x8x128xf32>, memref<1x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":13:9)
      "stable_mosaic.scf.yield"() : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":10:5)
    }) : (i1) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":10:5)
    "stable_mosaic.func.return"() : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<4xi32, #tpu.memory_space<smem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<1x8x128xf32, #tpu.memory_space<vmem>>, memref<1x8x128xi32, #tpu.memory_space<smem>>, memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 1 : i64, scratch_operands = 0 : i64, sym_name = "prefetch_blocks", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 8, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 1, 8, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 1, 8, 128>}]} : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.index_cast"(%arg0) : (i32) -> index loc("lowering/tests/mosaic_ops/prefetch.pk":2:40)
    %1 = "stable_mosaic.memref.load"(%arg1, %0) : (memref<4xi32, #tpu.memory_space<smem>>, index) -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":2:40)
    %2 = "stable_mosaic.arith.constant"() {value = 4 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":2:49)
    %3 = "stable_mosaic.arith.remsi"(%1, %2) : (i32, i32) -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":2:40)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":2:52)
    "stable_mosaic.func.return"(%3, %4) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  }) {function_type = (i32, memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":3:53)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":3:56)
    "stable_mosaic.func.return"(%arg0, %0, %1) : (i32, i32, i32) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  }) {function_type = (i32, memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32, i32), sym_name = "transform_1"} : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":4:51)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":4:54)
    "stable_mosaic.func.return"(%arg0, %0, %1) : (i32, i32, i32) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  }) {function_type = (i32, memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32, i32), sym_name = "transform_2"} : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":5:45)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/prefetch.pk":5:48)
    "stable_mosaic.func.return"(%arg0, %0, %1) : (i32, i32, i32) -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
  }) {function_type = (i32, memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32, i32), sym_name = "transform_3"} : () -> () loc("lowering/tests/mosaic_ops/prefetch.pk":1:1)
}
