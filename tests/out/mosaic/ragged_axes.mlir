// kernel ragged_rows
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<128x256xf32, #tpu.memory_space<vmem>>, %arg3: memref<128x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":9:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":9:13)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<128x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x256xf32> loc("tests/in/ragged_axes.pk":9:13)
    %3 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/ragged_axes.pk":9:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<128x256xf32> loc("tests/in/ragged_axes.pk":9:21)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<128x256xf32>, vector<128x256xf32>) -> vector<128x256xf32> loc("tests/in/ragged_axes.pk":9:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":9:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":9:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg3, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x256xf32>, memref<128x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/ragged_axes.pk":9:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/ragged_axes.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<128x256xf32, #tpu.memory_space<vmem>>, memref<128x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "ragged_rows", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 256>}]} : () -> () loc("tests/in/ragged_axes.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("tests/in/ragged_axes.pk":1:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/ragged_axes.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("tests/in/ragged_axes.pk":1:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/ragged_axes.pk":1:1)
}
// kernel padded
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<16x128xbf16, #tpu.memory_space<vmem>>, %arg3: memref<16x128xbf16, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":18:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":18:13)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xbf16> loc("tests/in/ragged_axes.pk":18:13)
    %3 = "stable_mosaic.arith.constant"() {value = 1.000000e+00 : bf16} : () -> bf16 loc("tests/in/ragged_axes.pk":18:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (bf16) -> vector<16x128xbf16> loc("tests/in/ragged_axes.pk":18:21)
    %5 = "stable_mosaic.arith.addf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<16x128xbf16>, vector<16x128xbf16>) -> vector<16x128xbf16> loc("tests/in/ragged_axes.pk":18:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":18:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/ragged_axes.pk":18:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg3, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xbf16>, memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/ragged_axes.pk":18:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/ragged_axes.pk":12:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<16x128xbf16, #tpu.memory_space<vmem>>, memref<16x128xbf16, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1, 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "padded", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} : () -> () loc("tests/in/ragged_axes.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("tests/in/ragged_axes.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/ragged_axes.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("tests/in/ragged_axes.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/ragged_axes.pk":12:1)
}
