// kernel value_slices
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<16x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<16x256xbf16, #tpu.memory_space<vmem>>, %arg3: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<8x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":13:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":13:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<16x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16x256xf32> loc("tests/in/value_slices.pk":13:13)
    %3 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/value_slices.pk":13:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<16x256xf32> loc("tests/in/value_slices.pk":13:21)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<16x256xf32>, vector<16x256xf32>) -> vector<16x256xf32> loc("tests/in/value_slices.pk":13:13)
    %6 = "stable_mosaic.vector.extract_strided_slice"(%5) {offsets = [0, 128], sizes = [16, 128], strides = [1, 1]} : (vector<16x256xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:13)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:31)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:31)
    %9 = "stable_mosaic.vector.load"(%arg2, %7, %8) : (memref<16x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x256xbf16> loc("tests/in/value_slices.pk":14:31)
    %10 = "stable_mosaic.arith.extf"(%9) : (vector<16x256xbf16>) -> vector<16x256xf32> loc("tests/in/value_slices.pk":14:30)
    %11 = "stable_mosaic.vector.extract_strided_slice"(%10) {offsets = [0, 0], sizes = [16, 128], strides = [1, 1]} : (vector<16x256xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:30)
    %12 = "stable_mosaic.arith.addf"(%6, %11) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:13)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:58)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:58)
    %15 = "stable_mosaic.vector.load"(%arg2, %13, %14) : (memref<16x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x256xbf16> loc("tests/in/value_slices.pk":14:58)
    %16 = "stable_mosaic.vector.extract_strided_slice"(%15) {offsets = [0, 128], sizes = [16, 128], strides = [1, 1]} : (vector<16x256xbf16>) -> vector<16x128xbf16> loc("tests/in/value_slices.pk":14:58)
    %17 = "stable_mosaic.arith.extf"(%16) : (vector<16x128xbf16>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:58)
    %18 = "stable_mosaic.arith.addf"(%12, %17) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:13)
    %19 = "stable_mosaic.vector.extract_strided_slice"(%5) {offsets = [0, 64], sizes = [16, 128], strides = [1, 1]} : (vector<16x256xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:86)
    %20 = "stable_mosaic.arith.addf"(%18, %19) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/value_slices.pk":14:13)
    %21 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:5)
    %22 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":14:5)
    "stable_mosaic.tpu.vector_store"(%20, %arg3, %21, %22) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/value_slices.pk":14:5)
    %23 = "stable_mosaic.vector.extract_strided_slice"(%5) {offsets = [0, 0], sizes = [8, 256], strides = [1, 1]} : (vector<16x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:13)
    %24 = "stable_mosaic.vector.extract_strided_slice"(%5) {offsets = [8, 0], sizes = [8, 256], strides = [1, 1]} : (vector<16x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:27)
    %25 = "stable_mosaic.arith.addf"(%23, %24) {fastmath = #arith.fastmath<none>} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:13)
    %26 = "stable_mosaic.vector.extract_strided_slice"(%5) {offsets = [5, 0], sizes = [8, 256], strides = [1, 1]} : (vector<16x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:41)
    %27 = "stable_mosaic.arith.addf"(%25, %26) {fastmath = #arith.fastmath<none>} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:13)
    %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":15:56)
    %29 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":15:56)
    %30 = "stable_mosaic.vector.load"(%arg2, %28, %29) : (memref<16x256xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x256xbf16> loc("tests/in/value_slices.pk":15:56)
    %31 = "stable_mosaic.vector.extract_strided_slice"(%30) {offsets = [3, 0], sizes = [8, 256], strides = [1, 1]} : (vector<16x256xbf16>) -> vector<8x256xbf16> loc("tests/in/value_slices.pk":15:56)
    %32 = "stable_mosaic.arith.extf"(%31) : (vector<8x256xbf16>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:56)
    %33 = "stable_mosaic.arith.addf"(%27, %32) {fastmath = #arith.fastmath<none>} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<8x256xf32> loc("tests/in/value_slices.pk":15:13)
    %34 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":15:5)
    %35 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/value_slices.pk":15:5)
    "stable_mosaic.tpu.vector_store"(%33, %arg4, %34, %35) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x256xf32>, memref<8x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/value_slices.pk":15:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/value_slices.pk":5:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<16x256xf32, #tpu.memory_space<vmem>>, memref<16x256xbf16, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<vmem>>, memref<8x256xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "value_slices", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 256>}, {transform_indices = @transform_2, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 8, 256>}]} : () -> () loc("tests/in/value_slices.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/value_slices.pk":8:43)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/value_slices.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/value_slices.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/value_slices.pk":9:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/value_slices.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/value_slices.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/value_slices.pk":10:45)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/value_slices.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/value_slices.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/value_slices.pk":10:90)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/value_slices.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("tests/in/value_slices.pk":5:1)
}
