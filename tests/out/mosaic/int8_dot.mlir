// kernel int8_dot
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x256xi8, #tpu.memory_space<vmem>>, %arg2: memref<256x128xi8, #tpu.memory_space<vmem>>, %arg3: memref<128x128xi32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:17)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:17)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x256xi8, #tpu.memory_space<vmem>>, index, index) -> vector<128x256xi8> loc("lowering/tests/mosaic_ops/int8_dot.pk":9:17)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:24)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:24)
    %5 = "stable_mosaic.vector.load"(%arg2, %3, %4) : (memref<256x128xi8, #tpu.memory_space<vmem>>, index, index) -> vector<256x128xi8> loc("lowering/tests/mosaic_ops/int8_dot.pk":9:24)
    %6 = "stable_mosaic.arith.constant"() {value = dense<0> : vector<128x128xi32>} : () -> vector<128x128xi32> loc("lowering/tests/mosaic_ops/int8_dot.pk":9:13)
    %7 = "stable_mosaic.tpu.matmul"(%2, %5, %6) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<128x256xi8>, vector<256x128xi8>, vector<128x128xi32>) -> vector<128x128xi32> loc("lowering/tests/mosaic_ops/int8_dot.pk":9:13)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:5)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/int8_dot.pk":9:5)
    "stable_mosaic.tpu.vector_store"(%7, %arg3, %8, %9) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xi32>, memref<128x128xi32, #tpu.memory_space<vmem>>, index, index) -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":9:5)
    "stable_mosaic.func.return"() : () -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<128x256xi8, #tpu.memory_space<vmem>>, memref<256x128xi8, #tpu.memory_space<vmem>>, memref<128x128xi32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "int8_dot", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 128>}]} : () -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":4:34)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":4:37)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":5:34)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":5:37)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":6:36)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/int8_dot.pk":6:39)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("lowering/tests/mosaic_ops/int8_dot.pk":3:1)
}
