//! Errors of the CPU reference executor and `.npy` I/O: codes `PK1001` to
//! `PK1099`. Violations found while a kernel runs point at the `.pk`
//! source (file:line:col in the message, and a labelled span for miette).

use miette::{NamedSource, SourceSpan};
use pk_lang::diag::Explanation;
use pk_lowering::wasm::abi::{CpuManifest, Loc};
use std::sync::Arc;

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    #[error("cannot read `{path}`: {reason}")]
    #[diagnostic(
        code(PK1001),
        help("check the path; inputs are .npy files written by numpy.save")
    )]
    Unreadable { path: String, reason: String },

    #[error("`{path}` is not a .npy file pk can read: {reason}")]
    #[diagnostic(
        code(PK1002),
        help("write the array with numpy.save (format 1.0-3.0, a plain numeric dtype)")
    )]
    BadNpy { path: String, reason: String },

    #[error("operand `{operand}` is {expected}, but `{path}` holds {found}")]
    #[diagnostic(
        code(PK1003),
        help("save the array with the operand's dtype (the numpy spelling is in parentheses)")
    )]
    DtypeMismatch {
        operand: String,
        expected: String,
        found: String,
        path: String,
    },

    #[error("operand `{operand}` has shape [{expected}], but `{path}` has shape [{found}]")]
    #[diagnostic(
        code(PK1004),
        help("the shape follows the kernel's parameters; set them with -p NAME=VALUE")
    )]
    ShapeMismatch {
        operand: String,
        expected: String,
        found: String,
        path: String,
    },

    #[error("missing input `{operand}` ({expected})")]
    #[diagnostic(code(PK1005), help("pass it as --in {operand}=PATH.npy"))]
    MissingInput { operand: String, expected: String },

    #[error("kernel `{kernel}` has no {role} `{name}`")]
    #[diagnostic(code(PK1006), help("its {role}s are: {known}"))]
    UnknownOperand {
        kernel: String,
        role: String,
        name: String,
        known: String,
    },

    #[error("cannot write `{path}`: {reason}")]
    #[diagnostic(code(PK1007), help("check that the directory exists and is writable"))]
    WriteFailed { path: String, reason: String },

    #[error("cannot write `{path}`: {stream} was closed when pkc started")]
    #[diagnostic(
        code(PK1007),
        help("give {stream} somewhere to go (a file, a pipe, or `>/dev/null` to discard it), or write the output to a file")
    )]
    StreamClosed { path: String, stream: String },

    #[error("{message}")]
    #[diagnostic(
        code(PK1010),
        help("a dynamic index must keep the whole window inside the ref; clamp it or guard the access")
    )]
    OutOfBounds {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this access")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1011),
        help("integer division by zero has no value on the TPU; guard the divisor")
    )]
    DivideByZero {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this division")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1031),
        help("`multiple_of(x, n)` promises the TPU compiler that x is a multiple of n; fix the index, or the hint")
    )]
    NotMultiple {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this promise is broken")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1035),
        help("the scalar-prefetch element that a dynamic grid axis reads must lie in 0..=BOUND, the bound written after `<=`; raise the bound or fix the value")
    )]
    DynamicExtent {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("the prefetch operand it reads")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1012),
        help("write the buffer before reading it (e.g. initialise scratch when the reduction axis is 0); padding of partial blocks is never data")
    )]
    Uninitialized {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("reads memory never written")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1013),
        help("an output block stays in VMEM only while consecutive grid steps map to it; order the grid so that all steps writing a block are adjacent (reduction axes last, `arbitrary`)")
    )]
    Revisit {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this output's index map")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1014),
        help("steps of a `parallel` axis may run on different cores; if several steps accumulate into one block, mark that axis `arbitrary`")
    )]
    Race {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this output's index map")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1015),
        help("check the loop's bounds and condition; raise the limit with --timeout or --fuel if the kernel is just slow")
    )]
    Runaway {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("the loop running when it was stopped")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1016), help("every DMA start needs a matching wait on the same semaphore, with windows inside their refs"))]
    Dma {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this DMA")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1017), help("an index map returns block indices (not element offsets); the block must start inside the array"))]
    BlockIndex {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this operand's index map")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1020),
        help("use smaller blocks (or fewer live tiles) so the kernel fits the target's VMEM")
    )]
    Memory {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("this kernel")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1021),
        help("the CPU reference does not implement this yet; the TPU path may still accept it")
    )]
    Unsupported {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label("here")]
        span: Option<SourceSpan>,
    },

    #[error("{message}")]
    #[diagnostic(
        code(PK1024),
        help("use smaller parameters (-p), fewer --threads, or a host with more free memory")
    )]
    HostMemory { message: String },

    #[error("{message}")]
    #[diagnostic(code(PK1040), help("every device still running waits for a signal no device can send; fix the wait's semaphore or count, or add the missing signal or copy"))]
    Deadlock {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1041), help("a semaphore must be back at 0 when the kernel ends: every signal and every copy needs its wait, with the same count"))]
    SemaphoreLeft {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1042), help("a window is the copy's until its wait: wait (remote_wait_send for the source, remote_wait_recv for the destination) before reading or writing it"))]
    WindowInFlight {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1043), help("order the copies into one window (a semaphore wait between them, or a barrier), or write distinct windows"))]
    UnorderedWrites {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1044), help("a device id is one of 0..mesh size; compute it with device_id(..) from coordinates taken modulo the axis sizes"))]
    DeviceOutOfRange {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1045), help("signal the barrier semaphore only on other devices of the mesh, and wait for exactly the signals sent to this device"))]
    Barrier {
        message: String,
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        #[label(collection)]
        labels: Vec<miette::LabeledSpan>,
    },

    #[error("{message}")]
    #[diagnostic(code(PK1046), help("run the kernel on its own mesh: --mesh gives its device count (or AxB its axis sizes), and each array stacks one slice per device on its leading dimensions"))]
    MeshMismatch { message: String },

    #[error("{message}")]
    #[diagnostic(code(PK1047), help("every device of the mesh must make the same call of the kernel: call it unconditionally inside jax.shard_map (not under a lax.cond or a loop whose trip count differs between devices), over every device of the kernel's mesh axes; the bound is PK_MESH_JOIN_TIMEOUT seconds"))]
    PeersMissing { message: String },

    #[error("invalid CPU kernel package: {0}")]
    #[diagnostic(code(PK1022), help("rebuild the package with the same pk version"))]
    Manifest(String),

    #[error("the Wasm module does not compile: {0}")]
    #[diagnostic(
        code(PK1023),
        help("the .wasm was not produced by this pk version, or is damaged")
    )]
    Compile(String),

    #[error("internal error in the CPU reference: {0}")]
    #[diagnostic(
        code(PK1099),
        help("this is a pk bug; please report it with the kernel")
    )]
    Internal(String),
}

/// A `.pk` location for a diagnostic: the source text (when the manifest
/// carries it) and the span.
pub(crate) fn located(
    m: &CpuManifest,
    loc: &Loc,
) -> (Option<Arc<NamedSource<String>>>, Option<SourceSpan>) {
    let Some(src) = m.sources.iter().find(|s| s.name == loc.file) else {
        return (None, None);
    };
    if loc.end as usize > src.text.len() || loc.file.is_empty() {
        return (None, None);
    }
    let span = SourceSpan::from((loc.start as usize, (loc.end - loc.start) as usize));
    (
        Some(Arc::new(NamedSource::new(
            src.name.clone(),
            src.text.clone(),
        ))),
        Some(span),
    )
}

/// `file:line:col` of a location, for messages.
pub(crate) fn at(loc: &Loc) -> String {
    if loc.file.is_empty() {
        "<unknown location>".into()
    } else {
        format!("{}:{}:{}", loc.file, loc.line, loc.col)
    }
}

macro_rules! explain {
    ($( $code:literal $title:literal { what: $what:literal, why: $why:literal, example: $ex:literal } )*) => {
        /// Long explanations of every `PK1xxx` code, for `pkc explain`.
        pub const EXPLANATIONS: &[Explanation] = &[ $( Explanation {
            code: $code, title: $title, what: $what, why: $why, example: $ex,
        } ),* ];
    };
}

explain! {
    "PK1001" "unreadable-file" {
        what: "An input .npy file (or a kernel package file) could not be read.",
        why: "The path does not exist, is a directory, or is not readable.",
        example: "pkc run add.pk --in x=missing.npy   // error\npkc run add.pk --in x=x.npy"
    }
    "PK1002" "not-npy" {
        what: "A file given as an array is not in the .npy format, uses an unsupported format version, or holds an unsupported dtype (object, string, complex, float64...).",
        why: "pk reads numpy's .npy format 1.0-3.0 with the dtypes the TPU has: f32 (<f4), bf16 (ml_dtypes' <V2, or raw bits as <u2), i32, i16, i8, u8, bool, fp8 (<V1 or <u1).",
        example: "np.savetxt('x.npy', x)   // error: text, not .npy\nnp.save('x.npy', x.astype(np.float32))"
    }
    "PK1003" "dtype-mismatch" {
        what: "An array's dtype is not the operand's declared dtype.",
        why: "pk does not convert inputs silently: a float64 array passed for an f32 operand usually means a forgotten astype, and a silent conversion would hide it.",
        example: "np.save('x.npy', np.ones((8, 128)))   // float64: error\nnp.save('x.npy', np.ones((8, 128), np.float32))"
    }
    "PK1004" "shape-mismatch" {
        what: "An array's shape is not the operand's shape for this specialisation.",
        why: "Operand shapes are fixed by the kernel's parameters (-p NAME=VALUE or their defaults).",
        example: "pkc run add.pk --in x=x_16x256.npy      // error with the default M, N\npkc run add.pk -p M=16 -p N=256 --in x=x_16x256.npy"
    }
    "PK1005" "missing-input" {
        what: "An input operand of the kernel was not given.",
        why: "Every input (and scalar-prefetch operand) needs an array.",
        example: "pkc run add.pk --in x=x.npy            // error: y missing\npkc run add.pk --in x=x.npy --in y=y.npy"
    }
    "PK1006" "unknown-operand" {
        what: "An --in or --out names no input or output of the kernel.",
        why: "A misspelt name would otherwise be ignored silently.",
        example: "pkc run add.pk --in X=x.npy   // error: operands are x, y\npkc run add.pk --in x=x.npy"
    }
    "PK1007" "write-failed" {
        what: "An output .npy file could not be written.",
        why: "Outputs are written to a temporary file in the same directory and renamed into place, so the directory must exist and be writable. An output sent to standard output (`--out z=-`) needs standard output open: a closed one (`>&-`) would swallow the array and report success.",
        example: "pkc run add.pk ... --out z=/no/such/dir/z.npy   // error"
    }
    "PK1010" "out-of-bounds" {
        what: "A load, store or DMA used a dynamic start that puts its window (partly) outside the ref.",
        why: "On the TPU an out-of-bounds VMEM access reads or corrupts other buffers silently; the CPU reference stops at the access instead.",
        example: "let v = x[pl.ds(i * 8, 8), ..];   // error when i * 8 + 8 > rows\nlet v = x[pl.ds(min(i * 8, rows - 8), 8), ..];"
    }
    "PK1011" "divide-by-zero" {
        what: "An integer division or remainder had a zero divisor.",
        why: "The result is undefined on the TPU.",
        example: "let q = a / b;   // error when b == 0"
    }
    "PK1031" "broken-multiple-of" {
        what: "A `multiple_of(x, n)` hint was given an `x` that is not a multiple of `n` while the kernel ran.",
        why: "The TPU compiler takes the hint on trust to prove that VMEM accesses are tile-aligned; a wrong hint makes the TPU read or write the wrong rows silently. The CPU reference checks every hint.",
        example: "let r = multiple_of(ids[i], 16);   // error when ids[i] is 8\nlet r = multiple_of(ids[i] * 16, 16);"
    }
    "PK1035" "dynamic-grid-extent" {
        what: "A dynamic grid axis (`t in n[0] <= 64 arbitrary`) read a number of steps above its declared bound, or below zero.",
        why: "The bound is what the checker used for budgets, races and index maps, and what a caller sizes arrays for; a larger value would run steps nobody checked, and the TPU would index blocks past the arrays.",
        example: "grid (t in n[0] <= 8 arbitrary)   // error when n[0] is 9 at run time\ngrid (t in n[0] <= 16 arbitrary)"
    }
    "PK1012" "uninitialized-read" {
        what: "With --check-uninit, a load read elements that were never written: scratch before its first store, an output block before it was written, or the padding of a partial block.",
        why: "Such memory holds whatever the previous kernel left there on the TPU. Without --check-uninit the CPU reference fills it with NaN (floats) or 0xA5 bytes (integers) so that mistakes show in the results.",
        example: "acc[..] += x[..];   // error at k == 0: acc never initialised\nif k == 0 { acc[..] = 0.0; }\nacc[..] += x[..];"
    }
    "PK1013" "non-consecutive-revisit" {
        what: "An output block was written back and later mapped to again by a non-adjacent grid step.",
        why: "Pallas keeps an output block in VMEM only while consecutive steps map to it; a later revisit starts from uninitialised VMEM and overwrites the earlier result in HBM.",
        example: "grid (k in K / bk arbitrary, i in M / bm parallel)   // c at (i): revisits\ngrid (i in M / bm parallel, k in K / bk arbitrary)"
    }
    "PK1014" "parallel-race" {
        what: "Two steps that differ in a `parallel` grid index write the same output block.",
        why: "Parallel steps may run on different TensorCores (megacore); each holds its own copy of the block and the last write wins.",
        example: "grid (i in M / bm parallel, k in K / bk parallel)   // c at (i, 0): race\ngrid (i in M / bm parallel, k in K / bk arbitrary)"
    }
    "PK1015" "runaway-kernel" {
        what: "The kernel did not finish within the time (or fuel) limit of the run.",
        why: "A loop whose condition never becomes false would hang the TPU; the CPU reference interrupts it and names the loop that was running.",
        example: "while i < n { }   // error: i never changes\nwhile i < n { i = i + 1; }"
    }
    "PK1016" "dma-error" {
        what: "A DMA was misused: a window outside its ref, a wait with no copy in flight on its semaphore, or copies still in flight when the grid ended.",
        why: "On the TPU these corrupt memory or hang the core.",
        example: "copy_start(x_hbm, buf, sem[0]);   // error: never waited\ncopy_start(x_hbm, buf, sem[0]); copy_wait(x_hbm, buf, sem[0]);"
    }
    "PK1017" "block-index-out-of-range" {
        what: "An index map returned a block index whose block starts outside the array.",
        why: "Index maps return block indices; the element offset is the index times the block size, and must be inside the array (the last block may be partial).",
        example: "x: f32[M, N] block [bm, bn] at (i * bm, j)   // error: element offset\nx: f32[M, N] block [bm, bn] at (i, j)"
    }
    "PK1020" "memory-exceeded" {
        what: "The kernel's buffers do not fit the target's memory: SMEM, VMEM (blocks times their buffer count: two, or one with `buffered(1)`; plus scratch), or VMEM including the body's intermediate tiles.",
        why: "The CPU reference sizes its memory like one TensorCore of the target, so a kernel too big for the chip fails on CPU too.",
        example: "pkc run matmul.pk -p bm=4096 -p bn=4096 --target v4   // error: 16 MiB VMEM"
    }
    "PK1021" "unsupported-on-cpu" {
        what: "The kernel uses an operation the CPU reference does not implement.",
        why: "The message names the operation; the TPU path may accept the kernel.",
        example: "let y = x.astype(f8e4m3fn);   // fp8 arithmetic is not in the CPU reference"
    }
    "PK1022" "invalid-package" {
        what: "A CPU kernel manifest is malformed or does not match its .wasm (ABI version, exports, operand table).",
        why: "The .wasm and its manifest are produced together by pkc; one of them was changed or comes from another version.",
        example: "rebuild the package with pkc build"
    }
    "PK1023" "wasm-compile-failed" {
        what: "wasmtime refused to compile the kernel's .wasm.",
        why: "The module is damaged or uses features this runtime does not enable.",
        example: "rebuild the package with pkc build"
    }
    "PK1024" "host-memory-exceeded" {
        what: "The run needs more host memory than is available: its inputs, private copies of inputs the kernel writes, its outputs and one linear memory per worker, added up; or an operand's size does not even fit in a 64-bit byte count.",
        why: "Host arrays play HBM, so a kernel specialised for large shapes needs that much RAM. pk compares the sum with the cgroup's memory limit (less its usage) and MemAvailable before it allocates or reads any input, rather than let the allocation abort the process or the kernel's OOM killer end it.",
        example: "pkc run add.pk -p M=16777216 ...   // error: 192 GiB needed\npkc run add.pk -p M=16384 ..."
    }
    "PK1040" "mesh-deadlock" {
        what: "On a mesh of devices (`pkc run --mesh N`), every device that has not finished waits on a semaphore (a `sem_wait`, `remote_wait_send` or `remote_wait_recv`) and no copy in flight can signal it: the kernel would hang on the TPU. The report lists each device's blocked wait, its semaphore's value and the count it needs.",
        why: "A hung collective on a pod slice gives no message at all; the CPU mesh runs one device at a time and knows when none can move.",
        example: "sem_wait(bar, 2);   // but only one neighbour signals `bar`: error\nsem_signal(bar, 1, left); sem_signal(bar, 1, right); sem_wait(bar, 2);"
    }
    "PK1041" "semaphore-not-zero" {
        what: "A device's semaphore (plain, barrier or DMA) is not 0 when its kernel ends: a signal without its wait, a wait for fewer than were signalled, or a copy nobody waited for.",
        why: "Mosaic requires every semaphore back at 0 at the end of a kernel; the next kernel would start with a stale count and pass a wait it should block on.",
        example: "sem_signal(s, 1, peer);   // and no sem_wait(s, 1) on the peer: error"
    }
    "PK1042" "dma-window-in-flight" {
        what: "A copy read or wrote a window that a remote copy still owns: the destination before its `remote_wait_recv`, or the source before its `remote_wait_send`.",
        why: "On the TPU the copy runs while the core goes on: the destination holds old or partial data until the receive wait, and a source overwritten before the send wait is sent half old, half new.",
        example: "remote_copy_start(buf, buf, send, recv, right);\ncopy_start(x, buf, local);   // error: `buf` is still being sent\nremote_wait_send(buf, buf, send, recv, right);"
    }
    "PK1043" "unordered-remote-writes" {
        what: "Two copies write overlapping windows of one device with nothing ordering them: the second started before the receiver waited for the first. The copies come from two devices, or one device sends into the window again (a ring's next partial sum into a buffer its neighbour has not taken in).",
        why: "Which one lands last depends on the interconnect, and a receiver that has not waited for the first copy has not read it either; the result differs from run to run on the TPU. The receiver says it is done with a window by signalling a `sem` on the sender, which waits for it before sending again.",
        example: "// every device sends into y of device 0:\nremote_copy_start(x, y, send, recv, device_id(0));   // error with 2 or more senders"
    }
    "PK1044" "device-out-of-range" {
        what: "A remote copy or signal names a device id outside the mesh (negative, or at least its size).",
        why: "On the TPU the id addresses a chip that is not in the collective: the copy hangs or lands in another job's chip.",
        example: "device_id(d + 1)        // error on the last device\ndevice_id((d + 1) % n)"
    }
    "PK1045" "barrier-misuse" {
        what: "A barrier is missing or misused: a remote copy lands in the VMEM of a device, or a signal reaches a plain semaphore of a device, before that device's kernel started (no barrier made sure it had); or the barrier semaphore was signalled on the device itself.",
        why: "A device's VMEM and semaphores belong to the kernel only while it runs: before, they may still be the previous kernel's, which the copy would corrupt. The barrier semaphore of the kernel's collective id is what a device signals on its peers, and waits on, to know they have entered. A self-signal passes the barrier without any peer.",
        example: "remote_copy_start(x, buf, send, recv, right);   // error: no barrier first\nsem_signal(bar, 1, left); sem_signal(bar, 1, right); sem_wait(bar, 2);\nremote_copy_start(x, buf, send, recv, right);"
    }
    "PK1046" "mesh-mismatch" {
        what: "`--mesh` does not match the kernel: the kernel has no mesh, its mesh has another number of devices or other axis sizes, or an array is not stacked with one slice per device on its leading dimensions.",
        why: "Each device of the mesh gets its own slice of every input and writes its own slice of every output, so the arrays carry the mesh's shape ahead of the operand's.",
        example: "pkc run kernels/ppermute.pk --mesh 4 --in x=x.npy   // x is f32[4, 8, 128]"
    }
    "PK1047" "mesh-peers-missing" {
        what: "A device called a communicating kernel and its peers did not: the other devices of the kernel's mesh never reached the same call within the bound (`PK_MESH_JOIN_TIMEOUT` seconds, 60 by default). This happens when the devices of a host framework's mesh each call the kernel separately, as `jax.shard_map` on CPU does through pk's FFI handler.",
        why: "A collective needs every device of its mesh: on the TPU the devices that did call it would wait for the others' signals forever. The CPU mesh stops after the bound and names the devices that never came, instead of hanging.",
        example: "jax.lax.cond(jax.lax.axis_index(\"x\") == 0, lambda: all_gather(x), lambda: zeros)   // error\nall_gather(x)   // every device calls it"
    }
    "PK1099" "internal-error" {
        what: "The CPU reference hit a condition that should be impossible.",
        why: "This is a bug in pk, not in the kernel.",
        example: "please report it with the kernel and the command line"
    }
}

impl Error {
    /// The diagnostic for a kernel the Wasm back end could not lower.
    pub fn from_lowering(
        e: &pk_lowering::wasm::Error,
        sources: &pk_lang::span::SourceMap,
    ) -> Error {
        use pk_lowering::wasm::Error as L;
        let (src, span, at) = match e.span() {
            Some(s) if (s.file.0 as usize) < sources.files().count() => {
                let f = sources.get(s.file);
                let (file, line, col) = sources.location(s);
                (
                    Some(Arc::new(NamedSource::new(
                        f.name.clone(),
                        f.text.to_string(),
                    ))),
                    Some(SourceSpan::from(s)),
                    format!(" at {file}:{line}:{col}"),
                )
            }
            _ => (None, None, String::new()),
        };
        match e {
            L::MemoryExceeded { .. } => Error::Memory {
                message: format!("{e}{at}"),
                src,
                span,
            },
            L::Unsupported { .. } => Error::Unsupported {
                message: format!("{e}{at}"),
                src,
                span,
            },
            L::Verify { .. } | L::Internal(_) => Error::Internal(format!("{e}{at}")),
        }
    }
}
