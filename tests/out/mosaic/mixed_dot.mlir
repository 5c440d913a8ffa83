// kernel mixed_dot
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<256x128xbf16, #tpu.memory_space<vmem>>, %arg3: memref<128x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:17)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:17)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x256xf32> loc("tests/in/mixed_dot.pk":10:17)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:24)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:24)
    %5 = "stable_mosaic.vector.load"(%arg2, %3, %4) : (memref<256x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x128xbf16> loc("tests/in/mixed_dot.pk":10:24)
    %6 = "stable_mosaic.arith.extf"(%5) : (vector<256x128xbf16>) -> vector<256x128xf32> loc("tests/in/mixed_dot.pk":10:24)
    %7 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<128x128xf32>} : () -> vector<128x128xf32> loc("tests/in/mixed_dot.pk":10:13)
    %8 = "stable_mosaic.tpu.matmul"(%2, %6, %7) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<128x256xf32>, vector<256x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("tests/in/mixed_dot.pk":10:13)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/mixed_dot.pk":10:5)
    "stable_mosaic.tpu.vector_store"(%8, %arg3, %9, %10) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/mixed_dot.pk":10:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/mixed_dot.pk":4:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<128x256xf32, #tpu.memory_space<vmem>>, memref<256x128xbf16, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "mixed_dot", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 128>}]} : () -> () loc("tests/in/mixed_dot.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":5:35)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":5:38)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("tests/in/mixed_dot.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/mixed_dot.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":6:36)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":6:39)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("tests/in/mixed_dot.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/mixed_dot.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":7:36)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/mixed_dot.pk":7:39)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("tests/in/mixed_dot.pk":4:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/mixed_dot.pk":4:1)
}
