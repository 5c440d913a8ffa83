//! Errors of kernel packages: reading, verifying and writing them. Codes
//! `PK3001..PK3099`.

use pk_lang::diag::Explanation;

/// Everything that can make a kernel package unusable, or keep one from
/// being written. Paths are shown as given, so the message names the file a
/// user can look at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum PackageError {
    #[error("{dir} is not a kernel package: {reason}")]
    #[diagnostic(
        code(PK3001),
        help("build one with `pkc build FILE -o DIR`; a package is a directory holding manifest.json")
    )]
    NotAPackage { dir: String, reason: String },

    #[error("{path} is not a valid package manifest: {message}")]
    #[diagnostic(
        code(PK3002),
        help("the file was damaged or edited by hand; rebuild the package with `pkc build`")
    )]
    InvalidManifest { path: String, message: String },

    #[error("{dir} has package format `{found}`; this pk reads `{expected}`")]
    #[diagnostic(
        code(PK3003),
        help("rebuild the package with this pk version (`pkc build`)")
    )]
    UnsupportedFormat {
        dir: String,
        found: String,
        expected: String,
    },

    #[error("{dir} is missing `{file}`, which its manifest lists")]
    #[diagnostic(
        code(PK3004),
        help("a package is complete or not at all; rebuild it with `pkc build`")
    )]
    MissingFile { dir: String, file: String },

    #[error(
        "`{file}` in {dir} does not match its manifest: sha256 {found} ({found_bytes} bytes), \
         expected {expected} ({expected_bytes} bytes)"
    )]
    #[diagnostic(
        code(PK3005),
        help(
            "the file was changed or damaged after the build; rebuild the package with `pkc build`"
        )
    )]
    HashMismatch {
        dir: String,
        file: String,
        expected: String,
        expected_bytes: u64,
        found: String,
        found_bytes: u64,
    },

    #[error("`{file}` in {dir} is {bytes} bytes, more than the {limit}-byte limit")]
    #[diagnostic(
        code(PK3006),
        help("no file pk writes comes near the limit; the package is damaged or not a pk package")
    )]
    FileTooLarge {
        dir: String,
        file: String,
        bytes: u64,
        limit: u64,
    },

    #[error("{dir} holds `{file}`, which {reason}")]
    #[diagnostic(
        code(PK3007),
        help("a package holds exactly the files its manifest lists; remove the file or rebuild the package")
    )]
    UnexpectedFile {
        dir: String,
        file: String,
        reason: String,
    },

    #[error("cannot read {path}: {message}")]
    #[diagnostic(code(PK3008), help("check the path and its permissions"))]
    Read { path: String, message: String },

    #[error("cannot write the package {path}: {message}")]
    #[diagnostic(
        code(PK3009),
        help("check that the output directory is writable and the disk is not full; any package already there is unchanged")
    )]
    Write { path: String, message: String },

    #[error("{dest} exists and is not a kernel package ({reason}); pk does not replace it")]
    #[diagnostic(
        code(PK3010),
        help("choose another output directory with `-o`, or remove {dest} first")
    )]
    NotReplaceable { dest: String, reason: String },

    #[error("the manifest of {dir} is inconsistent: {message}")]
    #[diagnostic(
        code(PK3011),
        help("the manifest was edited by hand or written by another tool; rebuild the package with `pkc build`")
    )]
    Inconsistent { dir: String, message: String },

    #[error("{dir} has no CPU reference: `{kernel}` was built without kernel.wasm")]
    #[diagnostic(
        code(PK3012),
        help("the CPU reference cannot run this kernel (`pkc build` warned which operation); run the package on a TPU")
    )]
    NoCpuReference { dir: String, kernel: String },

    #[error("{dir} is not what its source builds to: {message}")]
    #[diagnostic(
        code(PK3013),
        help("the package was edited after the build (its hashes updated to match) or built by another pk; rebuild it with `pkc build`")
    )]
    NotItsBuild { dir: String, message: String },

    #[error("{dest} would be written inside the kernel package {package}")]
    #[diagnostic(
        code(PK3014),
        help("`-o` names the directory that receives packages, such as `build`, not a package; a package holds only the files its manifest lists")
    )]
    InsideAPackage { dest: String, package: String },

    #[error("`{first}` and `{second}` both produce the package `{name}`; nothing was written")]
    #[diagnostic(
        code(PK3015),
        help("build them with different -o directories, or give one of them other parameters with -p")
    )]
    DuplicatePackage {
        name: String,
        first: String,
        second: String,
    },
}

/// The long form of every `PK30xx` code, for `pkc explain`.
///
/// `PK3012` is also a warning of `pkc build` about the package being built
/// (see `package::build`).
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK3001",
        title: "not-a-package",
        what: "The directory given as a kernel package does not exist, is not a directory, or \
               has no manifest.json.",
        why: "A kernel package is the directory `pkc build` writes for one kernel \
              specialisation; its manifest.json says what the other files are.",
        example: "$ pkc build kernels/add.pk -o build      # writes build/add/\n\
                  $ ls build/add\n\
                  aot  kernel.mosaic.mlir  kernel.stablehlo.mlir  kernel.wasm  kernel.wasm.json  manifest.json",
    },
    Explanation {
        code: "PK3002",
        title: "invalid-manifest",
        what: "manifest.json (or a JSON file it lists, such as kernel.wasm.json or an AOT \
               report) is not valid JSON or lacks a field pk needs.",
        why: "pk loads a package only when its description is complete; guessing at a damaged \
              manifest could run the wrong kernel.",
        example: "$ pkc build kernels/add.pk -o build   # rebuild the package",
    },
    Explanation {
        code: "PK3003",
        title: "unsupported-package-format",
        what: "The manifest's `format` is not the package format this pk reads (`pk-package/1`).",
        why: "The format string changes whenever the layout or meaning of a package changes, so \
              a package is never misread by a pk that does not know its layout.",
        example: "$ pkc build kernels/add.pk -o build   # rebuild with this pk",
    },
    Explanation {
        code: "PK3004",
        title: "package-file-missing",
        what: "A file that the manifest lists (the StableHLO or Mosaic module, the Wasm \
               reference, an AOT executable or report) is not in the package.",
        why: "`pkc build` writes a package completely or not at all, so a missing file means it \
              was removed afterwards.",
        example: "$ rm build/add/kernel.mosaic.mlir\n\
                  error[PK3004]: build/add is missing `kernel.mosaic.mlir`, which its manifest lists\n\
                  $ pkc build kernels/add.pk -o build",
    },
    Explanation {
        code: "PK3005",
        title: "package-hash-mismatch",
        what: "A package file's SHA-256 differs from the one its manifest records.",
        why: "Every file is hashed when the package is written and verified when it is opened, \
              so a damaged download or an edited module is caught before it is compiled or run.",
        example: "$ echo >> build/add/kernel.stablehlo.mlir\n\
                  error[PK3005]: `kernel.stablehlo.mlir` in build/add does not match its manifest ...\n\
                  $ pkc build kernels/add.pk -o build",
    },
    Explanation {
        code: "PK3006",
        title: "package-file-too-large",
        what: "A package file is larger than pk's limit (4 MiB for manifest.json, 256 MiB for any \
               other file).",
        why: "The limit keeps a wrong path or a hostile package from exhausting memory; kernel \
              modules and executables are far smaller.",
        example: "Check that the directory is a package written by `pkc build`.",
    },
    Explanation {
        code: "PK3007",
        title: "unexpected-package-file",
        what: "The package directory holds a file its manifest does not list, or an entry that \
               is not a regular file (a symbolic link, a device).",
        why: "A package is exactly what its manifest describes and hashes; an extra executable \
              or a link pointing outside the package could be picked up unverified.",
        example: "$ cp other.pjrt build/add/aot/v4.pjrt\n\
                  error[PK3007]: build/add holds `aot/v4.pjrt`, which its manifest does not list\n\
                  $ pkc build kernels/add.pk --target v4 --aot -o build",
    },
    Explanation {
        code: "PK3008",
        title: "package-read-failed",
        what: "The operating system refused to read a package file.",
        why: "Usually a permission problem or a file being replaced while it was read.",
        example: "$ ls -l build/add   # check permissions",
    },
    Explanation {
        code: "PK3009",
        title: "package-write-failed",
        what: "Writing the new package failed (no space, no permission, a read-only file \
               system).",
        why: "The package is written in a temporary directory next to its destination and moved \
              into place only when complete, so a failure leaves any older package as it was \
              and removes the partial one.",
        example: "$ pkc build kernels/add.pk -o /read-only\n\
                  error[PK3009]: cannot write the package /read-only/add: Read-only file system\n\
                  $ pkc build kernels/add.pk -o build",
    },
    Explanation {
        code: "PK3010",
        title: "destination-not-a-package",
        what: "The package's destination exists and is neither a kernel package nor an empty \
               directory.",
        why: "Writing a package replaces its destination whole; pk replaces only an older \
              package, never a directory or file it did not write.",
        example: "$ pkc build kernels/add.pk -o src     # src/add exists and holds other files\n\
                  $ pkc build kernels/add.pk -o build",
    },
    Explanation {
        code: "PK3011",
        title: "inconsistent-manifest",
        what: "The manifest parses but contradicts itself: an unknown target or dtype, a file \
               name outside the package, or a listed artifact without its file.",
        why: "Tools that load packages (pk's runtime, a PJRT host) trust the manifest's \
              description of the kernel; pk checks it whole before handing it out.",
        example: "$ pkc build kernels/add.pk -o build   # rebuild the package",
    },
    Explanation {
        code: "PK3012",
        title: "no-cpu-reference",
        what: "A warning of `pkc build`: the kernel could not be lowered to WebAssembly, so the \
               package has no CPU reference (kernel.wasm). The TPU artifacts are complete. \
               `pkc run`, `pkc test` and `pkc bench` refuse such a package with the same code.",
        why: "The CPU reference implements most, not all, of the language; a kernel it cannot \
              run is still a valid TPU kernel. The warning says which operation is missing.",
        example: "warning[PK3012]: no CPU reference for `k`: ... is not supported by the CPU reference\n\
                  The package runs on TPU; `pkc run` needs kernel.wasm:\n\
                  error[PK3012]: build/k has no CPU reference: `k` was built without kernel.wasm",
    },
    Explanation {
        code: "PK3013",
        title: "package-not-its-build",
        what: "A file of the package, or the manifest's description of the kernel, differs from \
               what pk builds from the kernel source the package carries (in kernel.wasm.json) \
               with the manifest's parameters and targets. The message names the first \
               difference (a file, or a field such as `refs[2].offset`).",
        why: "The CPU reference runs the module with the layout, block sizes and call tables of \
              its side table; one that contradicts the module could compute wrong values or \
              reach past a buffer. Hashes cannot catch an edit whose hashes were updated too, \
              so pk builds the kernel again and compares every file but the AOT executables \
              (which are checked against their compile reports). A package built by another \
              pk version differs too.",
        example: "$ pkc verify build/add      # kernel.wasm.json edited, its hash recomputed\n\
                  error[PK3013]: build/add is not what its source builds to: in `kernel.wasm.json`, \
                  `operands[0].block[0]` is 16, the build has 8\n\
                  $ pkc build kernels/add.pk -o build",
    },
    Explanation {
        code: "PK3014",
        title: "output-inside-a-package",
        what: "`pkc build -o DIR` was given a kernel package (or a directory inside one) as DIR, \
               so the new package would be written inside another package.",
        why: "A package holds exactly the files its manifest lists; a package nested in it \
              would make the outer one fail verification (PK3007). `-o` names the directory \
              that receives packages.",
        example: "$ pkc build kernels/add.pk -o build/add\n\
                  error[PK3014]: build/add/add would be written inside the kernel package build/add\n\
                  $ pkc build kernels/add.pk -o build      # writes build/add",
    },
    Explanation {
        code: "PK3015",
        title: "duplicate-package",
        what: "Two kernels of one `pkc build` (from different files, or a file given twice) have \
               the same package name: the kernel name and the parameters set with -p.",
        why: "The second package would replace the first. pk finds this before writing \
              anything, so a failed build leaves the output directory as it was.",
        example: "$ pkc build a/add.pk b/add.pk -o build\n\
                  error[PK3015]: `a/add.pk` and `b/add.pk` both produce the package `add`; nothing was written\n\
                  $ pkc build a/add.pk -o build/a && pkc build b/add.pk -o build/b",
    },
];

/// The explanation of a `PK30xx` code, to attach to a diagnostic.
pub(crate) fn explanation(code: &str) -> &'static Explanation {
    EXPLANATIONS
        .iter()
        .find(|e| e.code == code)
        .unwrap_or(&EXPLANATIONS[0])
}
