// kernel arg_reduce
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<16x256xbf16, #tpu.memory_space<vmem>>, %arg2: memref<16x128xi32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/argmax.pk":8:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/argmax.pk":8:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<16x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x256xbf16> loc("lowering/tests/mosaic_ops/argmax.pk":8:13)
    %3 = "stable_mosaic.arith.extf"(%2) : (vector<16x256xbf16>) -> vector<16x256xf32> loc("lowering/tests/mosaic_ops/argmax.pk":9:23)
    %4 = "stable_mosaic.tpu.reduce_index"(%3) {axis = 1 : i32, kind = #tpu.reduction_kind<arg_max>} : (vector<16x256xf32>) -> vector<16xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:23)
    %5 = "stable_mosaic.vector.shape_cast"(%4) : (vector<16xi32>) -> vector<16x1xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:23)
    %6 = "stable_mosaic.arith.extf"(%2) : (vector<16x256xbf16>) -> vector<16x256xf32> loc("lowering/tests/mosaic_ops/argmax.pk":9:58)
    %7 = "stable_mosaic.tpu.reduce_index"(%6) {axis = 1 : i32, kind = #tpu.reduction_kind<arg_min>} : (vector<16x256xf32>) -> vector<16xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:58)
    %8 = "stable_mosaic.vector.shape_cast"(%7) : (vector<16xi32>) -> vector<16x1xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:58)
    %9 = "stable_mosaic.arith.addi"(%5, %8) {overflowFlags = #arith.overflow<none>} : (vector<16x1xi32>, vector<16x1xi32>) -> vector<16x1xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:23)
    %10 = "stable_mosaic.vector.broadcast"(%9) : (vector<16x1xi32>) -> vector<16x128xi32> loc("lowering/tests/mosaic_ops/argmax.pk":9:13)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/argmax.pk":9:5)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/argmax.pk":9:5)
    "stable_mosaic.tpu.vector_store"(%10, %arg2, %11, %12) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xi32>, memref<16x128xi32, #tpu.memory_space<vmem>>, index, index) -> () loc("lowering/tests/mosaic_ops/argmax.pk":9:5)
    "stable_mosaic.func.return"() : () -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<16x256xbf16, #tpu.memory_space<vmem>>, memref<16x128xi32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "arg_reduce", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} : () -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/argmax.pk":4:34)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/argmax.pk":4:37)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/argmax.pk":5:41)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/argmax.pk":5:44)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("lowering/tests/mosaic_ops/argmax.pk":3:1)
}
