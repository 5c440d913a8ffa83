//! Errors of the command line itself (`PK4xxx`): flags that are repeated,
//! conflict, or do not apply to what they are given with. Each is a
//! miette diagnostic with a code, a help line and an explanation for
//! `pkc explain`, like every other error of pk.

use super::common::{EXIT_ERRORS, EXIT_USAGE};
use pk_lang::diag::Explanation;

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum UsageError {
    #[error("`{flag} {name}=...` is given more than once")]
    #[diagnostic(
        code(PK4001),
        help("give each name once; pk does not guess which one you meant")
    )]
    Repeated { flag: String, name: String },

    #[error("{flag} does not apply {context}")]
    #[diagnostic(code(PK4002), help("{hint}"))]
    NotApplicable {
        flag: String,
        context: String,
        hint: String,
    },

    #[error("outputs `{first}` and `{second}` are both written to `{path}`")]
    #[diagnostic(code(PK4003), help("give each output its own file"))]
    SameDestination {
        first: String,
        second: String,
        path: String,
    },

    #[error("`{file}` defines no kernel")]
    #[diagnostic(code(PK4004), help("a kernel starts with `kernel NAME<...>(...)`; modules of functions are used from kernels with `use`"))]
    NoKernel { file: String },

    #[error("`{file}` defines several kernels ({names})")]
    #[diagnostic(code(PK4005), help("choose one with --kernel NAME"))]
    SeveralKernels { file: String, names: String },

    #[error("`{first}=-` and `{second}=-` both read standard input")]
    #[diagnostic(
        code(PK4006),
        help("standard input holds one .npy file; give the other inputs as files")
    )]
    StdinTwice { first: String, second: String },
}

impl UsageError {
    /// Prints the error and returns its exit code: 2 for the command line,
    /// 1 for a file that holds nothing to run.
    pub fn report(&self) -> u8 {
        super::ui::print_diagnostic(self);
        match self {
            UsageError::NoKernel { .. } => EXIT_ERRORS,
            _ => EXIT_USAGE,
        }
    }
}

/// The long form of every `PK40xx` code.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK4001",
        title: "repeated-flag",
        what: "A `NAME=VALUE` flag (`-p`, `--in`, `--out`, `--expect`) names the same \
               parameter or operand twice.",
        why: "Only one value can be used, and which one the user meant is a guess; pk does not \
              guess.",
        example: "$ pkc check kernels/add.pk -p M=16 -p M=32     # PK4001\n\
                  $ pkc check kernels/add.pk -p M=32             # fixed",
    },
    Explanation {
        code: "PK4002",
        title: "flag-does-not-apply",
        what: "A flag was given where it has no effect: `-p`, `-t` or `-k` with a built \
               package (one fixed specialisation), a CPU reference option with \
               `--device tpu`, `--libtpu` without `--aot` or `--device tpu`.",
        why: "A flag that is silently ignored makes a run look like something it is not.",
        example: "$ pkc run build/add -p M=32 --in x=x.npy ...   # PK4002\n\
                  $ pkc run kernels/add.pk -p M=32 --in x=x.npy  # choose parameters from the source",
    },
    Explanation {
        code: "PK4003",
        title: "outputs-share-a-file",
        what: "Two `--out` flags write different outputs to the same file.",
        why: "The second would replace the first; one of them would be lost.",
        example: "$ pkc run k.pk --out a=o.npy --out b=o.npy     # PK4003\n\
                  $ pkc run k.pk --out a=a.npy --out b=b.npy     # fixed",
    },
    Explanation {
        code: "PK4004",
        title: "no-kernel",
        what: "The file given to run, test, bench or emit defines no kernel.",
        why: "Only kernels run; a file of functions is a module for other files to `use`.",
        example: "$ pkc run std/math.pk       # PK4004: a module\n\
                  $ pkc run kernels/add.pk    # a kernel",
    },
    Explanation {
        code: "PK4005",
        title: "several-kernels",
        what: "The file defines several kernels and the command runs one.",
        why: "pk runs exactly the kernel asked for.",
        example: "$ pkc run two.pk ...              # PK4005\n\
                  $ pkc run two.pk --kernel fwd ... # fixed",
    },
    Explanation {
        code: "PK4006",
        title: "stdin-read-twice",
        what: "Two `--in NAME=-` (or `--expect NAME=-`) flags ask for two arrays from standard input.",
        why: "`-` reads one .npy file from standard input, and a stream can be read only \
              once; which bytes would belong to which input is a guess.",
        example: "$ cat x.npy | pkc run add.pk --in x=- --in y=-          # PK4006\n\
                  $ cat x.npy | pkc run add.pk --in x=- --in y=y.npy      # fixed",
    },
];
