// kernel scaled_rows
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<128x512xf32, #tpu.memory_space<vmem>>, %arg2: memref<128x512xf32, #tpu.memory_space<vmem>>, %arg3: memref<128x512xf32, #tpu.memory_space<vmem>>, %arg4: memref<8x512xf32, #tpu.memory_space<vmem>>, %arg5: memref<8x512xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":15:24)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":15:24)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<128x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x512xf32> loc("tests/in/conditional_operands.pk":15:24)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":15:32)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":15:32)
    %5 = "stable_mosaic.vector.load"(%arg2, %3, %4) : (memref<128x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<128x512xf32> loc("tests/in/conditional_operands.pk":15:32)
    %6 = "stable_mosaic.arith.mulf"(%2, %5) {fastmath = #arith.fastmath<none>} : (vector<128x512xf32>, vector<128x512xf32>) -> vector<128x512xf32> loc("tests/in/conditional_operands.pk":15:24)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":16:5)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":16:5)
    "stable_mosaic.tpu.vector_store"(%6, %arg3, %7, %8) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<128x512xf32>, memref<128x512xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/conditional_operands.pk":16:5)
    %9 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":18:17)
    %10 = "stable_mosaic.arith.cmpi"(%arg0, %9) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/conditional_operands.pk":18:12)
    "stable_mosaic.scf.if"(%10) ({
      %11 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("tests/in/conditional_operands.pk":19:23)
      %12 = "stable_mosaic.vector.broadcast"(%11) : (f32) -> vector<8x512xf32> loc("tests/in/conditional_operands.pk":19:23)
      %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":19:13)
      %14 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":19:13)
      "stable_mosaic.tpu.vector_store"(%12, %arg5, %13, %14) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x512xf32>, memref<8x512xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/conditional_operands.pk":19:13)
      "stable_mosaic.scf.yield"() : () -> () loc("tests/in/conditional_operands.pk":18:9)
    }, {
    }) : (i1) -> () loc("tests/in/conditional_operands.pk":18:9)
    %15 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<512xf32>} : () -> vector<512xf32> loc("tests/in/conditional_operands.pk":21:30)
    %16 = "stable_mosaic.vector.multi_reduction"(%6, %15) {kind = #vector.kind<add>, reduction_dims = array<i64: 0>} : (vector<128x512xf32>, vector<512xf32>) -> vector<512xf32> loc("tests/in/conditional_operands.pk":21:30)
    %17 = "stable_mosaic.vector.shape_cast"(%16) : (vector<512xf32>) -> vector<1x512xf32> loc("tests/in/conditional_operands.pk":21:30)
    %18 = "stable_mosaic.vector.broadcast"(%17) : (vector<1x512xf32>) -> vector<8x512xf32> loc("tests/in/conditional_operands.pk":21:20)
    %19 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":21:9)
    %20 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":21:9)
    %21 = "stable_mosaic.vector.load"(%arg5, %19, %20) : (memref<8x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x512xf32> loc("tests/in/conditional_operands.pk":21:9)
    %22 = "stable_mosaic.arith.addf"(%21, %18) {fastmath = #arith.fastmath<none>} : (vector<8x512xf32>, vector<8x512xf32>) -> vector<8x512xf32> loc("tests/in/conditional_operands.pk":21:9)
    %23 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":21:9)
    %24 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":21:9)
    "stable_mosaic.tpu.vector_store"(%22, %arg5, %23, %24) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x512xf32>, memref<8x512xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/conditional_operands.pk":21:9)
    %25 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":22:17)
    %26 = "stable_mosaic.arith.cmpi"(%arg0, %25) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/conditional_operands.pk":22:12)
    "stable_mosaic.scf.if"(%26) ({
      %27 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":23:21)
      %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":23:21)
      %29 = "stable_mosaic.vector.load"(%arg5, %27, %28) : (memref<8x512xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x512xf32> loc("tests/in/conditional_operands.pk":23:21)
      %30 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":23:13)
      %31 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/conditional_operands.pk":23:13)
      "stable_mosaic.tpu.vector_store"(%29, %arg4, %30, %31) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x512xf32>, memref<8x512xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/conditional_operands.pk":23:13)
      "stable_mosaic.scf.yield"() : () -> () loc("tests/in/conditional_operands.pk":22:9)
    }, {
    }) : (i1) -> () loc("tests/in/conditional_operands.pk":22:9)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/conditional_operands.pk":1:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<128x512xf32, #tpu.memory_space<vmem>>, memref<128x512xf32, #tpu.memory_space<vmem>>, memref<128x512xf32, #tpu.memory_space<vmem>>, memref<8x512xf32, #tpu.memory_space<vmem>>, memref<8x512xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 1 : i64, sym_name = "scaled_rows", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 512>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 512>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 512>}, {transform_indices = @transform_3, window_bounds = array<i64: 8, 512>}]} : () -> () loc("tests/in/conditional_operands.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":5:39)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/conditional_operands.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/conditional_operands.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":7:45)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/conditional_operands.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/conditional_operands.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":9:39)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/conditional_operands.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_2"} : () -> () loc("tests/in/conditional_operands.pk":1:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":10:35)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/conditional_operands.pk":10:38)
    "stable_mosaic.func.return"(%0, %1) : (i32, i32) -> () loc("tests/in/conditional_operands.pk":1:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_3"} : () -> () loc("tests/in/conditional_operands.pk":1:1)
}
