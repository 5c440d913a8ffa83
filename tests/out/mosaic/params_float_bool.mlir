// kernel scaled_mask
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<128x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/params_float_bool.pk":12:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/params_float_bool.pk":12:13)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x128xf32> loc("tests/in/params_float_bool.pk":12:13)
    %3 = "stable_mosaic.arith.constant"() {value = 1.250000e-01 : f32} : () -> f32 loc("tests/in/params_float_bool.pk":12:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<128x128xf32> loc("tests/in/params_float_bool.pk":12:21)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("tests/in/params_float_bool.pk":12:13)
    %6 = "stable_mosaic.tpu.iota"() {dimensions = array<i32: 0>} : () -> vector<128x128xi32> loc("tests/in/params_float_bool.pk":14:17)
    %7 = "stable_mosaic.tpu.iota"() {dimensions = array<i32: 1>} : () -> vector<128x128xi32> loc("tests/in/params_float_bool.pk":15:17)
    %8 = "stable_mosaic.arith.cmpi"(%7, %6) {predicate = 3 : i64} : (vector<128x128xi32>, vector<128x128xi32>) -> vector<128x128xi1> loc("tests/in/params_float_bool.pk":16:23)
    %9 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("tests/in/params_float_bool.pk":16:34)
    %10 = "stable_mosaic.vector.broadcast"(%9) : (f32) -> vector<128x128xf32> loc("tests/in/params_float_bool.pk":16:34)
    %11 = "stable_mosaic.arith.select"(%8, %5, %10) : (vector<128x128xi1>, vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("tests/in/params_float_bool.pk":16:17)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/params_float_bool.pk":16:9)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/params_float_bool.pk":16:9)
    "stable_mosaic.tpu.vector_store"(%11, %arg2, %12, %13) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/params_float_bool.pk":16:9)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/params_float_bool.pk":5:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "scaled_mask", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 128>}]} : () -> () loc("tests/in/params_float_bool.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/params_float_bool.pk":8:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/params_float_bool.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/params_float_bool.pk":5:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/params_float_bool.pk":9:45)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/params_float_bool.pk":5:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/params_float_bool.pk":5:1)
}
