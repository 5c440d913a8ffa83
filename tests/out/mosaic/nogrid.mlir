// kernel nogrid
module attributes {stable_mosaic.version = 11 : i64} {
  "stable_mosaic.func.func"() ({
  ^bb0(%arg0: memref<64x256xf32, #tpu.memory_space<vmem>>, %arg1: memref<64x256xf32, #tpu.memory_space<vmem>>):
    %0 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/nogrid.pk":7:13)
    %1 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/nogrid.pk":7:13)
    %2 = "stable_mosaic.vector.load"(%arg0, %0, %1) : (memref<64x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<64x256xf32> loc("lowering/tests/mosaic_ops/nogrid.pk":7:13)
    %3 = "stable_mosaic.arith.constant"() {value = 2.000000e+00 : f32} : () -> f32 loc("lowering/tests/mosaic_ops/nogrid.pk":7:21)
    %4 = "stable_mosaic.vector.broadcast"(%3) : (f32) -> vector<64x256xf32> loc("lowering/tests/mosaic_ops/nogrid.pk":7:21)
    %5 = "stable_mosaic.arith.mulf"(%2, %4) {fastmath = #arith.fastmath<none>} : (vector<64x256xf32>, vector<64x256xf32>) -> vector<64x256xf32> loc("lowering/tests/mosaic_ops/nogrid.pk":7:13)
    %6 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/nogrid.pk":7:5)
    %7 = "stable_mosaic.arith.constant"() {value = 0 : index} : () -> index loc("lowering/tests/mosaic_ops/nogrid.pk":7:5)
    "stable_mosaic.tpu.vector_store"(%5, %arg1, %6, %7) {add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>} : (vector<64x256xf32>, memref<64x256xf32, #tpu.memory_space<vmem>>, index, index) -> () loc("lowering/tests/mosaic_ops/nogrid.pk":7:5)
    "stable_mosaic.func.return"() : () -> () loc("lowering/tests/mosaic_ops/nogrid.pk":3:1)
  }) {dimension_semantics = [], function_type = (memref<64x256xf32, #tpu.memory_space<vmem>>, memref<64x256xf32, #tpu.memory_space<vmem>>) -> (), scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "nogrid", tpu.core_type = #tpu.core_type<tc>} : () -> () loc("lowering/tests/mosaic_ops/nogrid.pk":3:1)
}
