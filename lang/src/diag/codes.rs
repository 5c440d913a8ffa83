//! Every front-end diagnostic code with its long explanation.
//!
//! invariant: codes are unique and never reused for a different rule; a
//! retired code keeps its entry.

use super::Explanation;

macro_rules! codes {
    ($( $name:ident = $code:literal $title:literal {
        what: $what:literal,
        why: $why:literal,
        example: $ex:literal $(,)?
    } )*) => {
        $( pub static $name: Explanation = Explanation {
            code: $code, title: $title, what: $what, why: $why, example: $ex,
        }; )*
        /// All front-end codes, in order.
        pub static ALL: &[&Explanation] = &[ $( &$name ),* ];
    };
}

codes! {
    INVALID_CHARACTER = "PK0001" "invalid-character" {
        what: "The source contains characters that are not part of any pk token.",
        why: "pk source is made of identifiers, numbers, operators and comments; anything else (stray symbols, binary data) cannot be read.",
        example: "let x = a @ b;   // error: `@` is not an operator\nlet x = dot(a, b);",
    }
    UNTERMINATED_COMMENT = "PK0002" "unterminated-comment" {
        what: "A block comment `/* ...` is never closed.",
        why: "Block comments nest, so each `/*` needs its own `*/`; otherwise the rest of the file would silently become a comment.",
        example: "/* outer /* inner */   // error: outer is still open\n/* outer /* inner */ */",
    }
    UNEXPECTED_TOKEN = "PK0003" "unexpected-token" {
        what: "The parser found a token where the grammar does not allow it.",
        why: "The label lists what the grammar accepts at that point.",
        example: "let x = 1   // error: missing `;`\nlet x = 1;",
    }
    UNEXPECTED_EOF = "PK0004" "unexpected-end-of-file" {
        what: "The file ends in the middle of a declaration.",
        why: "Usually a `}` or `)` is missing.",
        example: "kernel k() {   // error: body never closed\nkernel k() { }",
    }
    NUMBER_OUT_OF_RANGE = "PK0005" "number-out-of-range" {
        what: "A numeric literal is malformed or does not fit in 64 bits.",
        why: "Literals are read as 64-bit values before they are given a TPU type (at most 32 bits).",
        example: "let x = 99999999999999999999;   // error\nlet x = 1e20;",
    }
    NESTING_TOO_DEEP = "PK0006" "nesting-too-deep" {
        what: "Brackets or prefix operators nest more than 200 levels deep.",
        why: "The limit keeps every compiler pass bounded; no real kernel comes near it.",
        example: "let x = ((((((...))))));   // error past 200 levels\nlet t = ...; let x = f(t);",
    }
    NOT_UTF8 = "PK0007" "not-utf8" {
        what: "The source file, or a module it `use`s, is not valid UTF-8 text (a byte-order mark at its start is fine).",
        why: "pk reads source as UTF-8; a binary file was probably passed by mistake.",
        example: "pkc check kernel.wasm   // error\npkc check kernel.pk",
    }
    FILE_TOO_LARGE = "PK0008" "file-too-large" {
        what: "A source file, or a module it `use`s, is larger than 16 MiB.",
        why: "Kernel sources are small; the limit keeps a wrong argument from exhausting memory. The size is checked before the file is read.",
        example: "pkc check data.npy   // error\npkc check kernel.pk",
    }
    IO_ERROR = "PK0009" "unreadable-file" {
        what: "A source file or module could not be read.",
        why: "The path does not exist or is not readable, or it names a device such as `/dev/zero` (which never ends) or a directory; `pkc aot` also refuses a StableHLO module over 1 GiB.",
        example: "pkc check missing.pk   // error: no such file",
    }

    UNKNOWN_NAME = "PK0101" "unknown-name" {
        what: "A name is used that is not declared in scope.",
        why: "Every name must be a local, a parameter, an operand, a grid index, a constant, a function or a builtin.",
        example: "let y = exp(xx);   // error: `xx` is unknown\nlet y = exp(x);",
    }
    DUPLICATE = "PK0102" "duplicate-definition" {
        what: "Two declarations in the same scope have the same name.",
        why: "Operands, parameters, grid indices, scratch buffers and items share one namespace per kernel; a second declaration would shadow the first silently.",
        example: "kernel k<M>(x: f32[M], x: f32[M])   // error\nkernel k<M>(x: f32[M], y: f32[M])",
    }
    UNKNOWN_MODULE = "PK0103" "unknown-module" {
        what: "A `use` names a module that does not exist.",
        why: "`use std::NAME` loads `std/NAME.pk`; `use NAME` loads `NAME.pk` next to the importing file.",
        example: "use std::maths;   // error\nuse std::math;",
    }
    CYCLE = "PK0104" "cycle" {
        what: "A function calls itself (directly or through others), or constants are defined in terms of each other.",
        why: "pk functions are inlined into kernels, so recursion has no end; constant cycles have no value.",
        example: "fn f(x) { f(x) }   // error",
    }
    UNKNOWN_DTYPE = "PK0105" "unknown-dtype" {
        what: "A type name is not a pk dtype.",
        why: "pk's dtypes are f32, bf16, i32, i16, i8, u8, bool, f8e4m3fn and f8e5m2 (and dtype parameters).",
        example: "x: float[M]   // error\nx: f32[M]",
    }
    WRONG_KIND = "PK0106" "wrong-kind-of-name" {
        what: "A name refers to something of the wrong kind here: a ref used as a value, a dtype used as a number, a function used as a variable.",
        why: "Refs are memory; read them with `x[..]`. Dtypes and values live in different places of the grammar.",
        example: "let y = x + 1.0;   // error: `x` is a ref\nlet y = x[..] + 1.0;",
    }
    PRIVATE_IMPORT = "PK0107" "unknown-import" {
        what: "A `use` names an item that the module does not define.",
        why: "Only functions and constants of a module can be imported.",
        example: "use std::math::{gelu2};   // error\nuse std::math::{gelu};",
    }

    TYPE_MISMATCH = "PK0201" "dtype-mismatch" {
        what: "Two values of different dtypes meet in one operation.",
        why: "pk never converts between dtypes implicitly (literals excepted): a silent bf16 -> f32 promotion changes both numerics and VMEM use on the TPU.",
        example: "let z = x_bf16 + y_f32;   // error\nlet z = (x_bf16 as f32) + y_f32;",
    }
    SHAPE_MISMATCH = "PK0202" "shape-mismatch" {
        what: "Two shapes cannot be broadcast together, or a value has the wrong shape for where it goes.",
        why: "Broadcasting follows numpy: aligned from the right, each pair of dims equal or one of them 1.",
        example: "x[..] + y[..]   // [8,128] with [8,256]: error",
    }
    ARITY = "PK0203" "wrong-arguments" {
        what: "A call has the wrong number of arguments, or an argument of the wrong kind.",
        why: "Each builtin and function has a fixed signature; see docs/language.md.",
        example: "exp(x, y)   // error\nexp(x)",
    }
    UNKNOWN_ARGUMENT = "PK0204" "unknown-keyword-argument" {
        what: "A call passes a keyword argument the callee does not take.",
        why: "Keyword arguments are only those documented for each builtin (`axis`, `keepdims`, `acc`, `trans_a`, `trans_b`...).",
        example: "sum(x, axes=1)   // error\nsum(x, axis=1)",
    }
    NOT_CONSTANT = "PK0205" "not-a-constant" {
        what: "An expression that must be known at compile time uses a run-time value.",
        why: "Shapes, block sizes, slice sizes, axes and grid extents are fixed when a kernel is specialised.",
        example: "x[ds(i, n)]   // error when n is a run-time value\nx[ds(i, 128)]",
    }
    INDEX_RANK = "PK0206" "wrong-index-count" {
        what: "A ref is indexed with more indices than it has dimensions, or with `..` more than once.",
        why: "Each index selects along one dimension; dimensions not mentioned are taken whole, as in numpy, and `..` stands for all remaining ones.",
        example: "acc[0, 0, 0]   // error on a 2-D ref\nacc[0, ..]",
    }
    OUT_OF_BOUNDS = "PK0207" "static-out-of-bounds" {
        what: "A static index or slice lies outside the ref.",
        why: "The sizes are known at compile time, so the access would fault on the TPU.",
        example: "x[0..16, :]   // error on an [8, 128] ref",
    }
    IMMUTABLE = "PK0208" "assign-to-immutable" {
        what: "A `let` binding is assigned after its definition.",
        why: "Bindings are immutable unless declared `let mut`; mutable bindings become loop-carried values.",
        example: "let m = 0.0; m = 1.0;   // error\nlet mut m = 0.0; m = 1.0;",
    }
    BAD_OPERAND = "PK0209" "invalid-operand" {
        what: "An operator or builtin is applied to a dtype it does not support.",
        why: "Bitwise operators need integers, `!` needs bool or an integer, math functions need floats.",
        example: "x_f32 & 1   // error",
    }
    NOT_ASSIGNABLE = "PK0210" "not-assignable" {
        what: "The left side of an assignment is not a ref subscript or a `let mut` binding.",
        why: "Only memory (refs) and mutable bindings can be written.",
        example: "exp(x) = 1.0;   // error\ny[..] = exp(x[..]);",
    }
    BRANCH_MISMATCH = "PK0211" "branch-mismatch" {
        what: "The branches of an `if` expression have different types, or an `if` used as a value has no `else`.",
        why: "An `if` expression produces one value of one type.",
        example: "let y = if c { 1.0 } else { x_bf16 };   // error",
    }
    BAD_CONDITION = "PK0212" "bad-condition" {
        what: "A condition is not a scalar bool.",
        why: "`if` and `while` branch on one scalar; to choose per element, use `where(cond, a, b)`.",
        example: "if x[..] > 0.0 { }   // error\ny[..] = where(x[..] > 0.0, x[..], 0.0);",
    }
    BAD_CAST = "PK0213" "invalid-cast" {
        what: "A cast or bitcast between incompatible types.",
        why: "`bitcast` needs equal bit widths (the last dim scales for different widths is not supported); casts need a dtype.",
        example: "bitcast(x_f32, i16)   // error\nbitcast(x_f32, i32)",
    }
    BAD_RESHAPE = "PK0214" "invalid-reshape" {
        what: "A reshape changes the number of elements.",
        why: "A reshape keeps every element, in row-major order; only the shape changes.",
        example: "reshape(x, [3, 100])   // error on f32[8, 128]\nreshape(x, [16, 64])",
    }
    BAD_AXIS = "PK0215" "axis-out-of-range" {
        what: "An axis argument is outside the value's rank.",
        why: "Axes count from 0; negative axes count from the end.",
        example: "sum(x, axis=2)   // error on a 2-D value",
    }
    CONST_EVAL = "PK0216" "constant-evaluation" {
        what: "A compile-time expression divides by zero, overflows, or is negative where a size is needed.",
        why: "Shapes and grid extents are positive integers.",
        example: "grid (i in M / 0 parallel)   // error",
    }
    NOT_INDEXABLE = "PK0217" "not-indexable" {
        what: "Something that is not a ref is subscripted.",
        why: "Only refs (operands, scratch, prefetch arrays, semaphore arrays) are indexed; values are sliced with builtins.",
        example: "exp(x)[0]   // error",
    }
    RETURN_MISMATCH = "PK0219" "return-type-mismatch" {
        what: "A function's body produces a value of a different type from the declared return type.",
        why: "The declared type is a promise to every caller.",
        example: "fn f(x: f32[8, 128]) -> bf16[8, 128] { x }   // error",
    }
    PATTERN_MISMATCH = "PK0220" "argument-type-mismatch" {
        what: "An argument does not match the parameter's declared type pattern.",
        why: "Generic names (`T`, `R`) bind once per call; every use must agree.",
        example: "fn f<T>(a: T, b: T) ... f(x_f32, y_bf16)   // error",
    }
    CARRIED_TYPE = "PK0221" "mutable-type-changed" {
        what: "A `let mut` binding is assigned a value of a different type.",
        why: "A mutable binding keeps one type so it can be carried through loops and branches.",
        example: "let mut acc = 0.0; acc = x[..];   // error: scalar vs [8,128]",
    }
    DOT_SHAPE = "PK0222" "dot-shape" {
        what: "`dot` operands are not 2-D or their contracting dimensions differ.",
        why: "`dot(a, b)` multiplies [m, k] by [k, n] (after the optional transposes).",
        example: "dot(a_8x128, b_8x128)   // error\ndot(a_8x128, b_8x128, trans_b=true)",
    }
    NO_VALUE = "PK0223" "no-value" {
        what: "An expression that produces no value is used as one.",
        why: "Statements such as `copy_start` or an `if` without `else` yield nothing.",
        example: "let x = copy_start(a, b, s);   // error",
    }
    STATIC_ASSERT = "PK0224" "static-assertion" {
        what: "A kernel's `assert(cond, \"message\")` is false for the parameter values it is specialised with.",
        why: "Assertions state what a kernel supports (`M % bm == 0`, `T != f8e5m2`); checking them when the kernel is specialised gives the kernel's own message instead of a later rule's.",
        example: "assert(M % bm == 0, \"M must be a multiple of bm\")   // error with -p M=1000 -p bm=128\n-p M=1024 -p bm=128",
    }
    MULTIPLE_OF = "PK0228" "multiple-of" {
        what: "`multiple_of(x, n)` got an `n` that is not a positive compile-time integer, an `x` that is not a scalar `i32`, or a constant `x` that is not a multiple of `n`.",
        why: "`multiple_of` promises the TPU compiler that a run-time index is a multiple of `n` (Pallas' `pl.multiple_of`); the promise is about a run-time scalar and a fixed positive multiple, and a constant can be checked at once.",
        example: "let r = multiple_of(ids[i], 0);   // error\nlet r = multiple_of(ids[i], 8);",
    }

    UNROLL_LENGTH = "PK0229" "unroll-length" {
        what: "A `for ... unroll` loop would copy its body more than 1024 times.",
        why: "An unrolled loop becomes one copy of its body per index; thousands of copies make a kernel that compiles slowly and does not fit the TPU's instruction memory. Such a loop belongs on the TPU as a `for` without `unroll`.",
        example: "for c in 0..4096 unroll { ... }   // error\nfor c in 0..4096 { ... }",
    }

    TUPLE_MISMATCH = "PK0240" "tuple-mismatch" {
        what: "A tuple is used where one value is needed, or destructured into a different number of names than it has elements.",
        why: "Tuples group several values (a helper's results, loop-carried state); they are taken apart with `let (a, b) = t;` or `(a, b) = t;`, one name per element, and are not values themselves.",
        example: "let (m, l) = (x, y, z);   // error: 3 elements, 2 names\nlet (m, l, _) = (x, y, z);",
    }
    NONE_VALUE = "PK0231" "none-value" {
        what: "`none` (an optional parameter without a value) is used in a computation, or given to a parameter that is not optional.",
        why: "`none` has no number to compute with. Test the parameter with `is none` / `is not none` and use it only where it has a value; only parameters declared with `?` (`window: int? = none`) take `none`.",
        example: "if q - k < window { ... }   // error with window = none\nif window is not none { if q - k < window { ... } }",
    }
    ABSENT = "PK0230" "absent-operand" {
        what: "An operand or scratch buffer declared with `if COND` is used where its condition is false.",
        why: "A conditional declaration does not exist in the kernels whose parameters make its condition false: it is not in the call, the package or the scratch list. Only code under the same compile-time condition may use it.",
        example: "k_scale: f32[H] in smem if QUANT\nk[..] * k_scale[h]   // error with -p QUANT=false\nif QUANT { k[..] * k_scale[h] } else { k[..] }",
    }
    REF_VIEW = "PK0251" "ref-view" {
        what: "`.at[...]` is taken of something that is not a ref or a view of one, or a member other than `at` is used.",
        why: "`k.at[h]` is a view of the ref `k` (Pallas' `k_ref.at[h]`): a ref of lower rank that can be indexed, written and passed to functions. Values are sliced directly (`v[0..8, :]`), and refs have no other members.",
        example: "let kh = k[..].at[0];   // error: a value\nlet kh = k.at[0];",
    }
    STRIDED_WINDOW = "PK0252" "strided-window" {
        what: "`ds(start, size, stride)` with a stride that is not a positive constant, or a strided window in a DMA, a view (`.at[...]`) or a masked store.",
        why: "A strided window takes `size` positions `stride` apart (Pallas' `pl.ds(start, size, stride)`); it is read and written with Mosaic's strided loads and stores, which have no DMA, view or mask form.",
        example: "let v = x[ds(0, 8, 0), :];   // error\nlet v = x[ds(0, 8, 2), :];",
    }
    REF_RESHAPE = "PK0253" "ref-reshape" {
        what: "`k.reshape(..)` or `k.bitcast(T)` is taken of something that is not a whole ref, with arguments that are not its sizes or one dtype, or with sizes that do not hold the ref's elements.",
        why: "`k.reshape(d0, d1)` and `k.bitcast(T)` are views of a whole ref's memory with another shape or dtype (Pallas' `ref.reshape(...)`, `ref.bitcast(...)`): a reshape keeps the number of elements, and a bitcast between widths packs or unpacks the second-minor dimension, whose bits must divide into the new elements. Views of part of a ref come after: `k.reshape(..).at[h]`.",
        example: "let v = k.at[0].reshape(8, 128);   // error: a part of k\nlet v = k.reshape(2, 8, 128).at[0];",
    }
    MASKED_STORE = "PK0250" "masked-store" {
        what: "`store(y[win], v, mask=m)` is given a mask that is not a bool tile, or a window that is one element or not in VMEM.",
        why: "A masked store writes the elements of a vector window where the mask is true and keeps the others (Pallas' `pltpu.store(ref, v, mask=m)`); Mosaic stores vectors to VMEM under a mask, one lane per element, so the mask is a bool value that broadcasts to the window's shape.",
        example: "store(y[..], v, mask=1)   // error: not a bool\nstore(y[..], v, mask=iota(i32, [8, 128], 1) < n);",
    }

    BAD_CANDIDATES = "PK0260" "bad-candidates" {
        what: "A tunable parameter's candidates (`in [...]`, `in lo..=hi step s`, `in pow2(lo, hi)`) are not a non-empty set of compile-time integers, or the parameter is not an `int`.",
        why: "Candidates are the values `pkc tune` may choose for a block size; each must be an integer known from the parameters before it, a range needs `lo <= hi` and a positive step, and the set must be non-empty and at most 4096 values, so that the tuning space is finite and means what it says.",
        example: "bm = 256 in 1024..=128   // error: empty range\nbm = 256 in 128..=1024 step 128",
    }
    DEFAULT_NOT_CANDIDATE = "PK0261" "default-not-candidate" {
        what: "A tunable parameter's default is not one of its candidates.",
        why: "The default is the configuration used when nothing is tuned, and `pkc tune` reports how the tuned best compares with it; a default outside the declared space could never be chosen by the tuner and would make that comparison meaningless. `-p` may still set any value.",
        example: "bm = 200 in [128, 256, 512]   // error\nbm = 256 in [128, 256, 512]",
    }
    WHERE_FALSE = "PK0262" "where-constraint" {
        what: "A kernel's `where COND` constraint between parameters is false for the values it is specialised with.",
        why: "`where` states which combinations of tunable parameters make a kernel (`where bk % bn == 0`); `pkc tune` leaves the others out of the space, and checking it when the kernel is specialised reports a bad combination at the constraint rather than through its consequences.",
        example: "where bk % bn == 0   // error with -p bk=384 -p bn=256\n-p bk=512 -p bn=256",
    }

    BLOCK_TILING = "PK0301" "block-tiling" {
        what: "A block's last two dimensions are not divisible by the TPU tile (8 sublanes x 128 lanes) and not equal to the array's dimensions.",
        why: "Mosaic moves blocks in (8, 128) tiles of 32-bit words; other shapes cannot be laid out in VMEM.",
        example: "x: f32[M, N] block [4, 100] at (i, j)   // error\nx: f32[M, N] block [8, 128] at (i, j)",
    }
    BLOCK_RANK1 = "PK0302" "block-rank1" {
        what: "A rank-1 block (in VMEM or SMEM) is neither the whole array nor a multiple of one 128-lane row: 128 elements for 32-bit types, 256 for 16-bit, 512 for 8-bit.",
        why: "1-D blocks are laid out in rows of 128 lanes of 32-bit words, and narrow types pack 2 or 4 values per word; libtpu rejects other block lengths (E2002).",
        example: "x: f32[N] block [512] at (i)   // error\nx: f32[N] block [1024] at (i)",
    }
    BLOCK_PACKING = "PK0303" "block-packing" {
        what: "A block of a 16- or 8-bit dtype has a second-to-last dimension that is not a multiple of its packed tile (16 for 16-bit, 32 for 8-bit).",
        why: "Narrow dtypes pack 2 or 4 rows into one 32-bit sublane, so their native tile is 16 or 32 rows. libtpu also compiles blocks with fewer rows, so this is a warning: such a block does not fill the packed tiles of its dtype.",
        example: "x: bf16[M, N] block [8, 128] at (i, j)   // warning\nx: bf16[M, N] block [16, 128] at (i, j)",
    }
    MATMUL_ACC = "PK0304" "matmul-accumulator" {
        what: "`dot` is asked for an accumulator that is not 32-bit.",
        why: "The MXU accumulates in 32 bits (f32, or i32 for integer inputs); libtpu rejects narrower accumulators.",
        example: "dot(a, b, acc=bf16)   // error\ndot(a, b, acc=f32) as bf16",
    }
    MATMUL_DTYPE = "PK0305" "matmul-dtype" {
        what: "`dot` operands have a dtype the target's MXU does not support, or differ from each other.",
        why: "MXU inputs per generation, as libtpu's Mosaic compiler accepts them: v4 f32/bf16; v5e, v5p, v6e f32/bf16/i8/u8/fp8; TPU7x f32/bf16/fp8.",
        example: "dot(a_i8, b_i8) on tpu7x   // error",
    }
    VMEM_BUDGET = "PK0306" "vmem-budget" {
        what: "The kernel's VMEM use (double-buffered blocks plus scratch) exceeds the target's VMEM or the kernel's `vmem_limit`.",
        why: "Each blocked operand is double-buffered by the pipeline; everything must fit in one TensorCore's VMEM (16 MiB v4, 128 MiB v5e, 64 MiB v5p, 128 MiB v6e, 64 MiB TPU7x).",
        example: "block [4096, 4096] f32 on v4: 2 x 64 MiB   // error\nuse smaller blocks",
    }
    SMEM_VECTOR = "PK0307" "smem-vector" {
        what: "A vector is read from or written to SMEM.",
        why: "SMEM is the scalar unit's memory: it is read and written one scalar at a time.",
        example: "let v = ids[..];   // error on an SMEM ref\nlet v = ids[i];",
    }
    ANY_ACCESS = "PK0308" "any-direct-access" {
        what: "A ref in ANY (HBM) memory is read or written directly.",
        why: "HBM is reached only by DMA: copy a window into a VMEM scratch buffer with `copy_start`/`copy_wait`.",
        example: "let v = x_hbm[..];   // error\ncopy_start(x_hbm[..], buf[..], sem); copy_wait(x_hbm[..], buf[..], sem);",
    }
    WIDE_TYPE = "PK0309" "64-bit-type" {
        what: "A dtype pk knows but the TPU does not support is written: a 64-bit dtype (f64, i64, u64, c64), or f16, u16 or u32. The same diagnostic is given in a declaration, a cast, `bitcast` and a `-p` value.",
        why: "TPUs have no 64-bit vector units, and Mosaic rejects 64-bit types, f16 and unsigned types wider than 8 bits.",
        example: "x: f64[M]   // error\nx: f32[M]",
    }
    INDEX_MAP_ARITY = "PK0310" "index-map-arity" {
        what: "An operand's `at (...)` index map returns a different number of block indices than the array has dimensions, or a block shape has the wrong rank.",
        why: "The index map gives one block index per array dimension (squeezed dimensions included).",
        example: "x: f32[M, N] block [bm, bn] at (i)   // error\nx: f32[M, N] block [bm, bn] at (i, 0)",
    }
    GRID_DIVISIBILITY = "PK0311" "grid-divisibility" {
        what: "A block dimension does not divide its array dimension, and the grid axis its index map reads does not opt in to a ragged last block.",
        why: "Without `cdiv(...)` in the grid, every block must lie fully inside the array.",
        example: "grid (i in M / bm parallel) with M=1000, bm=128   // error\ngrid (i in cdiv(M, bm) parallel)   // the blocks read by `i` may be partial",
    }
    DTYPE_TARGET = "PK0312" "dtype-target" {
        what: "A dtype is not supported on the selected TPU generation.",
        why: "fp8 types exist on v5e and later.",
        example: "x: f8e4m3fn[M] with --target v4   // error",
    }
    BLOCK_TOO_LARGE = "PK0313" "block-larger-than-array" {
        what: "A block dimension is larger than the array dimension, and the grid axis its index map reads does not opt in with `cdiv`.",
        why: "A block is a window into the array. With a `cdiv` extent on its axis (as in Pallas) the block is padded: the padding is not array data, reads as NaN on the CPU reference and is not written back.",
        example: "x: f32[64, 128] block [128, 128] at (i, 0), grid (i in 1 parallel)   // error\nx: f32[64, 128] block [128, 128] at (i, 0), grid (i in cdiv(64, 128) parallel)",
    }
    INDEX_MAP_TYPE = "PK0316" "index-map-type" {
        what: "An index-map entry is not a scalar integer computed from grid indices, constants and scalar-prefetch values.",
        why: "Index maps run on the scalar unit before each grid step.",
        example: "at (x[0], 0)   // error: x is a blocked operand",
    }
    NARROW_SCALAR_READ = "PK0317" "narrow-scalar-read" {
        what: "One element of a 16- or 8-bit VMEM ref is read as a scalar (`x[i, j]` of a bf16 block).",
        why: "The TPU extracts only 32-bit scalars from vector registers; libtpu refuses the kernel (\"Only 32-bit scalar vector.extracts supported\"). Writing such a scalar is fine.",
        example: "let s = x_bf16[3, 5];   // error\nlet s = max(x_bf16[3..4, :] as f32, axis=1);   // a window, converted first",
    }
    SMEM_BUDGET = "PK0315" "smem-budget" {
        what: "SMEM use (scalar prefetch, SMEM operands and scratch) exceeds 1 MiB.",
        why: "SMEM is 1 MiB per core on v4 and later.",
        example: "prefetch (table: i32[1048576])   // error",
    }
    DMA_SPACES = "PK0319" "dma-operands" {
        what: "`copy_start`/`copy_wait` got something other than (ref window, ref window, semaphore), or windows of different shapes or dtypes.",
        why: "A DMA copies one window to another of the same shape and dtype and signals a DMA semaphore.",
        example: "copy_start(x[..], buf[..], 0)   // error: third argument must be a dma_sem",
    }
    UNPROVEN_ALIGNMENT = "PK0325" "unproven-alignment" {
        what: "A run-time position in one of the last two dimensions of a VMEM ref is not provably a multiple of the ref's tile: 128 in the last dimension; 8, 16 or 32 (for 32-, 16- and 8-bit dtypes) in the second-to-last.",
        why: "Mosaic reaches VMEM in whole (sublane, 128-lane) tiles and must prove at compile time that a run-time index starts a tile; libtpu refuses the kernel otherwise (E2003 CompileTimeMosaicUnprovenMemoryAccessAlignment). It proves it for constants, products with a multiple (`i * 16`, `8 * j`) and `multiple_of(x, n)` hints; sums are not proven.",
        example: "let v = kv[0, 0..4, h, 0..128];                    // error: h is a run-time index\nlet v = kv[0, 0..4, multiple_of(h * 16, 16), 0..128];",
    }
    V4_COLUMN_READ = "PK0326" "v4-column-read" {
        what: "On v4, a VMEM ref is read with one position in its last dimension and a vector result (a column, `x[.., j]`).",
        why: "Turning a column of a VMEM tile into a vector needs a sublane gather, which TPU v4 does not have; libtpu refuses the kernel for v4 (\"Sublane gather not supported by this TPU generation\"). Later chips compile it.",
        example: "let c = x[.., 3];   // error on v4\nlet c = sum(where(iota(i32, [128, 128], 1) == 3, x[..], 0.0), axis=1, keepdims=true);",
    }
    MASKED_STORE_WIDTH = "PK0350" "masked-store-width" {
        what: "A masked store (`store(y[win], v, mask=m)`) into a ref whose dtype is not 32 bits wide (bf16, int8, ...).",
        why: "libtpu 0.0.51 masks 32-bit stores only: it refuses a masked `tpu.vector_store` of narrower elements on every target (\"masked store with non-32-bit element type\" is not implemented), and Mosaic has no rule for `vector.maskedstore`. Merging with the old contents does the same with a read.",
        example: "store(y[..], v, mask=m)           // error for y: bf16[16, 128]\ny[..] = where(m, v, y[..]);",
    }
    REPEAT_RANK1 = "PK0351" "repeat-rank1" {
        what: "`repeat(x, n, axis=0)` of a rank-1 value.",
        why: "`repeat` splits the repeated axis in two and broadcasts (as `jnp.repeat` lowers); Mosaic cannot lay out that split for a rank-1 vector and libtpu 0.0.51 refuses it on every target (\"unsupported shape cast\"). The same repeat of a 2-D value with one row compiles.",
        example: "let r = repeat(x[0, :], 2, axis=0);   // error: rank 1\nlet r = repeat(x[0..1, :], 2, axis=1);",
    }
    RESHAPE_TPU = "PK0353" "ref-reshape-target" {
        what: "A reshaped or bitcast view of a ref (`k.reshape(..)`, `k.bitcast(T)`) that the TPU cannot take: a side of rank 1, a changed last dimension, a second-minor dimension that changes between sizes that are not multiples of the sublane tile, or a ref that is not in VMEM or ANY.",
        why: "In Mosaic the views are `tpu.memref_reshape` and `tpu.memref_bitcast`, which libtpu 0.0.51 compiles on every target for refs of rank 2 or more in VMEM or HBM, when a reshape keeps the lane dimension and folds or splits the second-minor one by whole tiles (8 rows of 32-bit, 16 of 16-bit, 32 of 8-bit elements): otherwise \"Expected the minormost dimension to be unchanged\" or \"Supported only when (a) tiled dimensions remain unchanged, except maybe for tile-aligned folding/unfolding of the first tiled dimension\".",
        example: "let v = x.reshape(8, 256);   // error: x is f32[16, 128]\nlet v = x.reshape(2, 8, 128);",
    }
    DMA_LANES = "PK0354" "dma-lanes" {
        what: "A DMA (`copy_start`) window of a VMEM or ANY ref takes part of the last dimension that is not whole 128-lane tiles: fewer lanes than a multiple of 128, or a first lane that is not (provably) a multiple of 128.",
        why: "The DMA engine moves whole tile columns: libtpu 0.0.51 refuses a partial one on every target and for every dtype (\"The contiguous inner slice in the DMA transfer must be divisible by 512 bytes\", \"The dynamic offset times the element size is not a multiple of the memory space word size\"). The whole last dimension, whatever its size, is always one transfer.",
        example: "copy_start(x.at[0..8, 0..64], buf.at[:, 0..64], sem.at[0]);   // error\ncopy_start(x.at[0..8, 0..128], buf.at[:, 0..128], sem.at[0]);",
    }
    STRIDED_TPU = "PK0352" "strided-window-target" {
        what: "A strided window (`ds(start, size, stride)`) that the TPU cannot read or write: a stride in the last dimension, elements narrower than 32 bits, a ref that is not in VMEM, or a ref whose last dimension is not 128.",
        why: "libtpu 0.0.51 compiles `tpu.strided_load`/`tpu.strided_store` only with a unit stride in the lane dimension (\"Stride on last dim is not 1\"), for 32-bit elements (\"Strided store with non 32-bit data\"; packed loads need static positions) and over a VMEM ref whose last dimension is 128 lanes (\"The last dim size is not 128 in original base memref\"), on every target.",
        example: "let v = x[ds(0, 8, 2), ds(0, 64, 2)];   // error: lane stride\nlet v = x[ds(0, 8, 2), :];",
    }
    SEMANTICS = "PK0320" "grid-semantics" {
        what: "Writing an output block from a `parallel` grid axis that its index map ignores.",
        why: "Parallel steps may run on different cores; two of them writing the same output block race. Mark the axis `arbitrary` to accumulate over it.",
        example: "grid (i in 4 parallel) -> o: f32[8,128] block [8,128] at (0, 0)   // error",
    }
    DYNAMIC_EXTENT_BOUND = "PK0335" "dynamic-grid-extent-bound" {
        what: "A grid extent read at run time (from a scalar-prefetch operand) has no compile-time upper bound, or a bound is written on an extent that is known at compile time.",
        why: "The checker sizes VMEM and SMEM budgets, proves index maps in range and looks for races with the number of steps; for a dynamic axis that number is the bound written after `<=`, and the run fails (PK1035) when the value exceeds it. A static extent needs no bound.",
        example: "grid (t in n[0] arbitrary)          // error: no bound\ngrid (t in n[0] <= 64 arbitrary)",
    }
    DYNAMIC_EXTENT_SOURCE = "PK0336" "dynamic-grid-extent-source" {
        what: "A dynamic grid extent is not one `i32` element of a scalar-prefetch operand at compile-time indices.",
        why: "Scalar-prefetch operands are the values that exist before the grid starts (Pallas passes a dynamic grid bound the same way, ahead of the kernel's operands); inputs, grid indices and computed values do not, and the extent must be read as it is, without arithmetic.",
        example: "grid (t in x[0] <= 64 arbitrary)   // error: `x` is an input\nprefetch (n: i32[1]) grid (t in n[0] <= 64 arbitrary)",
    }

    MESH = "PK0360" "mesh" {
        what: "A `mesh (..)` axis whose size is not a positive compile-time integer, or a communicating operation (`device_id`, `mesh_size`, `remote_copy_start`, a remote `sem_signal`) in a kernel without a `mesh` clause.",
        why: "A kernel that talks to other devices runs once per device of a mesh whose shape is fixed when it is compiled (as JAX's `shard_map` mesh is): device ids, coordinates and the checks of both come from it.",
        example: "kernel k(x: f32[8, 128]) -> y: f32[8, 128] {\n    let d = device_id();   // error: no mesh\n}\nkernel k<n: int = 4>(x: f32[8, 128]) -> y: f32[8, 128] mesh (d in n) { .. }",
    }
    REMOTE_WINDOW = "PK0361" "remote-window" {
        what: "The windows of a remote copy (`remote_copy_start`, `remote_wait_send`, `remote_wait_recv`) are not refs of the same shape and dtype on both sides, are not whole tiles (the last dimension whole 128-lane columns, the second-minor whole sublane tiles), or are not in VMEM or HBM.",
        why: "The destination window is named on this device and written on another, so it must be the same window of a buffer every device has; the interconnect moves whole tiles, as local DMAs do (PK0354), and libtpu refuses a remote DMA between unequal or partial tiles.",
        example: "remote_copy_start(x.at[0..8, 0..64], y.at[0..8, 0..64], send, recv, peer);   // error: 64 lanes\nremote_copy_start(x, y, send, recv, peer);",
    }
    SEM_KIND = "PK0362" "semaphore-kind" {
        what: "A semaphore of the wrong kind for the operation: a plain or barrier semaphore (`sem`, `barrier_sem`) given to a DMA, a DMA semaphore (`dma_sem`) to `sem_signal`/`sem_wait`/`sem_read`, or a data ref where a semaphore is expected.",
        why: "DMA semaphores count bytes delivered by the DMA engine and are waited on with their copy; plain semaphores count signals. Mosaic types them apart (`!tpu.dma_semaphore`, `!tpu.semaphore`), and mixing them would wait for a count that never comes.",
        example: "scratch (s: sem, d: dma_sem)\nsem_signal(d, 1);   // error: a DMA semaphore\nsem_signal(s, 1);",
    }
    DEVICE_RANGE = "PK0363" "device-range" {
        what: "A device id (a logical id, or a coordinate given to `device_id(..)`) that is provably outside the mesh: negative, or not below the number of devices (the axis size for a coordinate).",
        why: "A copy or signal to a device that does not exist hangs or faults the slice; wrap ring neighbours with `%`: `(x + 1) % mesh_size(0)`.",
        example: "mesh (x in 4)\nremote_copy_start(a, b, s, r, device_id(4));   // error\nremote_copy_start(a, b, s, r, device_id((x + 1) % 4));",
    }
    BARRIER = "PK0364" "barrier" {
        what: "A barrier semaphore (`barrier_sem`) in a kernel without `collective_id`, more than one barrier semaphore, or a collective id that is not a compile-time integer from 0 to 2^31 - 1.",
        why: "The TPU gives a kernel the barrier semaphore of its collective, named by the collective id in the custom call (Pallas' `collective_id`); without one there is no barrier to use. The id is a kernel parameter so that two collectives of one program can be given different ones.",
        example: "kernel k<cid: int = 0>(..) scratch (b: barrier_sem)                // error\nkernel k<cid: int = 0>(..) collective_id cid scratch (b: barrier_sem)",
    }
    BUFFER_COUNT = "PK0370" "buffer-count" {
        what: "A blocked operand's `buffered(n)` is not 1 or 2.",
        why: "The grid pipeline keeps one buffer per block (`buffered(1)`: Mosaic's synchronous mode, the block fetched before the step that needs it, for blocks whose index rarely changes) or two (the default: the next block is fetched while this one is used). Mosaic has no deeper grid pipeline, and Pallas's `pallas_call` on TPU refuses `pl.Buffered(3)` too; a stream that needs more copies in flight is a loop of `copy_start`/`copy_wait` over an `in any` operand.",
        example: "w: bf16[K, N] block [K, bn] at (0, j) buffered(3)   // error\nw: bf16[K, N] block [K, bn] at (0, j) buffered(1)",
    }
    PRINT = "PK0371" "print" {
        what: "A `print` whose format and arguments do not fit, or that is not in a kernel body.",
        why: "`print` writes its format with each `{}` replaced by the next argument, at run time with the grid step: on the CPU reference to standard error, on the TPU through Mosaic's logging ops (`tpu.log`, `tpu.log_buffer`), which take either scalar 32-bit integers or one tile, the tile for a format that ends with `{}`. Index maps and compile-time code have nothing to print at run time.",
        example: "print(\"m = {}\", m[..]);           // ok: one tile, last\nprint(\"step {} of {}\", i, n);    // ok: i32 scalars\nprint(\"x = {}\", 1.5);             // error: a float scalar",
    }

    MISSING_PARAM = "PK0401" "missing-parameter-value" {
        what: "A kernel is specialised without a value for a parameter that has no default.",
        why: "Building or running a kernel needs every shape; pass it with `-p NAME=VALUE`.",
        example: "pkc emit ir add.pk            // error: M has no value\npkc emit ir add.pk -p M=1024 -p N=1024",
    }
    UNKNOWN_PARAM = "PK0402" "unknown-parameter" {
        what: "`-p NAME=VALUE` names no parameter of the kernel.",
        why: "A misspelt parameter would otherwise be ignored silently.",
        example: "pkc emit ir add.pk -p m=1024   // error: parameters are case-sensitive",
    }
    BAD_PARAM_VALUE = "PK0403" "bad-parameter-value" {
        what: "A parameter value is malformed or of the wrong kind.",
        why: "Integer parameters take integers (or constant expressions); float parameters take numbers; bool parameters take `true` or `false`; dtype parameters take a dtype name.",
        example: "-p bm=big   // error\n-p bm=256",
    }
    NOT_FORMATTED = "PK0010" "not-formatted" {
        what: "`pkc fmt --check` found a file whose layout is not the one `pkc fmt` writes.",
        why: "One canonical layout keeps diffs to what changed; the label points at the first line that differs. `pkc fmt FILE` rewrites the file (comments and meaning are kept).",
        example: "fn f(x){x+1}   // error under --check\nfn f(x) {\n    x + 1\n}",
    }
    BAD_WORKSPACE = "PK0011" "bad-workspace-file" {
        what: "The workspace file `pk.toml` cannot be read: it is not TOML, names an unknown target, or gives a parameter a value that is not an integer, a float, a bool or a string.",
        why: "`pkc check` and `pkc lsp` take their default targets and parameter sets from `pk.toml` (docs/editor.md); a broken file would silently check something else.",
        example: "targets = [\"v9\"]   # error: no such TPU\ntargets = [\"v5e\", \"v6e\"]\n\n[[params]]\nM = 1024",
    }
    INTERNAL = "PK0999" "internal-error" {
        what: "pk produced invalid IR for a kernel it accepted.",
        why: "The IR verifier found a broken invariant; this is a bug in pk, not in the kernel.",
        example: "Please report the kernel source with the message.",
    }
    NO_KERNEL = "PK0404" "kernel-selection" {
        what: "`--kernel NAME` names no kernel of the file.",
        why: "Without `--kernel` every kernel of the file is used; with it, the name must be one of them.",
        example: "pkc emit ir file.pk --kernel matmul",
    }
}
