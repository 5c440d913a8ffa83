// kernel linear
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<256x1024xbf16, #tpu.memory_space<vmem>>, %arg3: memref<1024x1024xbf16, #tpu.memory_space<vmem>>, %arg4: memref<1x1024xf32, #tpu.memory_space<vmem>>, %arg5: memref<256x1024xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:18)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:18)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<256x1024xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x1024xbf16> loc("kernels/linear.pk":39:18)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:25)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:25)
    %5 = "stable_mosaic.vector.load"(%arg3, %3, %4) : (memref<1024x1024xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<1024x1024xbf16> loc("kernels/linear.pk":39:25)
    %6 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<256x1024xf32>} : () -> vector<256x1024xf32> loc("kernels/linear.pk":39:14)
    %7 = "stable_mosaic.tpu.matmul"(%2, %5, %6) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<256x1024xbf16>, vector<1024x1024xbf16>, vector<256x1024xf32>) -> vector<256x1024xf32> loc("kernels/linear.pk":39:14)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:34)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:34)
    %10 = "stable_mosaic.vector.load"(%arg4, %8, %9) : (memref<1x1024xf32, #tpu.memory_space<vmem>>, index, index) -> vector<1x1024xf32> loc("kernels/linear.pk":39:34)
    %11 = "stable_mosaic.vector.broadcast"(%10) : (vector<1x1024xf32>) -> vector<256x1024xf32> loc("kernels/linear.pk":39:34)
    %12 = "stable_mosaic.arith.addf"(%7, %11) {fastmath = #arith.fastmath<none>} : (vector<256x1024xf32>, vector<256x1024xf32>) -> vector<256x1024xf32> loc("kernels/linear.pk":39:13)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/linear.pk":39:5)
    "stable_mosaic.tpu.vector_store"(%12, %arg5, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x1024xf32>, memref<256x1024xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/linear.pk":39:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/linear.pk":12:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<256x1024xbf16, #tpu.memory_space<vmem>>, memref<1024x1024xbf16, #tpu.memory_space<vmem>>, memref<1x1024xf32, #tpu.memory_space<vmem>>, memref<256x1024xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1, 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "linear", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 1024>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 1024, 1024>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 1, 1024>}, {transform_indices = @transform_3, window_bounds = array<i64: 256, 1024>}]} : () -> () loc("kernels/linear.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/linear.pk":32:37)
    "stable_mosaic.func.return"(%arg1, %0) : (i32, i32) -> () loc("kernels/linear.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/linear.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/linear.pk":33:34)
    "stable_mosaic.func.return"(%0, %arg0) : (i32, i32) -> () loc("kernels/linear.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/linear.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/linear.pk":35:36)
    "stable_mosaic.func.return"(%0, %arg0) : (i32, i32) -> () loc("kernels/linear.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/linear.pk":12:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg1, %arg0) : (i32, i32) -> () loc("kernels/linear.pk":12:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("kernels/linear.pk":12:1)
}
