// kernel ragged_sum
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<1xi32, #tpu.memory_space<smem>>, %arg3: memref<2xi32, #tpu.memory_space<smem>>, %arg4: memref<32x256xf32, #tpu.memory_space<vmem>>, %arg5: memref<32x128xf32, #tpu.memory_space<vmem>>, %arg6: memref<32x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":13:13)
    %1 = "stable_mosaic.arith.cmpi"(%arg1, %0) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/dynamic_grid.pk":13:8)
    "stable_mosaic.scf.if"(%1) ({
      %2 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("tests/in/dynamic_grid.pk":14:30)
      %3 = "stable_mosaic.vector.broadcast"(%2) : (f32) -> vector<32x128xf32> loc("tests/in/dynamic_grid.pk":14:30)
      %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":14:9)
      %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":14:9)
      "stable_mosaic.tpu.vector_store"(%3, %arg6, %4, %5) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<32x128xf32>, memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/dynamic_grid.pk":14:9)
      "stable_mosaic.scf.yield"() : () -> () loc("tests/in/dynamic_grid.pk":13:5)
    }, {
    }) : (i1) -> () loc("tests/in/dynamic_grid.pk":13:5)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:20)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:20)
    %8 = "stable_mosaic.vector.load"(%arg4, %6, %7) : (memref<32x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<32x256xf32> loc("tests/in/dynamic_grid.pk":16:20)
    %9 = "stable_mosaic.arith.constant"() {value = dense<0.000000e+00> : vector<32xf32>} : () -> vector<32xf32> loc("tests/in/dynamic_grid.pk":16:16)
    %10 = "stable_mosaic.vector.multi_reduction"(%8, %9) {kind = #vector.kind<add>, reduction_dims = array<i64: 1>} : (vector<32x256xf32>, vector<32xf32>) -> vector<32xf32> loc("tests/in/dynamic_grid.pk":16:16)
    %11 = "stable_mosaic.vector.shape_cast"(%10) : (vector<32xf32>) -> vector<32x1xf32> loc("tests/in/dynamic_grid.pk":16:16)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:5)
    %13 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:5)
    %14 = "stable_mosaic.vector.load"(%arg6, %12, %13) : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<32x128xf32> loc("tests/in/dynamic_grid.pk":16:5)
    %15 = "stable_mosaic.vector.broadcast"(%11) : (vector<32x1xf32>) -> vector<32x128xf32> loc("tests/in/dynamic_grid.pk":16:16)
    %16 = "stable_mosaic.arith.addf"(%14, %15) {fastmath = #arith.fastmath<none>} : (vector<32x128xf32>, vector<32x128xf32>) -> vector<32x128xf32> loc("tests/in/dynamic_grid.pk":16:5)
    %17 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:5)
    %18 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":16:5)
    "stable_mosaic.tpu.vector_store"(%16, %arg6, %17, %18) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<32x128xf32>, memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/dynamic_grid.pk":16:5)
    %19 = "stable_mosaic.arith.constant"() {value = 1 : index} : () -> index loc("tests/in/dynamic_grid.pk":17:13)
    %20 = "stable_mosaic.memref.load"(%arg3, %19) : (memref<2xi32, #tpu.memory_space<smem>>, index) -> i32 loc("tests/in/dynamic_grid.pk":17:13)
    %21 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":17:31)
    %22 = "stable_mosaic.arith.subi"(%20, %21) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/dynamic_grid.pk":17:13)
    %23 = "stable_mosaic.arith.cmpi"(%arg1, %22) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/dynamic_grid.pk":17:8)
    "stable_mosaic.scf.if"(%23) ({
      %24 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":18:17)
      %25 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":18:17)
      %26 = "stable_mosaic.vector.load"(%arg6, %24, %25) : (memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<32x128xf32> loc("tests/in/dynamic_grid.pk":18:17)
      %27 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":18:9)
      %28 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":18:9)
      "stable_mosaic.tpu.vector_store"(%26, %arg5, %27, %28) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<32x128xf32>, memref<32x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/dynamic_grid.pk":18:9)
      "stable_mosaic.scf.yield"() : () -> () loc("tests/in/dynamic_grid.pk":17:5)
    }, {
    }) : (i1) -> () loc("tests/in/dynamic_grid.pk":17:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/dynamic_grid.pk":4:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], function_type = (i32, i32, memref<1xi32, #tpu.memory_space<smem>>, memref<2xi32, #tpu.memory_space<smem>>, memref<32x256xf32, #tpu.memory_space<vmem>>, memref<32x128xf32, #tpu.memory_space<vmem>>, memref<32x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: -9223372036854775808, -9223372036854775808>, scalar_prefetch = 2 : i64, scratch_operands = 1 : i64, sym_name = "ragged_sum", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 32, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 32, 128>}]} : () -> () loc("tests/in/dynamic_grid.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<1xi32, #tpu.memory_space<smem>>, %arg3: memref<2xi32, #tpu.memory_space<smem>>):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> () loc("tests/in/dynamic_grid.pk":4:1)
  }) {function_type = (i32, i32, memref<1xi32, #tpu.memory_space<smem>>, memref<2xi32, #tpu.memory_space<smem>>) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/dynamic_grid.pk":4:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: i32, %arg2: memref<1xi32, #tpu.memory_space<smem>>, %arg3: memref<2xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":8:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/dynamic_grid.pk":4:1)
  }) {function_type = (i32, i32, memref<1xi32, #tpu.memory_space<smem>>, memref<2xi32, #tpu.memory_space<smem>>) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/dynamic_grid.pk":4:1)
}
// kernel reverse
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<8x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":29:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":29:13)
    %2 = "stable_mosaic.vector.load"(%arg2, %0, %1) : (memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<8x128xf32> loc("tests/in/dynamic_grid.pk":29:13)
    %3 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":29:5)
    %4 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":29:5)
    "stable_mosaic.tpu.vector_store"(%2, %arg3, %3, %4) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/dynamic_grid.pk":29:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/dynamic_grid.pk":22:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], function_type = (i32, memref<1xi32, #tpu.memory_space<smem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: -9223372036854775808>, scalar_prefetch = 1 : i64, scratch_operands = 0 : i64, sym_name = "reverse", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} : () -> () loc("tests/in/dynamic_grid.pk":22:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/dynamic_grid.pk":24:61)
    %1 = "stable_mosaic.memref.load"(%arg1, %0) : (memref<1xi32, #tpu.memory_space<smem>>, index) -> i32 loc("tests/in/dynamic_grid.pk":24:61)
    %2 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":24:79)
    %3 = "stable_mosaic.arith.subi"(%1, %2) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/dynamic_grid.pk":24:61)
    %4 = "stable_mosaic.arith.subi"(%3, %arg0) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/dynamic_grid.pk":24:61)
    %5 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":24:86)
    "stable_mosaic.func.return"(%4, %5) : (i32, i32) -> () loc("tests/in/dynamic_grid.pk":22:1)
  }) {function_type = (i32, memref<1xi32, #tpu.memory_space<smem>>) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/dynamic_grid.pk":22:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/dynamic_grid.pk":25:49)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/dynamic_grid.pk":22:1)
  }) {function_type = (i32, memref<1xi32, #tpu.memory_space<smem>>) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/dynamic_grid.pk":22:1)
}
