//! Autotuning: the space a kernel's tunable parameters declare
//! ([`space`]), the work of one configuration counted from its Tile IR
//! ([`work`]), a performance model per TPU generation ([`model`]), a
//! budgeted search ([`search`]) and the cache of results ([`cache`]).
//!
//! `pkc tune` drives them: it enumerates or samples the space, prunes with
//! the checker, compiles the survivors with libtpu, ranks them with one
//! evaluator and caches the best; `pkc build --tuned` and `pkc run
//! --tuned` read the cache.

pub mod cache;
pub mod count;
pub mod model;
pub mod search;
pub mod space;
pub mod work;

use pk_lang::diag::Explanation;

/// The codes of the tuner's errors.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK6001",
        title: "nothing-to-tune",
        what: "`pkc tune` was given a kernel with no tunable parameter left to choose: none declares candidates, or `-p` fixes every one that does.",
        why: "The tuner searches the values a parameter declares with `in [...]`, `in lo..=hi step s` or `in pow2(lo, hi)`; without any there is one configuration and nothing to rank.",
        example: "kernel k<bm = 256>(...)   // error with pkc tune\nkernel k<bm = 256 in [128, 256, 512]>(...)",
    },
    Explanation {
        code: "PK6002",
        title: "every-configuration-pruned",
        what: "Every configuration `pkc tune` tried was rejected by the checker (or by libtpu), so none is left to rank.",
        why: "The report lists how many configurations each diagnostic code rejected; usually the shapes given with `-p` are not multiples of any candidate block size, or every candidate overflows VMEM for the target.",
        example: "pkc tune kernels/matmul.pk -p M=1000 -t v5e   // error: no block divides 1000\npkc tune kernels/matmul.pk -p M=1024 -t v5e",
    },
    Explanation {
        code: "PK6003",
        title: "tuning-cache-unwritable",
        what: "`pkc tune` could not write its result to the tuning cache directory.",
        why: "Results are written to `--tuned-cache DIR`, else `$PK_TUNE_CACHE`, else `~/.cache/pk/tune`, atomically (a temporary file renamed into place); the directory must be creatable and writable.",
        example: "pkc tune k.pk --tuned-cache /proc/x   // error\npkc tune k.pk --tuned-cache /tmp/pk-tune",
    },
    Explanation {
        code: "PK6004",
        title: "tpu-evaluator-unavailable",
        what: "`pkc tune --eval tpu` needs a TPU attached to this host, and this build of pk does not yet time kernels on one.",
        why: "Timing on the device is the only evaluator that measures the chip itself; on a machine without a TPU, `--eval model` predicts times from public per-generation figures and `--eval cpu` times the CPU reference.",
        example: "pkc tune k.pk --eval tpu   // error on a CPU-only host\npkc tune k.pk --eval model",
    },
];
