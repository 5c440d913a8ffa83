// kernel swiglu
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg3: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg4: memref<256x512xbf16, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:23)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:23)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":24:23)
    %3 = "stable_mosaic.arith.extf"(%2) : (vector<256x512xbf16>) -> vector<256x512xf32> loc("kernels/glu.pk":24:23)
    %4 = "stable_mosaic.arith.constant"() {value = dense<1.000000e+00> : vector<256x512xf32>} : () -> vector<256x512xf32> loc("std/nn.pk":20:9)
    %5 = "stable_mosaic.arith.negf"(%3) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":20:9)
    %6 = "stable_mosaic.math.exp"(%5) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":20:9)
    %7 = "stable_mosaic.arith.addf"(%4, %6) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":20:9)
    %8 = "stable_mosaic.arith.divf"(%4, %7) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":20:9)
    %9 = "stable_mosaic.arith.mulf"(%3, %8) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":20:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:40)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:40)
    %12 = "stable_mosaic.vector.load"(%arg3, %10, %11) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":24:40)
    %13 = "stable_mosaic.arith.extf"(%12) : (vector<256x512xbf16>) -> vector<256x512xf32> loc("kernels/glu.pk":24:39)
    %14 = "stable_mosaic.arith.mulf"(%9, %13) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("kernels/glu.pk":24:13)
    %15 = "stable_mosaic.arith.truncf"(%14) : (vector<256x512xf32>) -> vector<256x512xbf16> loc("kernels/glu.pk":24:13)
    %16 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:5)
    %17 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":24:5)
    "stable_mosaic.tpu.vector_store"(%15, %arg4, %16, %17) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x512xbf16>, memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":24:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/glu.pk":7:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<256x512xbf16, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 16, 28>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "swiglu", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_2, window_bounds = array<i64: 256, 512>}]} : () -> () loc("kernels/glu.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/glu.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/glu.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":7:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/glu.pk":7:1)
}
// kernel geglu
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg3: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg4: memref<256x512xbf16, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:19)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:19)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":44:19)
    %3 = "stable_mosaic.arith.extf"(%2) : (vector<256x512xbf16>) -> vector<256x512xf32> loc("kernels/glu.pk":44:19)
    %4 = "stable_mosaic.arith.constant"() {value = 5.000000e-01 : f32} : () -> f32 loc("std/nn.pk":10:5)
    %5 = "stable_mosaic.vector.broadcast"(%4) : (f32) -> vector<256x512xf32> loc("std/nn.pk":10:5)
    %6 = "stable_mosaic.arith.mulf"(%5, %3) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:5)
    %7 = "stable_mosaic.arith.constant"() {value = 4.471500e-02 : f32} : () -> f32 loc("std/nn.pk":10:36)
    %8 = "stable_mosaic.vector.broadcast"(%7) : (f32) -> vector<256x512xf32> loc("std/nn.pk":10:36)
    %9 = "stable_mosaic.arith.mulf"(%8, %3) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:36)
    %10 = "stable_mosaic.arith.mulf"(%9, %3) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:36)
    %11 = "stable_mosaic.arith.mulf"(%10, %3) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:36)
    %12 = "stable_mosaic.arith.addf"(%3, %11) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:31)
    %13 = "stable_mosaic.arith.constant"() {value = 0.797884583 : f32} : () -> f32 loc("std/nn.pk":10:27)
    %14 = "stable_mosaic.vector.broadcast"(%13) : (f32) -> vector<256x512xf32> loc("std/nn.pk":10:27)
    %15 = "stable_mosaic.arith.mulf"(%14, %12) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:27)
    %16 = "stable_mosaic.math.tanh"(%15) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:22)
    %17 = "stable_mosaic.arith.constant"() {value = 1.000000e+00 : f32} : () -> f32 loc("std/nn.pk":10:16)
    %18 = "stable_mosaic.vector.broadcast"(%17) : (f32) -> vector<256x512xf32> loc("std/nn.pk":10:16)
    %19 = "stable_mosaic.arith.addf"(%18, %16) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:15)
    %20 = "stable_mosaic.arith.mulf"(%6, %19) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("std/nn.pk":10:5)
    %21 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:49)
    %22 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:49)
    %23 = "stable_mosaic.vector.load"(%arg3, %21, %22) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":44:49)
    %24 = "stable_mosaic.arith.extf"(%23) : (vector<256x512xbf16>) -> vector<256x512xf32> loc("kernels/glu.pk":44:48)
    %25 = "stable_mosaic.arith.mulf"(%20, %24) {fastmath = #arith.fastmath<none>} : (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32> loc("kernels/glu.pk":44:13)
    %26 = "stable_mosaic.arith.truncf"(%25) : (vector<256x512xf32>) -> vector<256x512xbf16> loc("kernels/glu.pk":44:13)
    %27 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:5)
    %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":44:5)
    "stable_mosaic.tpu.vector_store"(%26, %arg4, %27, %28) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x512xbf16>, memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":44:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/glu.pk":27:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<256x512xbf16, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 16, 28>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "geglu", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_2, window_bounds = array<i64: 256, 512>}]} : () -> () loc("kernels/glu.pk":27:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":27:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/glu.pk":27:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":27:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/glu.pk":27:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":27:1)
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/glu.pk":27:1)
}
// kernel gated_mlp
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: memref<256x512xbf16, #tpu.memory_space<vmem>>, %arg4: memref<512x256xbf16, #tpu.memory_space<vmem>>, %arg5: memref<512x256xbf16, #tpu.memory_space<vmem>>, %arg6: memref<256x256xbf16, #tpu.memory_space<vmem>>, %arg7: memref<256x256xf32, #tpu.memory_space<vmem>>, %arg8: memref<256x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/glu.pk":71:13)
    %1 = "stable_mosaic.arith.cmpi"(%arg2, %0) {predicate = 0 : i64} : (i32, i32) -> i1 loc("kernels/glu.pk":71:8)
    "stable_mosaic.scf.if"(%1) ({
      %2 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("kernels/glu.pk":72:20)
      %3 = "stable_mosaic.vector.broadcast"(%2) : (f32) -> vector<256x256xf32> loc("kernels/glu.pk":72:20)
      %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":72:9)
      %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":72:9)
      "stable_mosaic.tpu.vector_store"(%3, %arg7, %4, %5) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":72:9)
      %6 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("kernels/glu.pk":73:18)
      %7 = "stable_mosaic.vector.broadcast"(%6) : (f32) -> vector<256x256xf32> loc("kernels/glu.pk":73:18)
      %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":73:9)
      %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":73:9)
      "stable_mosaic.tpu.vector_store"(%7, %arg8, %8, %9) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":73:9)
      "stable_mosaic.scf.yield"() : () -> () loc("kernels/glu.pk":71:5)
    }, {
    }) : (i1) -> () loc("kernels/glu.pk":71:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:21)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:21)
    %12 = "stable_mosaic.vector.load"(%arg3, %10, %11) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":75:21)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:28)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:28)
    %15 = "stable_mosaic.vector.load"(%arg4, %13, %14) : (memref<512x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<512x256xbf16> loc("kernels/glu.pk":75:28)
    %16 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<256x256xf32>} : () -> vector<256x256xf32> loc("kernels/glu.pk":75:17)
    %17 = "stable_mosaic.tpu.matmul"(%12, %15, %16) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<256x512xbf16>, vector<512x256xbf16>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/glu.pk":75:17)
    %18 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:5)
    %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:5)
    %20 = "stable_mosaic.vector.load"(%arg7, %18, %19) : (memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x256xf32> loc("kernels/glu.pk":75:5)
    %21 = "stable_mosaic.arith.addf"(%20, %17) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/glu.pk":75:5)
    %22 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:5)
    %23 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":75:5)
    "stable_mosaic.tpu.vector_store"(%21, %arg7, %22, %23) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":75:5)
    %24 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:19)
    %25 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:19)
    %26 = "stable_mosaic.vector.load"(%arg3, %24, %25) : (memref<256x512xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<256x512xbf16> loc("kernels/glu.pk":76:19)
    %27 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:26)
    %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:26)
    %29 = "stable_mosaic.vector.load"(%arg5, %27, %28) : (memref<512x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<512x256xbf16> loc("kernels/glu.pk":76:26)
    %30 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<256x256xf32>} : () -> vector<256x256xf32> loc("kernels/glu.pk":76:15)
    %31 = "stable_mosaic.tpu.matmul"(%26, %29, %30) {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false} : (vector<256x512xbf16>, vector<512x256xbf16>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/glu.pk":76:15)
    %32 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:5)
    %33 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:5)
    %34 = "stable_mosaic.vector.load"(%arg8, %32, %33) : (memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x256xf32> loc("kernels/glu.pk":76:5)
    %35 = "stable_mosaic.arith.addf"(%34, %31) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/glu.pk":76:5)
    %36 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:5)
    %37 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":76:5)
    "stable_mosaic.tpu.vector_store"(%35, %arg8, %36, %37) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xf32>, memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":76:5)
    %38 = "stable_mosaic.arith.constant"() {value = 7 : i32} : () -> i32 loc("kernels/glu.pk":77:13)
    %39 = "stable_mosaic.arith.cmpi"(%arg2, %38) {predicate = 0 : i64} : (i32, i32) -> i1 loc("kernels/glu.pk":77:8)
    "stable_mosaic.scf.if"(%39) ({
      %40 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":78:17)
      %41 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":78:17)
      %42 = "stable_mosaic.vector.load"(%arg7, %40, %41) : (memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x256xf32> loc("kernels/glu.pk":78:17)
      %43 = "stable_mosaic.arith.constant"() {value = dense<1.000000e+00> : vector<256x256xf32>} : () -> vector<256x256xf32> loc("std/nn.pk":20:9)
      %44 = "stable_mosaic.arith.negf"(%42) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>) -> vector<256x256xf32> loc("std/nn.pk":20:9)
      %45 = "stable_mosaic.math.exp"(%44) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>) -> vector<256x256xf32> loc("std/nn.pk":20:9)
      %46 = "stable_mosaic.arith.addf"(%43, %45) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("std/nn.pk":20:9)
      %47 = "stable_mosaic.arith.divf"(%43, %46) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("std/nn.pk":20:9)
      %48 = "stable_mosaic.arith.mulf"(%42, %47) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("std/nn.pk":20:5)
      %49 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":80:22)
      %50 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":80:22)
      %51 = "stable_mosaic.vector.load"(%arg8, %49, %50) : (memref<256x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<256x256xf32> loc("kernels/glu.pk":80:22)
      %52 = "stable_mosaic.arith.mulf"(%48, %51) {fastmath = #arith.fastmath<none>} : (vector<256x256xf32>, vector<256x256xf32>) -> vector<256x256xf32> loc("kernels/glu.pk":80:17)
      %53 = "stable_mosaic.arith.truncf"(%52) : (vector<256x256xf32>) -> vector<256x256xbf16> loc("kernels/glu.pk":80:17)
      %54 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":80:9)
      %55 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/glu.pk":80:9)
      "stable_mosaic.tpu.vector_store"(%53, %arg6, %54, %55) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<256x256xbf16>, memref<256x256xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("kernels/glu.pk":80:9)
      "stable_mosaic.scf.yield"() : () -> () loc("kernels/glu.pk":77:5)
    }, {
    }) : (i1) -> () loc("kernels/glu.pk":77:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/glu.pk":47:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], function_type = (i32, i32, i32, memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<512x256xbf16, #tpu.memory_space<vmem>>, memref<512x256xbf16, #tpu.memory_space<vmem>>, memref<256x256xbf16, #tpu.memory_space<vmem>>, memref<256x256xf32, #tpu.memory_space<vmem>>, memref<256x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 16, 56, 8>, scalar_prefetch = 0 : i64, scratch_operands = 2 : i64, sym_name = "gated_mlp", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 256, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 512, 256>}, {transform_indices = @transform_2, window_bounds = array<i64: 512, 256>}, {transform_indices = @transform_3, window_bounds = array<i64: 256, 256>}]} : () -> () loc("kernels/glu.pk":47:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg0, %arg2) : (i32, i32) -> () loc("kernels/glu.pk":47:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/glu.pk":47:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg2, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":47:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/glu.pk":47:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg2, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":47:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/glu.pk":47:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("kernels/glu.pk":47:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("kernels/glu.pk":47:1)
}
