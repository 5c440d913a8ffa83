// kernel by_dtype
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<16x128xbf16, #tpu.memory_space<vmem>>, %arg2: memref<16x128xbf16, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dtype_queries.pk":14:17)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dtype_queries.pk":14:17)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xbf16> loc("tests/in/dtype_queries.pk":14:17)
    %3 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : bf16} : () -> bf16 loc("tests/in/dtype_queries.pk":14:25)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (bf16) -> vector<16x128xbf16> loc("tests/in/dtype_queries.pk":14:25)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<16x128xbf16>, vector<16x128xbf16>) -> vector<16x128xbf16> loc("tests/in/dtype_queries.pk":14:17)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dtype_queries.pk":14:9)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dtype_queries.pk":14:9)
    "stable_mosaic.tpu.vector_store"(%5, %arg2, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xbf16>, memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/dtype_queries.pk":14:9)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/dtype_queries.pk":5:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<16x128xbf16, #tpu.memory_space<vmem>>, memref<16x128xbf16, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 16>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "by_dtype", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} : () -> () loc("tests/in/dtype_queries.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dtype_queries.pk":9:53)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/dtype_queries.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/dtype_queries.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dtype_queries.pk":10:54)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/dtype_queries.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/dtype_queries.pk":5:1)
}
