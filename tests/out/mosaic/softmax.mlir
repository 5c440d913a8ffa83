// kernel softmax
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x1024xf32, #tpu.memory_space<vmem>>, %arg2: memref<128x1024xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/softmax.pk":17:30)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/softmax.pk":17:30)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x1024xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x1024xf32> loc("kernels/softmax.pk":17:30)
    %3 = "stable_mosaic.arith.constant"() {value = dense<0xFF800000> : vector<128xf32>} : () -> vector<128xf32> loc("std/nn.pk":30:13)
    %4 = "stable_mosaic.vector.multi_reduction"(%2, %3) {kind = #vector.kind<maximumf>, reduction_dims = array<i64: 1>} : (vector<128x1024xf32>, vector<128xf32>) -> vector<128xf32> loc("std/nn.pk":30:13)
    %5 = "stable_mosaic.vector.shape_cast"(%4) : (vector<128xf32>) -> vector<128x1xf32> loc("std/nn.pk":30:13)
    %6 = "stable_mosaic.vector.broadcast"(%5) : (vector<128x1xf32>) -> vector<128x1024xf32> loc("std/nn.pk":31:21)
    %7 = "stable_mosaic.arith.subf"(%2, %6) {fastmath = #arith.fastmath<none>} : (vector<128x1024xf32>, vector<128x1024xf32>) -> vector<128x1024xf32> loc("std/nn.pk":31:17)
    %8 = "stable_mosaic.math.exp"(%7) {fastmath = #arith.fastmath<none>} : (vector<128x1024xf32>) -> vector<128x1024xf32> loc("std/nn.pk":31:13)
    %9 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<128xf32>} : () -> vector<128xf32> loc("std/nn.pk":32:9)
    %10 = "stable_mosaic.vector.multi_reduction"(%8, %9) {kind = #vector.kind<add>, reduction_dims = array<i64: 1>} : (vector<128x1024xf32>, vector<128xf32>) -> vector<128xf32> loc("std/nn.pk":32:9)
    %11 = "stable_mosaic.vector.shape_cast"(%10) : (vector<128xf32>) -> vector<128x1xf32> loc("std/nn.pk":32:9)
    %12 = "stable_mosaic.vector.broadcast"(%11) : (vector<128x1xf32>) -> vector<128x1024xf32> loc("std/nn.pk":32:9)
    %13 = "stable_mosaic.arith.divf"(%8, %12) {fastmath = #arith.fastmath<none>} : (vector<128x1024xf32>, vector<128x1024xf32>) -> vector<128x1024xf32> loc("std/nn.pk":32:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/softmax.pk":17:5)
    %15 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/softmax.pk":17:5)
    "stable_mosaic.tpu.vector_store"(%13, %arg2, %14, %15) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x1024xf32>, memref<128x1024xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/softmax.pk":17:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/softmax.pk":5:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<128x1024xf32, #tpu.memory_space<vmem>>, memref<128x1024xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 8>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "softmax", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 1024>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 1024>}]} : () -> () loc("kernels/softmax.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/softmax.pk":13:39)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("kernels/softmax.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/softmax.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/softmax.pk":14:40)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("kernels/softmax.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/softmax.pk":5:1)
}
