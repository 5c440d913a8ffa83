// kernel add
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<256x512xf32, #tpu.memory_space<vmem>>, %arg3: memref<256x512xf32, #tpu.memory_space<vmem>>, %arg4: memref<256x512xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:13)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<256x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xf32> loc("kernels/add.pk":19:13)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:21)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:21)
    %5 = "stable_mosaic.vector.load"(%arg3, %3, %4) : (memref<256x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xf32> loc("kernels/add.pk":19:21)
    %6 = "stable_mosaic.arith.addf"(%2, %5) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("kernels/add.pk":19:13)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:5)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/add.pk":19:5)
    "stable_mosaic.tpu.vector_store"(%6, %arg4, %7, %8) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x512xf32>, memref<256x512xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/add.pk":19:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/add.pk":3:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<256x512xf32, #tpu.memory_space<vmem>>, memref<256x512xf32, #tpu.memory_space<vmem>>, memref<256x512xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "add", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_2, window_bounds = array<i64: 256, 512>}]} : () -> () loc("kernels/add.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/add.pk":3:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/add.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/add.pk":3:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/add.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/add.pk":3:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/add.pk":3:1)
}
