// kernel rope
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>, %arg4: memref<512x128xf32, #tpu.memory_space<vmem>>, %arg5: memref<512x128xf32, #tpu.memory_space<vmem>>, %arg6: memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":34:14)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":34:14)
    %2 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":34:14)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":34:14)
    %4 = "stable_mosaic.vector.load"(%arg3, %0, %1, %2, %3) : (memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>, index, index, index, index) -> vector<1x1x512x128xbf16> loc("kernels/rope.pk":34:14)
    %5 = "stable_mosaic.vector.shape_cast"(%4) : (vector<1x1x512x128xbf16>) -> vector<512x128xbf16> loc("kernels/rope.pk":34:14)
    %6 = "stable_mosaic.arith.extf"(%5) : (vector<512x128xbf16>) -> vector<512x128xf32> loc("kernels/rope.pk":34:14)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:19)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:19)
    %9 = "stable_mosaic.vector.load"(%arg4, %7, %8) : (memref<512x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<512x128xf32> loc("kernels/rope.pk":35:19)
    %10 = "stable_mosaic.arith.mulf"(%6, %9) {fastmath = #arith.fastmath<none>} : (vector<512x128xf32>, vector<512x128xf32>) -> vector<512x128xf32> loc("kernels/rope.pk":35:14)
    %11 = "stable_mosaic.arith.constant"() {value = 64 : i32} : () -> i32 loc("kernels/rope.pk":41:27)
    %12 = "stable_mosaic.arith.constant"() {value = 128 : i32} : () -> i32 loc("kernels/rope.pk":41:19)
    %13 = "stable_mosaic.arith.remsi"(%11, %12) : (i32, i32) -> i32 loc("kernels/rope.pk":41:19)
    %14 = "stable_mosaic.arith.addi"(%13, %12) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("kernels/rope.pk":41:19)
    %15 = "stable_mosaic.arith.remsi"(%14, %12) : (i32, i32) -> i32 loc("kernels/rope.pk":41:19)
    %16 = "stable_mosaic.tpu.dynamic_rotate"(%6, %15) {dimension = 1 : si32} : (vector<512x128xf32>, i32) -> vector<512x128xf32> loc("kernels/rope.pk":41:19)
    %17 = "stable_mosaic.tpu.iota"() {dimensions = array<i32: 1>} : () -> vector<1x128xi32> loc("kernels/rope.pk":42:11)
    %18 = "stable_mosaic.arith.constant"() {value = 64 : i32} : () -> i32 loc("kernels/rope.pk":42:34)
    %19 = "stable_mosaic.vector.broadcast"(%18) : (i32) -> vector<1x128xi32> loc("kernels/rope.pk":42:34)
    %20 = "stable_mosaic.arith.cmpi"(%17, %19) {predicate = 2 : i64} : (vector<1x128xi32>, vector<1x128xi32>) -> vector<1x128xi1> loc("kernels/rope.pk":42:11)
    %21 = "stable_mosaic.arith.negf"(%16) {fastmath = #arith.fastmath<none>} : (vector<512x128xf32>) -> vector<512x128xf32> loc("kernels/rope.pk":42:41)
    %22 = "stable_mosaic.vector.broadcast"(%20) : (vector<1x128xi1>) -> vector<512x128xi1> loc("kernels/rope.pk":42:5)
    %23 = "stable_mosaic.arith.select"(%22, %21, %16) : (vector<512x128xi1>, vector<512x128xf32>, vector<512x128xf32>) -> vector<512x128xf32> loc("kernels/rope.pk":42:5)
    %24 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:50)
    %25 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:50)
    %26 = "stable_mosaic.vector.load"(%arg5, %24, %25) : (memref<512x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<512x128xf32> loc("kernels/rope.pk":35:50)
    %27 = "stable_mosaic.arith.mulf"(%23, %26) {fastmath = #arith.fastmath<none>} : (vector<512x128xf32>, vector<512x128xf32>) -> vector<512x128xf32> loc("kernels/rope.pk":35:29)
    %28 = "stable_mosaic.arith.addf"(%10, %27) {fastmath = #arith.fastmath<none>} : (vector<512x128xf32>, vector<512x128xf32>) -> vector<512x128xf32> loc("kernels/rope.pk":35:13)
    %29 = "stable_mosaic.arith.truncf"(%28) : (vector<512x128xf32>) -> vector<512x128xbf16> loc("kernels/rope.pk":35:13)
    %30 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:5)
    %31 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:5)
    %32 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:5)
    %33 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("kernels/rope.pk":35:5)
    %34 = "stable_mosaic.vector.shape_cast"(%29) : (vector<512x128xbf16>) -> vector<1x1x512x128xbf16> loc("kernels/rope.pk":35:5)
    "stable_mosaic.tpu.vector_store"(%34, %arg6, %30, %31, %32, %33) {add = false, operandSegmentSizes = array<i32: 1, 1, 4, 0>, strides = array<i32>} : (vector<1x1x512x128xbf16>, memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>, index, index, index, index) -> () loc("kernels/rope.pk":35:5)
    "stable_mosaic.func.return"() : () -> () loc("kernels/rope.pk":3:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, i32, memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>, memref<512x128xf32, #tpu.memory_space<vmem>>, memref<512x128xf32, #tpu.memory_space<vmem>>, memref<1x1x512x128xbf16, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 8, 4, 32>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "rope", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 1, 512, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 512, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 512, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 1, 1, 512, 128>}]} : () -> () loc("kernels/rope.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/rope.pk":25:55)
    "stable_mosaic.func.return"(%arg0, %arg2, %arg1, %0) : (i32, i32, i32, i32) -> () loc("kernels/rope.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32, i32, i32), sym_name = "transform_0"} : () -> () loc("kernels/rope.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/rope.pk":27:41)
    "stable_mosaic.func.return"(%arg1, %0) : (i32, i32) -> () loc("kernels/rope.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("kernels/rope.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/rope.pk":29:41)
    "stable_mosaic.func.return"(%arg1, %0) : (i32, i32) -> () loc("kernels/rope.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("kernels/rope.pk":3:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("kernels/rope.pk":30:56)
    "stable_mosaic.func.return"(%arg0, %arg2, %arg1, %0) : (i32, i32, i32, i32) -> () loc("kernels/rope.pk":3:1)
  }) {function_type = (i32, i32, i32) -> (i32, i32, i32, i32), sym_name = "transform_3"} : () -> () loc("kernels/rope.pk":3:1)
}
