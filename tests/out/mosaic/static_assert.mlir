// kernel add_one
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<256x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<256x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/static_assert.pk":14:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/static_assert.pk":14:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<256x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x128xf32> loc("tests/in/static_assert.pk":14:13)
    %3 = "stable_mosaic.arith.constant"() {value = 1.000000e+00 : f32} : () -> f32 loc("tests/in/static_assert.pk":14:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<256x128xf32> loc("tests/in/static_assert.pk":14:21)
    %5 = "stable_mosaic.arith.addf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<256x128xf32>, vector<256x128xf32>) -> vector<256x128xf32> loc("tests/in/static_assert.pk":14:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/static_assert.pk":14:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/static_assert.pk":14:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg2, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x128xf32>, memref<256x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/static_assert.pk":14:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/static_assert.pk":4:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<256x128xf32, #tpu.memory_space<vmem>>, memref<256x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "add_one", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 128>}]} : () -> () loc("tests/in/static_assert.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/static_assert.pk":7:41)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/static_assert.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/static_assert.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/static_assert.pk":8:42)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/static_assert.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/static_assert.pk":4:1)
}
