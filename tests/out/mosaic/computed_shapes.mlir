// kernel computed_shapes
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<1x8x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<1x8x256xf32, #tpu.memory_space<vmem>>, %arg4: memref<8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":10:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":10:13)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/computed_shapes.pk":10:13)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":10:5)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":10:5)
    "stable_mosaic.tpu.vector_store"(%2, %arg4, %3, %4) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/computed_shapes.pk":10:5)
    %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:13)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:13)
    %8 = "stable_mosaic.vector.load"(%arg1, %5, %6, %7) : (memref<1x8x256xf32, #tpu.memory_space<vmem>>, index, index, index) -> vector<1x8x256xf32> loc("tests/in/computed_shapes.pk":11:13)
    %9 = "stable_mosaic.vector.shape_cast"(%8) : (vector<1x8x256xf32>) -> vector<8x256xf32> loc("tests/in/computed_shapes.pk":11:13)
    %10 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:25)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:25)
    %12 = "stable_mosaic.vector.load"(%arg4, %10, %11) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/computed_shapes.pk":11:25)
    %13 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<8xf32>} : () -> vector<8xf32> loc("tests/in/computed_shapes.pk":11:21)
    %14 = "stable_mosaic.vector.multi_reduction"(%12, %13) {kind = #vector.kind<add>, reduction_dims = array<i64: 1>} : (vector<8x128xf32>, vector<8xf32>) -> vector<8xf32> loc("tests/in/computed_shapes.pk":11:21)
    %15 = "stable_mosaic.vector.shape_cast"(%14) : (vector<8xf32>) -> vector<8x1xf32> loc("tests/in/computed_shapes.pk":11:21)
    %16 = "stable_mosaic.vector.broadcast"(%15) : (vector<8x1xf32>) -> vector<8x256xf32> loc("tests/in/computed_shapes.pk":11:21)
    %17 = "stable_mosaic.arith.addf"(%9, %16) {fastmath = #arith.fastmath<none>} : (vector<8x256xf32>, vector<8x256xf32>) -> vector<8x256xf32> loc("tests/in/computed_shapes.pk":11:13)
    %18 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:5)
    %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:5)
    %20 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/computed_shapes.pk":11:5)
    %21 = "stable_mosaic.vector.shape_cast"(%17) : (vector<8x256xf32>) -> vector<1x8x256xf32> loc("tests/in/computed_shapes.pk":11:5)
    "stable_mosaic.tpu.vector_store"(%21, %arg3, %18, %19, %20) {add = false, operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>} : (vector<1x8x256xf32>, memref<1x8x256xf32, #tpu.memory_space<vmem>>, index, index, index) -> () loc("tests/in/computed_shapes.pk":11:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/computed_shapes.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<1x8x256xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<1x8x256xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 1 : i64, sym_name = "computed_shapes", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 8, 256>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 1, 8, 256>}]} : () -> () loc("tests/in/computed_shapes.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/computed_shapes.pk":4:78)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/computed_shapes.pk":4:81)
    "stable_mosaic.func.return"(%arg0, %0, %1) : (i32, i32, i32) -> () loc("tests/in/computed_shapes.pk":1:1)
  }) {function_type = (i32) -> (i32, i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/computed_shapes.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/computed_shapes.pk":1:1)
    "stable_mosaic.func.return"(%0, %0) : (i32, i32) -> () loc("tests/in/computed_shapes.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/computed_shapes.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/computed_shapes.pk":6:79)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/computed_shapes.pk":6:82)
    "stable_mosaic.func.return"(%arg0, %0, %1) : (i32, i32, i32) -> () loc("tests/in/computed_shapes.pk":1:1)
  }) {function_type = (i32) -> (i32, i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/computed_shapes.pk":1:1)
}
