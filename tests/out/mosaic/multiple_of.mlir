// kernel rows
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<64x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<4xi32, #tpu.memory_space<smem>>, %arg3: memref<8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.index_cast"(%arg0) : (i32) -> index loc("tests/in/multiple_of.pk":15:25)
    %1 = "stable_mosaic.memref.load"(%arg2, %0) : (memref<4xi32, #tpu.memory_space<smem>>, index) -> i32 loc("tests/in/multiple_of.pk":15:25)
    %2 = "stable_mosaic.tpu.assume_multiple"(%1) {multiple = 8 : i32} : (i32) -> i32 loc("tests/in/multiple_of.pk":15:13)
    %3 = "stable_mosaic.arith.index_cast"(%2) : (i32) -> index loc("tests/in/multiple_of.pk":16:13)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/multiple_of.pk":16:13)
    %5 = "stable_mosaic.vector.load"(%arg1, %3, %4) : (memref<64x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/multiple_of.pk":16:13)
    %6 = "stable_mosaic.arith.constant"() {value = 8 : i32} : () -> i32 loc("tests/in/multiple_of.pk":16:40)
    %7 = "stable_mosaic.arith.muli"(%arg0, %6) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/multiple_of.pk":16:36)
    %8 = "stable_mosaic.arith.index_cast"(%7) : (i32) -> index loc("tests/in/multiple_of.pk":16:31)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/multiple_of.pk":16:31)
    %10 = "stable_mosaic.vector.load"(%arg1, %8, %9) : (memref<64x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/multiple_of.pk":16:31)
    %11 = "stable_mosaic.arith.addf"(%5, %10) {fastmath = #arith.fastmath<none>} : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32> loc("tests/in/multiple_of.pk":16:13)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/multiple_of.pk":16:5)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/multiple_of.pk":16:5)
    "stable_mosaic.tpu.vector_store"(%11, %arg3, %12, %13) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/multiple_of.pk":16:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/multiple_of.pk":7:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<64x128xf32, #tpu.memory_space<vmem>>, memref<4xi32, #tpu.memory_space<smem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "rows", tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 64, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 4>}, {transform_indices = @transform_2, window_bounds = array<i64: 8, 128>}]} : () -> () loc("tests/in/multiple_of.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/multiple_of.pk":7:1)
    "stable_mosaic.func.return"(%0, %0) : (i32, i32) -> () loc("tests/in/multiple_of.pk":7:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/multiple_of.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/multiple_of.pk":7:1)
    "stable_mosaic.func.return"(%0) : (i32) -> () loc("tests/in/multiple_of.pk":7:1)
  }) {function_type = (i32) -> i32, sym_name = "transform_1"} : () -> () loc("tests/in/multiple_of.pk":7:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/multiple_of.pk":12:47)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/multiple_of.pk":7:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/multiple_of.pk":7:1)
}
