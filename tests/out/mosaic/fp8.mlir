// kernel fp8
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>, %arg2: memref<128x128xf8E5M2, #tpu.memory_space<vmem>>, %arg3: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:14)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:14)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>, index, index) -> vector<128x128xf8E4M3FN> loc("lowering/tests/mosaic_ops/fp8.pk":7:14)
    %3 = "stable_mosaic.arith.extf"(%2) : (vector<128x128xf8E4M3FN>) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":7:13)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:31)
    %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:31)
    %6 = "stable_mosaic.vector.load"(%arg2, %4, %5) : (memref<128x128xf8E5M2, #tpu.memory_space<vmem>>, index, index) -> vector<128x128xf8E5M2> loc("lowering/tests/mosaic_ops/fp8.pk":7:31)
    %7 = "stable_mosaic.arith.extf"(%6) : (vector<128x128xf8E5M2>) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":7:30)
    %8 = "stable_mosaic.arith.addf"(%3, %7) {fastmath = #arith.fastmath<none>} : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":7:13)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":7:5)
    "stable_mosaic.tpu.vector_store"(%8, %arg3, %9, %10) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("lowering/tests/mosaic_ops/fp8.pk":7:5)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":8:14)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":8:14)
    %13 = "stable_mosaic.vector.load"(%arg2, %11, %12) : (memref<128x128xf8E5M2, #tpu.memory_space<vmem>>, index, index) -> vector<128x128xf8E5M2> loc("lowering/tests/mosaic_ops/fp8.pk":8:14)
    %14 = "stable_mosaic.arith.extf"(%13) : (vector<128x128xf8E5M2>) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":8:14)
    %15 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("lowering/tests/mosaic_ops/fp8.pk":8:29)
    %16 = "stable_mosaic.vector.broadcast"(%15) : (f32) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":8:29)
    %17 = "stable_mosaic.arith.mulf"(%14, %16) {fastmath = #arith.fastmath<none>} : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("lowering/tests/mosaic_ops/fp8.pk":8:13)
    %18 = "stable_mosaic.arith.truncf"(%17) : (vector<128x128xf32>) -> vector<128x128xf8E4M3FN> loc("lowering/tests/mosaic_ops/fp8.pk":8:13)
    %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":8:5)
    %20 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/fp8.pk":8:5)
    "stable_mosaic.tpu.vector_store"(%18, %arg4, %19, %20) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xf8E4M3FN>, memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>, index, index) -> () loc("lowering/tests/mosaic_ops/fp8.pk":8:5)
    "stable_mosaic.func.return"() : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>, memref<128x128xf8E5M2, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf8E4M3FN, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "fp8", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 128, 128>}]} : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":2:40)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":2:43)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":3:38)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":3:41)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":4:37)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":4:40)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":4:79)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("lowering/tests/mosaic_ops/fp8.pk":4:82)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("lowering/tests/mosaic_ops/fp8.pk":1:1)
}
