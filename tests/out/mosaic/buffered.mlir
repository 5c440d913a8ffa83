// kernel resident_columns
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<128x256xbf16, #tpu.memory_space<vmem>>, %arg3: memref<256x128xbf16, #tpu.memory_space<vmem>>, %arg4: memref<1x128xf32, #tpu.memory_space<vmem>>, %arg5: memref<128x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:17)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:17)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<128x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<128x256xbf16> loc("tests/in/buffered.pk":15:17)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:24)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:24)
    %5 = "stable_mosaic.vector.load"(%arg3, %3, %4) : (memref<256x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x128xbf16> loc("tests/in/buffered.pk":15:24)
    %6 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<128x128xf32>} : () -> vector<128x128xf32> loc("tests/in/buffered.pk":15:13)
    %7 = "stable_mosaic.tpu.matmul"(%2, %5, %6) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<128x256xbf16>, vector<256x128xbf16>, vector<128x128xf32>) -> vector<128x128xf32> loc("tests/in/buffered.pk":15:13)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:33)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:33)
    %10 = "stable_mosaic.vector.load"(%arg4, %8, %9) : (memref<1x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<1x128xf32> loc("tests/in/buffered.pk":15:33)
    %11 = "stable_mosaic.vector.broadcast"(%10) : (vector<1x128xf32>) -> vector<128x128xf32> loc("tests/in/buffered.pk":15:33)
    %12 = "stable_mosaic.arith.mulf"(%7, %11) {fastmath = #arith.fastmath<none>} : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("tests/in/buffered.pk":15:13)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":15:5)
    "stable_mosaic.tpu.vector_store"(%12, %arg5, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/buffered.pk":15:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/buffered.pk":7:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], function_type = (i32, i32, memref<128x256xbf16, #tpu.memory_space<vmem>>, memref<256x128xbf16, #tpu.memory_space<vmem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2, 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "resident_columns", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 256, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 1, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 128, 128>}]} : () -> () loc("tests/in/buffered.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/buffered.pk":9:40)
    "stable_mosaic.func.return"(%arg1, %0) : (i32, i32) -> () loc("tests/in/buffered.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/buffered.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/buffered.pk":10:37)
    "stable_mosaic.func.return"(%0, %arg0) : (i32, i32) -> () loc("tests/in/buffered.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/buffered.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/buffered.pk":11:36)
    "stable_mosaic.func.return"(%0, %arg0) : (i32, i32) -> () loc("tests/in/buffered.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/buffered.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg1, %arg0) : (i32, i32) -> () loc("tests/in/buffered.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("tests/in/buffered.pk":7:1)
}
// kernel buffered_copy
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<64x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<64x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":24:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":24:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<64x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<64x128xf32> loc("tests/in/buffered.pk":24:13)
    %3 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/buffered.pk":24:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<64x128xf32> loc("tests/in/buffered.pk":24:21)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<64x128xf32>, vector<64x128xf32>) -> vector<64x128xf32> loc("tests/in/buffered.pk":24:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":24:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/buffered.pk":24:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg2, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<64x128xf32>, memref<64x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/buffered.pk":24:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/buffered.pk":18:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<64x128xf32, #tpu.memory_space<vmem>>, memref<64x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "buffered_copy", tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 64, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 64, 128>}]} : () -> () loc("tests/in/buffered.pk":18:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/buffered.pk":20:43)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/buffered.pk":18:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/buffered.pk":18:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/buffered.pk":21:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/buffered.pk":18:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/buffered.pk":18:1)
}
