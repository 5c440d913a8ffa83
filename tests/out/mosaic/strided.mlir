// kernel strided
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<32x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<2x16x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<32x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg5: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg6: memref<32x128xf32, #tpu.memory_space<vmem>>, %arg7: memref<8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":22:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":22:13)
    %2 = "stable_mosaic.tpu.strided_load"(%arg1, %0, %1) {strides = array<i32: 2, 1>} : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xf32> loc("tests/in/strided.pk":22:13)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":22:5)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":22:5)
    "stable_mosaic.tpu.vector_store"(%2, %arg4, %3, %4) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/strided.pk":22:5)
    %5 = "stable_mosaic.arith.constant"() {value = 1 : index} : () -> index loc("tests/in/strided.pk":23:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":23:13)
    %7 = "stable_mosaic.tpu.strided_load"(%arg1, %5, %6) {strides = array<i32: 2, 1>} : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xf32> loc("tests/in/strided.pk":23:13)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":23:5)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":23:5)
    "stable_mosaic.tpu.vector_store"(%7, %arg5, %8, %9) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/strided.pk":23:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":24:13)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":24:13)
    %12 = "stable_mosaic.vector.load"(%arg1, %10, %11) : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<32x128xf32> loc("tests/in/strided.pk":24:13)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":24:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":24:5)
    "stable_mosaic.tpu.vector_store"(%12, %arg6, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<32x128xf32>, memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/strided.pk":24:5)
    %15 = "stable_mosaic.arith.constant"() {value = 5 : i32} : () -> i32 loc("tests/in/strided.pk":25:38)
    %16 = "stable_mosaic.arith.muli"(%arg0, %15) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/strided.pk":25:34)
    %17 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/strided.pk":25:42)
    %18 = "stable_mosaic.arith.addi"(%16, %17) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/strided.pk":25:34)
    %19 = "stable_mosaic.arith.index_cast"(%18) : (i32) -> index loc("tests/in/strided.pk":25:25)
    %20 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":25:25)
    %21 = "stable_mosaic.tpu.strided_load"(%arg3, %19, %20) {strides = array<i32: 3, 1>} : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/strided.pk":25:25)
    %22 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/strided.pk":25:57)
    %23 = "stable_mosaic.vector.broadcast"(%22) : (f32) -> vector<8x128xf32> loc("tests/in/strided.pk":25:57)
    %24 = "stable_mosaic.arith.mulf"(%21, %23) {fastmath = #arith.fastmath<none>} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32> loc("tests/in/strided.pk":25:25)
    %25 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":25:5)
    %26 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":25:5)
    "stable_mosaic.tpu.strided_store"(%24, %arg6, %25, %26) {strides = array<i32: 4, 1>} : (vector<8x128xf32>, memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/strided.pk":25:5)
    %27 = "stable_mosaic.arith.constant"() {value = 1 : index} : () -> index loc("tests/in/strided.pk":26:13)
    %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":26:13)
    %29 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":26:13)
    %30 = "stable_mosaic.tpu.strided_load"(%arg2, %27, %28, %29) {strides = array<i32: 1, 2, 1>} : (memref<2x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> vector<1x8x128xf32> loc("tests/in/strided.pk":26:13)
    %31 = "stable_mosaic.vector.shape_cast"(%30) : (vector<1x8x128xf32>) -> vector<8x128xf32> loc("tests/in/strided.pk":26:13)
    %32 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":26:5)
    %33 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/strided.pk":26:5)
    "stable_mosaic.tpu.vector_store"(%31, %arg7, %32, %33) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/strided.pk":26:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/strided.pk":5:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<32x128xf32, #tpu.memory_space<vmem>>, memref<2x16x128xf32, #tpu.memory_space<vmem>>, memref<32x128xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<vmem>>, memref<32x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "strided", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 32, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 2, 16, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 32, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_4, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_5, window_bounds = array<i64: 32, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_6, window_bounds = array<i64: 8, 128>}]} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":11:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":5:1)
    "stable_mosaic.func.return"(%0, %0, %0) : (i32, i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":5:1)
    "stable_mosaic.func.return"(%0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":15:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":16:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_4"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":17:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_5"} : () -> () loc("tests/in/strided.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/strided.pk":5:1)
    "stable_mosaic.func.return"(%0, %0) : (i32, i32) -> () loc("tests/in/strided.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_6"} : () -> () loc("tests/in/strided.pk":5:1)
}
