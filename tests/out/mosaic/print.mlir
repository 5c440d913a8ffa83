// kernel print_f32
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 4 : i32} : () -> i32 loc("tests/in/print.pk":12:39)
    "stable_mosaic.tpu.log"(%arg0, %0) {formatted = true, tag = "step $0 of $1: {i}"} : (i32, i32) -> () loc("tests/in/print.pk":12:5)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":13:13)
    %2 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":13:13)
    %3 = "stable_mosaic.vector.load"(%arg1, %1, %2) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/print.pk":13:13)
    %4 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/print.pk":13:21)
    %5 = "stable_mosaic.vector.broadcast"(%4) : (f32) -> vector<8x128xf32> loc("tests/in/print.pk":13:21)
    %6 = "stable_mosaic.arith.mulf"(%3, %5) {fastmath = #arith.fastmath<none>} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32> loc("tests/in/print.pk":13:13)
    "stable_mosaic.tpu.region"() ({
      %7 = "stable_mosaic.memref.alloca"() {operandSegmentSizes = array<i32: 0, 0>} : () -> memref<8x128xf32, #tpu.memory_space<vmem>> loc("tests/in/print.pk":14:5)
      %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":14:5)
      %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":14:5)
      "stable_mosaic.tpu.vector_store"(%6, %7, %8, %9) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/print.pk":14:5)
      "stable_mosaic.tpu.log_buffer"(%7) {shape = array<i64: 8, 128>, tag = "2 x = "} : (memref<8x128xf32, #tpu.memory_space<vmem>>) -> () loc("tests/in/print.pk":14:5)
      "stable_mosaic.tpu.yield"() : () -> () loc("tests/in/print.pk":14:5)
    }) : () -> () loc("tests/in/print.pk":14:5)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":15:5)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":15:5)
    "stable_mosaic.tpu.vector_store"(%6, %arg2, %10, %11) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/print.pk":15:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/print.pk":6:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "print_f32", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} : () -> () loc("tests/in/print.pk":6:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/print.pk":8:43)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/print.pk":6:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/print.pk":6:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/print.pk":9:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/print.pk":6:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/print.pk":6:1)
}
// kernel print_bf16_i32
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: memref<16x128xbf16, #tpu.memory_space<vmem>>, %arg1: memref<16x128xi32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":21:22)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":21:22)
    %2 = "stable_mosaic.vector.load"(%arg0, %0, %1) : (memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xbf16> loc("tests/in/print.pk":21:22)
    "stable_mosaic.tpu.region"() ({
      %3 = "stable_mosaic.memref.alloca"() {operandSegmentSizes = array<i32: 0, 0>} : () -> memref<16x128xbf16, #tpu.memory_space<vmem>> loc("tests/in/print.pk":21:5)
      %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":21:5)
      %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":21:5)
      "stable_mosaic.tpu.vector_store"(%2, %3, %4, %5) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xbf16>, memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/print.pk":21:5)
      "stable_mosaic.tpu.log_buffer"(%3) {shape = array<i64: 16, 128>, tag = "x = "} : (memref<16x128xbf16, #tpu.memory_space<vmem>>) -> () loc("tests/in/print.pk":21:5)
      "stable_mosaic.tpu.yield"() : () -> () loc("tests/in/print.pk":21:5)
    }) : () -> () loc("tests/in/print.pk":21:5)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":22:13)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":22:13)
    %8 = "stable_mosaic.vector.load"(%arg0, %6, %7) : (memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xbf16> loc("tests/in/print.pk":22:13)
    %9 = "stable_mosaic.arith.fptosi"(%8) : (vector<16x128xbf16>) -> vector<16x128xi32> loc("tests/in/print.pk":22:13)
    "stable_mosaic.tpu.region"() ({
      %10 = "stable_mosaic.memref.alloca"() {operandSegmentSizes = array<i32: 0, 0>} : () -> memref<16x128xi32, #tpu.memory_space<vmem>> loc("tests/in/print.pk":23:5)
      %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":23:5)
      %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":23:5)
      "stable_mosaic.tpu.vector_store"(%9, %10, %11, %12) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xi32>, memref<16x128xi32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/print.pk":23:5)
      "stable_mosaic.tpu.log_buffer"(%10) {shape = array<i64: 16, 128>, tag = "as i32: "} : (memref<16x128xi32, #tpu.memory_space<vmem>>) -> () loc("tests/in/print.pk":23:5)
      "stable_mosaic.tpu.yield"() : () -> () loc("tests/in/print.pk":23:5)
    }) : () -> () loc("tests/in/print.pk":23:5)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":24:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":24:5)
    "stable_mosaic.tpu.vector_store"(%9, %arg1, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xi32>, memref<16x128xi32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/print.pk":24:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/print.pk":18:1)
  }) {dimension_semantics = [], function_type = (memref<16x128xbf16, #tpu.memory_space<vmem>>, memref<16x128xi32, #tpu.memory_space<vmem>>) -> (), scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "print_bf16_i32", tpu.core_type = #tpu.core_type<tc>} : () -> () loc("tests/in/print.pk":18:1)
}
// kernel print_rank3
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: memref<2x8x128xf32, #tpu.memory_space<vmem>>, %arg1: memref<2x8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:18)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:18)
    %2 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:18)
    %3 = "stable_mosaic.vector.load"(%arg0, %0, %1, %2) : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> vector<2x8x128xf32> loc("tests/in/print.pk":30:18)
    "stable_mosaic.tpu.region"() ({
      %4 = "stable_mosaic.memref.alloca"() {operandSegmentSizes = array<i32: 0, 0>} : () -> memref<2x8x128xf32, #tpu.memory_space<vmem>> loc("tests/in/print.pk":30:5)
      %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:5)
      %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:5)
      %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":30:5)
      "stable_mosaic.tpu.vector_store"(%3, %4, %5, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>} : (vector<2x8x128xf32>, memref<2x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> () loc("tests/in/print.pk":30:5)
      "stable_mosaic.tpu.log_buffer"(%4) {shape = array<i64: 2, 8, 128>, tag = ""} : (memref<2x8x128xf32, #tpu.memory_space<vmem>>) -> () loc("tests/in/print.pk":30:5)
      "stable_mosaic.tpu.yield"() : () -> () loc("tests/in/print.pk":30:5)
    }) : () -> () loc("tests/in/print.pk":30:5)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:13)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:13)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:13)
    %11 = "stable_mosaic.vector.load"(%arg0, %8, %9, %10) : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> vector<2x8x128xf32> loc("tests/in/print.pk":31:13)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:5)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:5)
    %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/print.pk":31:5)
    "stable_mosaic.tpu.vector_store"(%11, %arg1, %12, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>} : (vector<2x8x128xf32>, memref<2x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> () loc("tests/in/print.pk":31:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/print.pk":27:1)
  }) {dimension_semantics = [], function_type = (memref<2x8x128xf32, #tpu.memory_space<vmem>>, memref<2x8x128xf32, #tpu.memory_space<vmem>>) -> (), scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "print_rank3", tpu.core_type = #tpu.core_type<tc>} : () -> () loc("tests/in/print.pk":27:1)
}
