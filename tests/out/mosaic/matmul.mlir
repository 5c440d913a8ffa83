// kernel matmul
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg4: memref<512x256xbf16, #tpu.memory_space<vmem>>, %arg5: memref<256x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/matmul.pk":30:17)
    %1 = "stable_mosaic.arith.cmpi"(%arg2, %0) {predicate = 0 : i64} : (i32, i32) -> i1 loc("kernels/matmul.pk":30:12)
    "stable_mosaic.scf.if"(%1) ({
      %2 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("kernels/matmul.pk":31:21)
      %3 = "stable_mosaic.vector.broadcast"(%2) : (f32) -> vector<256x256xf32> loc("kernels/matmul.pk":31:21)
      %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":31:13)
      %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":31:13)
      "stable_mosaic.tpu.vector_store"(%3, %arg5, %4, %5) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/matmul.pk":31:13)
      "stable_mosaic.scf.yield"() : () -> () loc("kernels/matmul.pk":30:9)
    }, {
    }) : (i1) -> () loc("kernels/matmul.pk":30:9)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:22)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:22)
    %8 = "stable_mosaic.vector.load"(%arg3, %6, %7) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/matmul.pk":33:22)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:29)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:29)
    %11 = "stable_mosaic.vector.load"(%arg4, %9, %10) : (memref<512x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<512x256xbf16> loc("kernels/matmul.pk":33:29)
    %12 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<256x256xf32>} : () -> vector<256x256xf32> loc("kernels/matmul.pk":33:18)
    %13 = "stable_mosaic.tpu.matmul"(%8, %11, %12) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<256x512xbf16>, vector<512x256xbf16>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/matmul.pk":33:18)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:9)
    %15 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:9)
    %16 = "stable_mosaic.vector.load"(%arg5, %14, %15) : (memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x256xf32> loc("kernels/matmul.pk":33:9)
    %17 = "stable_mosaic.arith.addf"(%16, %13) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/matmul.pk":33:9)
    %18 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:9)
    %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/matmul.pk":33:9)
    "stable_mosaic.tpu.vector_store"(%17, %arg5, %18, %19) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/matmul.pk":33:9)
    "stable_mosaic.func.return"() : () -> () loc("kernels/matmul.pk":3:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], function_type = (i32, i32, i32, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<512x256xbf16, #tpu.memory_space<vmem>>, memref<256x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4, 4, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "matmul", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 512, 256>}, {transform_indices = @transform_2, window_bounds = array<i64: 256, 256>}]} : () -> () loc("kernels/matmul.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg0, %arg2) : (i32, i32) -> () loc("kernels/matmul.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/matmul.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg2, %arg1) : (i32, i32) -> () loc("kernels/matmul.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/matmul.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/matmul.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/matmul.pk":3:1)
}
