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
];
