// kernel windowed
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<128x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/optional_params.pk":14:17)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/optional_params.pk":14:17)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x256xf32> loc("tests/in/optional_params.pk":14:17)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/optional_params.pk":14:9)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/optional_params.pk":14:9)
    "stable_mosaic.tpu.vector_store"(%2, %arg2, %3, %4) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x256xf32>, memref<128x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/optional_params.pk":14:9)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/optional_params.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<128x256xf32, #tpu.memory_space<vmem>>, memref<128x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "windowed", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 256>}]} : () -> () loc("tests/in/optional_params.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/optional_params.pk":5:39)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/optional_params.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/optional_params.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/optional_params.pk":6:40)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/optional_params.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/optional_params.pk":1:1)
}
