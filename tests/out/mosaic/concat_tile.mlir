// kernel concat_tile
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<8x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x256xf32, #tpu.memory_space<vmem>>, %arg3: memref<16x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":11:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":11:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<8x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x256xf32> loc("tests/in/concat_tile.pk":11:13)
    %3 = "stable_mosaic.vector.extract_strided_slice"(%2) {offsets = [0, 128], sizes = [8, 128], strides = [1, 1]} : (vector<8x256xf32>) -> vector<8x128xf32> loc("tests/in/concat_tile.pk":12:26)
    %4 = "stable_mosaic.vector.extract_strided_slice"(%2) {offsets = [0, 0], sizes = [8, 128], strides = [1, 1]} : (vector<8x256xf32>) -> vector<8x128xf32> loc("tests/in/concat_tile.pk":12:42)
    %5 = "stable_mosaic.tpu.concatenate"(%3, %4) {dimension = 1 : i32} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x256xf32> loc("tests/in/concat_tile.pk":12:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":12:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":12:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg2, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x256xf32>, memref<8x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/concat_tile.pk":12:5)
    %8 = "stable_mosaic.vector.extract_strided_slice"(%2) {offsets = [0, 0], sizes = [8, 128], strides = [1, 1]} : (vector<8x256xf32>) -> vector<8x128xf32> loc("tests/in/concat_tile.pk":13:18)
    %9 = "stable_mosaic.tpu.concatenate"(%8, %8) {dimension = 0 : i32} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<16x128xf32> loc("tests/in/concat_tile.pk":13:13)
    %10 = "stable_mosaic.tpu.concatenate"(%9, %9) {dimension = 1 : i32} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x256xf32> loc("tests/in/concat_tile.pk":13:13)
    %11 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/concat_tile.pk":13:62)
    %12 = "stable_mosaic.vector.broadcast"(%11) : (f32) -> vector<8x256xf32> loc("tests/in/concat_tile.pk":13:62)
    %13 = "stable_mosaic.arith.mulf"(%2, %12) {fastmath = #arith.fastmath<none>} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<8x256xf32> loc("tests/in/concat_tile.pk":13:58)
    %14 = "stable_mosaic.tpu.concatenate"(%2, %13) {dimension = 0 : i32} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<16x256xf32> loc("tests/in/concat_tile.pk":13:42)
    %15 = "stable_mosaic.arith.addf"(%10, %14) {fastmath = #arith.fastmath<none>} : (vector<16x256xf32>, vector<16x256xf32>) -> vector<16x256xf32> loc("tests/in/concat_tile.pk":13:13)
    %16 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":13:5)
    %17 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/concat_tile.pk":13:5)
    "stable_mosaic.tpu.vector_store"(%15, %arg3, %16, %17) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x256xf32>, memref<16x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/concat_tile.pk":13:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/concat_tile.pk":4:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<8x256xf32, #tpu.memory_space<vmem>>, memref<8x256xf32, #tpu.memory_space<vmem>>, memref<16x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "concat_tile", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 256>}, {transform_indices = @transform_2, window_bounds = array<i64: 16, 256>}]} : () -> () loc("tests/in/concat_tile.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/concat_tile.pk":7:42)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/concat_tile.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/concat_tile.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/concat_tile.pk":8:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/concat_tile.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/concat_tile.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/concat_tile.pk":8:90)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/concat_tile.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/concat_tile.pk":4:1)
}
