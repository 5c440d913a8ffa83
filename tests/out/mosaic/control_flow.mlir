// kernel row_loop
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<16x256xf32, #tpu.memory_space<vmem>>, %arg2: memref<16x128xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("tests/in/control_flow.pk":22:35)
    %1 = "stable_mosaic.vector.broadcast"(%0) : (f32) -> vector<16x128xf32> loc("tests/in/control_flow.pk":22:35)
    %2 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":23:14)
    %3 = "stable_mosaic.arith.constant"() {value = 2 : i32} : () -> i32 loc("tests/in/control_flow.pk":23:17)
    %4 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/control_flow.pk":23:5)
    %5 = "stable_mosaic.scf.for"(%2, %3, %4, %1) ({
    ^bb0(%arg3: i32, %arg4: vector<16x128xf32>):
      %6 = "stable_mosaic.arith.constant"() {value = 128 : i32} : () -> i32 loc("tests/in/control_flow.pk":24:30)
      %7 = "stable_mosaic.arith.muli"(%arg3, %6) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/control_flow.pk":24:26)
      %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":24:18)
      %9 = "stable_mosaic.arith.index_cast"(%7) : (i32) -> index loc("tests/in/control_flow.pk":24:18)
      %10 = "stable_mosaic.vector.load"(%arg1, %8, %9) : (memref<16x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xf32> loc("tests/in/control_flow.pk":24:18)
      %11 = "stable_mosaic.arith.addf"(%arg4, %10) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":24:9)
      "stable_mosaic.scf.yield"(%11) : (vector<16x128xf32>) -> () loc("tests/in/control_flow.pk":23:5)
    }) : (i32, i32, i32, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":23:5)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":26:17)
    %13 = "stable_mosaic.scf.while"(%12) ({
    ^bb0(%arg5: i32):
      %14 = "stable_mosaic.arith.constant"() {value = 3 : i32} : () -> i32 loc("tests/in/control_flow.pk":27:15)
      %15 = "stable_mosaic.arith.cmpi"(%arg5, %14) {predicate = 2 : i64} : (i32, i32) -> i1 loc("tests/in/control_flow.pk":27:11)
      "stable_mosaic.scf.condition"(%15, %arg5) : (i1, i32) -> () loc("tests/in/control_flow.pk":27:5)
    }, {
    ^bb0(%arg6: i32):
      %16 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/control_flow.pk":28:17)
      %17 = "stable_mosaic.arith.addi"(%arg6, %16) {overflowFlags = #arith.overflow<none>} : (i32, i32) -> i32 loc("tests/in/control_flow.pk":28:13)
      "stable_mosaic.scf.yield"(%17) : (i32) -> () loc("tests/in/control_flow.pk":27:5)
    }) : (i32) -> i32 loc("tests/in/control_flow.pk":27:5)
    %18 = "stable_mosaic.arith.constant"() {value = 3 : i32} : () -> i32 loc("tests/in/control_flow.pk":30:25)
    %19 = "stable_mosaic.arith.cmpi"(%13, %18) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/control_flow.pk":30:20)
    %20 = "stable_mosaic.scf.if"(%19) ({
      %21 = "stable_mosaic.arith.constant"() {value = 1.000000e+00 : f32} : () -> f32 loc("tests/in/control_flow.pk":30:27)
      "stable_mosaic.scf.yield"(%21) : (f32) -> () loc("tests/in/control_flow.pk":30:17)
    }, {
      %22 = "stable_mosaic.arith.constant"() {value = 0.000000e+00 : f32} : () -> f32 loc("tests/in/control_flow.pk":30:40)
      "stable_mosaic.scf.yield"(%22) : (f32) -> () loc("tests/in/control_flow.pk":30:17)
    }) : (i1) -> f32 loc("tests/in/control_flow.pk":30:17)
    %23 = "stable_mosaic.tpu.iota"() {dimensions = array<i32: 1>} : () -> vector<16x128xi32> loc("tests/in/control_flow.pk":31:16)
    %24 = "stable_mosaic.arith.constant"() {value = 2 : i32} : () -> i32 loc("tests/in/control_flow.pk":32:31)
    %25 = "stable_mosaic.vector.broadcast"(%24) : (i32) -> vector<16x128xi32> loc("tests/in/control_flow.pk":32:31)
    %26 = "stable_mosaic.arith.remsi"(%23, %25) : (vector<16x128xi32>, vector<16x128xi32>) -> vector<16x128xi32> loc("tests/in/control_flow.pk":32:24)
    %27 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":32:36)
    %28 = "stable_mosaic.vector.broadcast"(%27) : (i32) -> vector<16x128xi32> loc("tests/in/control_flow.pk":32:36)
    %29 = "stable_mosaic.arith.cmpi"(%26, %28) {predicate = 0 : i64} : (vector<16x128xi32>, vector<16x128xi32>) -> vector<16x128xi1> loc("tests/in/control_flow.pk":32:24)
    %30 = "stable_mosaic.vector.broadcast"(%20) : (f32) -> vector<16x128xf32> loc("tests/in/control_flow.pk":32:47)
    %31 = "stable_mosaic.arith.addf"(%5, %30) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":32:39)
    %32 = "stable_mosaic.arith.negf"(%5) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":32:54)
    %33 = "stable_mosaic.arith.select"(%29, %31, %32) : (vector<16x128xi1>, vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":32:18)
    %34 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":7:13)
    %35 = "stable_mosaic.arith.cmpi"(%arg0, %34) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/control_flow.pk":7:8)
    %36 = "stable_mosaic.scf.if"(%35) ({
      "stable_mosaic.scf.yield"(%33) : (vector<16x128xf32>) -> () loc("tests/in/control_flow.pk":7:5)
    }, {
      %37 = "stable_mosaic.arith.constant"() {value = 1 : i32} : () -> i32 loc("tests/in/control_flow.pk":9:20)
      %38 = "stable_mosaic.arith.cmpi"(%arg0, %37) {predicate = 0 : i64} : (i32, i32) -> i1 loc("tests/in/control_flow.pk":9:15)
      %39 = "stable_mosaic.scf.if"(%38) ({
        %40 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("tests/in/control_flow.pk":10:13)
        %41 = "stable_mosaic.vector.broadcast"(%40) : (f32) -> vector<16x128xf32> loc("tests/in/control_flow.pk":10:13)
        %42 = "stable_mosaic.arith.mulf"(%33, %41) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":10:9)
        "stable_mosaic.scf.yield"(%42) : (vector<16x128xf32>) -> () loc("tests/in/control_flow.pk":9:12)
      }, {
        %43 = "stable_mosaic.arith.constant"() {value = 4.000000e+00 : f32} : () -> f32 loc("tests/in/control_flow.pk":12:13)
        %44 = "stable_mosaic.vector.broadcast"(%43) : (f32) -> vector<16x128xf32> loc("tests/in/control_flow.pk":12:13)
        %45 = "stable_mosaic.arith.mulf"(%33, %44) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":12:9)
        "stable_mosaic.scf.yield"(%45) : (vector<16x128xf32>) -> () loc("tests/in/control_flow.pk":9:12)
      }) : (i1) -> vector<16x128xf32> loc("tests/in/control_flow.pk":9:12)
      "stable_mosaic.scf.yield"(%39) : (vector<16x128xf32>) -> () loc("tests/in/control_flow.pk":7:5)
    }) : (i1) -> vector<16x128xf32> loc("tests/in/control_flow.pk":7:5)
    %46 = "stable_mosaic.arith.constant"() {value = -1.000000e+02 : f32} : () -> f32 loc("std/math.pk":19:16)
    %47 = "stable_mosaic.vector.broadcast"(%46) : (f32) -> vector<16x128xf32> loc("std/math.pk":19:16)
    %48 = "stable_mosaic.arith.maximumf"(%36, %47) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("std/math.pk":19:9)
    %49 = "stable_mosaic.arith.constant"() {value = 1.000000e+02 : f32} : () -> f32 loc("std/math.pk":19:21)
    %50 = "stable_mosaic.vector.broadcast"(%49) : (f32) -> vector<16x128xf32> loc("std/math.pk":19:21)
    %51 = "stable_mosaic.arith.minimumf"(%48, %50) {fastmath = #arith.fastmath<none>} : (vector<16x128xf32>, vector<16x128xf32>) -> vector<16x128xf32> loc("std/math.pk":19:5)
    %52 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":33:5)
    %53 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":33:5)
    "stable_mosaic.tpu.vector_store"(%51, %arg2, %52, %53) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/control_flow.pk":33:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/control_flow.pk":16:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<16x256xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<vmem>>) -> (), iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "row_loop", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} : () -> () loc("tests/in/control_flow.pk":16:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":18:39)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/control_flow.pk":16:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/control_flow.pk":16:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":19:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/control_flow.pk":16:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/control_flow.pk":16:1)
}
// kernel half_round_trip
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32, %arg1: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<16x128xbf16, #tpu.memory_space<vmem>>, %arg4: memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":49:22)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":49:22)
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %1) : (memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xf32> loc("tests/in/control_flow.pk":49:22)
    %3 = "stable_mosaic.arith.truncf"(%2) : (vector<16x128xf32>) -> vector<16x128xbf16> loc("tests/in/control_flow.pk":49:22)
    %4 = "stable_mosaic.arith.addf"(%3, %3) {fastmath = #arith.fastmath<none>} : (vector<16x128xbf16>, vector<16x128xbf16>) -> vector<16x128xbf16> loc("tests/in/control_flow.pk":40:5)
    %5 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":49:5)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":49:5)
    "stable_mosaic.tpu.vector_store"(%4, %arg3, %5, %6) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xbf16>, memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/control_flow.pk":49:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":50:13)
    %8 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":50:13)
    %9 = "stable_mosaic.vector.load"(%arg3, %7, %8) : (memref<16x128xbf16, #tpu.memory_space<vmem>>, index, index) -> vector<16x128xbf16> loc("tests/in/control_flow.pk":50:13)
    %10 = "stable_mosaic.arith.extf"(%9) : (vector<16x128xbf16>) -> vector<16x128xf32> loc("tests/in/control_flow.pk":50:13)
    %11 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":50:5)
    %12 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("tests/in/control_flow.pk":50:5)
    "stable_mosaic.tpu.vector_store"(%10, %arg2, %11, %12) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("tests/in/control_flow.pk":50:5)
    "stable_mosaic.func.return"() : () -> () loc("tests/in/control_flow.pk":43:1)
  }) {dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, memref<16x128xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<vmem>>, memref<16x128xbf16, #tpu.memory_space<vmem>>, memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> (), iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 2 : i64, sym_name = "half_round_trip", tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} : () -> () loc("tests/in/control_flow.pk":43:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":44:43)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/control_flow.pk":43:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_0"} : () -> () loc("tests/in/control_flow.pk":43:1)
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : i32} : () -> i32 loc("tests/in/control_flow.pk":45:44)
    "stable_mosaic.func.return"(%arg0, %0) : (i32, i32) -> () loc("tests/in/control_flow.pk":43:1)
  }) {function_type = (i32) -> (i32, i32), sym_name = "transform_1"} : () -> () loc("tests/in/control_flow.pk":43:1)
}
