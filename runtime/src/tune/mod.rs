//! Autotuning: the space a kernel's tunable parameters declare
//! ([`space`]), the work of one configuration counted from its Tile IR
//! ([`work`]), a performance model per TPU generation ([`model`]), a
//! budgeted search ([`search`]), the report of a tuning ([`report`]) and
//! the cache of results ([`cache`]).
//!
//! `pkc tune` drives them: it enumerates or samples the space, prunes with
//! the checker, compiles the survivors with libtpu, ranks them with one
//! evaluator and caches the best with its report; `pkc build --tuned` and
//! `pkc run --tuned` read the cache, and an identical `pkc tune` prints the
//! cached report.

pub mod cache;
pub mod count;
pub mod model;
pub mod report;
pub mod schedule;
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
        what: "No configuration `pkc tune` tried could be ranked: the checker rejected each one, libtpu refused it, its timed run did not finish within `--timeout`, or the evaluator could not run it.",
        why: "The message counts each cause and the report lists every configuration that was not ranked with its reason. Usually the shapes given with `-p` are not multiples of any candidate block size, every candidate overflows VMEM for the target, or (`--eval cpu`) the kernel does not finish on the CPU reference within the limit of each run.",
        example: "pkc tune kernels/matmul.pk -p M=1000 -t v5e   // error: no block divides 1000\npkc tune kernels/matmul.pk -p M=1024 -t v5e\npkc tune k.pk --eval cpu --timeout 1   // error: 2 timed out after 1 s\npkc tune k.pk --eval cpu --timeout 60",
    },
    Explanation {
        code: "PK6003",
        title: "tuning-cache-unwritable",
        what: "`pkc tune` cannot write to the tuning cache directory; it checks before it tunes anything.",
        why: "Results are written to `--tuned-cache DIR`, else `$PK_TUNE_CACHE`, else `tune` under pk's cache root (`$PK_CACHE_DIR`, else `$XDG_CACHE_HOME/pk`, else `~/.cache/pk`), atomically (a temporary file renamed into place); the directory must be creatable and writable, and one of those must be set.",
        example: "pkc tune k.pk --tuned-cache /proc/x   // error, before any configuration is built\npkc tune k.pk --tuned-cache /tmp/pk-tune",
    },
    Explanation {
        code: "PK6004",
        title: "tpu-evaluator-other-generation",
        what: "`pkc tune --eval tpu` times candidates on the TPU attached to this host, and a `--target` asked for is another generation.",
        why: "A timing measures the chip it ran on: a v5e cannot time a kernel built for a v6e. The host's generation is the target whose libtpu topology has the device kind of the host's TPU. Other generations are ranked without their chip by the performance model (`--eval model`), or tuned on a host that has one.",
        example: "pkc tune k.pk --eval tpu --target v6e   // error on a v5e host\npkc tune k.pk --eval tpu --target v5e",
    },
    Explanation {
        code: "PK6005",
        title: "ray-unavailable",
        what: "`pkc tune --ray` could not run its Ray driver: the Python it uses (`$PK_PYTHON`, else `python3`) is missing or cannot import `ray`.",
        why: "The sweep's libtpu compiles are sent to the cluster by a small driver shipped inside pkc, run with that Python; it needs the `ray` package, the same version as the cluster's.",
        example: "PK_PYTHON=/usr/bin/python3 pkc tune k.pk --ray 10.0.0.2:6379   // error without ray\npython3 -m pip install ray && pkc tune k.pk --ray 10.0.0.2:6379",
    },
    Explanation {
        code: "PK6006",
        title: "ray-cluster-unreachable",
        what: "`pkc tune --ray ADDRESS` could not connect to a Ray cluster at that address, or the cluster has no CPU to run tasks on.",
        why: "ADDRESS is the `HOST:PORT` of a running head (`ray start --head` prints it), or `auto` on a node of the cluster; tasks need at least one CPU resource among the nodes.",
        example: "pkc tune k.pk --ray 127.0.0.1:1   // error: nothing listens there\nray start --head --port 6379 && pkc tune k.pk --ray 127.0.0.1:6379",
    },
    Explanation {
        code: "PK6007",
        title: "ray-task-failed",
        what: "A Ray task of `pkc tune --ray` failed on its node: pkc was not found there, libtpu could not be loaded, or the task died.",
        why: "Each task runs `pkc tune-worker` on its node with pkc at the same path as on the machine that started the sweep (or `$PK_RAY_PKC`), and libtpu where that pkc finds it (`$PK_LIBTPU` or pk's cache); the message names the node.",
        example: "pkc tune k.pk --ray head:6379   // error: no pkc at /opt/pk/bin/pkc on host worker-3\nPK_RAY_PKC=/shared/pk/bin/pkc pkc tune k.pk --ray head:6379",
    },
    Explanation {
        code: "PK6008",
        title: "damaged-tuning-cache-entry",
        what: "A warning: the tuning cache holds a file for this request that is not a usable entry. It cannot be read, is not an entry's JSON, was written for another request (another kernel, target, evaluator, source or value of a parameter that is not tuned), or its best configuration sets a parameter that is not tuned or a value that is not a candidate. The file is not used.",
        why: "An entry's file name is the hash of its request, and its contents say which request it answers; a file whose contents disagree was damaged, edited or copied over another. Using it could change a parameter the request fixed (a shape or dtype), so `pkc tune` tunes again and replaces it, and `pkc build --tuned` and `pkc run --tuned` use the defaults (or an entry of another evaluator) and say so.",
        example: "pkc build --tuned kernels/matmul.pk   // warning[PK6008]: ... written for the fixed parameters `M=2048 ...`, not `M=1024 ...`\npkc tune kernels/matmul.pk              // replaces the entry",
    },
];
