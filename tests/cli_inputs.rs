//! What pk reads from a user: sources, modules, `.npy` inputs (from files
//! or standard input) and StableHLO modules. Sizes and headers are checked
//! before anything large is read, devices that never end are refused, and
//! an input is held once in memory. Peak memory is measured with
//! `/usr/bin/time` (its maximum resident set size), or bounded with
//! `prlimit --as`, as a user in a small container meets it.

mod common;

use common::{code, codes_in, pkc, pkc_in, root, stderr, stdout, TempDir};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `pkc` run under `prlimit --as=BYTES` (an address-space limit: an
/// allocation past it fails, as in a small container).
fn pkc_limited(dir: &Path, limit: u64, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = Command::new("prlimit")
        .arg(format!("--as={limit}"))
        .arg(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("prlimit runs pkc");
    (o, t.elapsed())
}

/// `pkc` with `stdin` as its standard input.
fn pkc_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pkc starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // pkc may stop reading early (an error); a broken pipe is fine.
        let _ = pipe.write_all(&data);
    });
    let o = child.wait_with_output().expect("pkc exits");
    writer.join().expect("writer");
    o
}

/// `pkc`'s exit code and peak resident memory in KiB, by `/usr/bin/time`.
fn peak_kib(dir: &Path, args: &[&str]) -> (Output, u64) {
    let report = dir.join("time.txt");
    let o = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .output()
        .expect("time runs pkc");
    let text = std::fs::read_to_string(&report).expect("time's report");
    let kib = text
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no peak in {text:?}"));
    (o, kib)
}

/// The `.npy` header numpy writes for `descr` and `shape`, padded so the
/// data starts on a 64-byte boundary.
fn npy_header(descr: &str, fortran: bool, shape: &[usize]) -> Vec<u8> {
    let dims = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let order = if fortran { "True" } else { "False" };
    raw_header(&format!(
        "{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {dims}, }}"
    ))
}

/// A version 1.0 `.npy` lead and `dict` text, padded as numpy pads.
fn raw_header(dict: &str) -> Vec<u8> {
    let mut h = dict.to_string();
    let total = 10 + h.len() + 1;
    h.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out
}

fn f32_npy(shape: &[usize], values: &[f32]) -> Vec<u8> {
    let mut b = npy_header("<f4", false, shape);
    for v in values {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    let hlen = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    bytes[10 + hlen..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `add.pk` specialised to 8 x 128 with one block.
const ADD_SMALL: [&str; 9] = [
    "-p",
    "M=8",
    "-p",
    "N=128",
    "-p",
    "bm=8",
    "-p",
    "bn=128",
    "--threads=1",
];

fn add_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run", "add.pk"];
    v.extend(ADD_SMALL);
    v.extend(extra);
    v
}

/// A directory with `add.pk` in it.
fn add_dir(tag: &str) -> TempDir {
    let d = TempDir::new(tag);
    std::fs::copy(root().join("kernels/add.pk"), d.path().join("add.pk")).expect("copy add.pk");
    d
}

/// Every command that reads a user's file refuses `/dev/zero` at once,
/// with a code, under an address-space limit of 1 GiB that reading it
/// whole would break.
#[test]
fn dev_zero_is_refused_everywhere_without_reading_it() {
    let d = add_dir("zero");
    std::fs::copy(root().join("kernels/matmul.pk"), d.path().join("matmul.pk")).expect("copy");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero.pk")).expect("link");
    d.file(
        "uses.pk",
        b"use zero;\nkernel k(x: f32[8, 128]) -> y: f32[8, 128] { y[..] = x[..]; }\n",
    );
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["check", "/dev/zero"],
            "PK0009",
            "it is a character device, not a file",
        ),
        (
            vec!["check", "uses.pk"],
            "PK0009",
            "cannot read module `zero.pk`: it is a character device, not a file",
        ),
        (
            vec!["aot", "/dev/zero"],
            "PK0009",
            "it is a character device, not a file",
        ),
        (
            add_args(&["--in", "x=/dev/zero", "--in", "y=/dev/zero"]),
            "PK1001",
            "it is a character device, not a file",
        ),
        (
            vec![
                "tune",
                "matmul.pk",
                "-p",
                "M=512",
                "-p",
                "N=512",
                "-p",
                "K=512",
                "--no-aot",
                "--in",
                "a=/dev/zero",
            ],
            "PK1001",
            "it is a character device, not a file",
        ),
    ];
    for (args, want, text) in cases {
        let (o, took) = pkc_limited(d.path(), 1 << 30, &args);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{args:?}: {err}");
        assert!(
            codes_in(&err).contains(&want.to_string()),
            "{args:?}: {err}"
        );
        assert!(err.contains(text), "{args:?}: {err}");
        assert!(took < Duration::from_secs(20), "{args:?}: {took:?}");
    }
}

/// A 1 GiB `.npy` of the wrong shape is refused from its header: the run
/// stays within 256 MiB of address space beyond what wasmtime reserves,
/// and says PK1004. (The file is sparse: it takes no disk.)
#[test]
fn a_wrong_shape_is_refused_before_the_data_is_read() {
    let d = add_dir("shape");
    let path = d.path().join("big.npy");
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(&npy_header("<f4", false, &[16384, 16384]))
        .expect("header");
    f.set_len(f.metadata().expect("len").len() + (1 << 30))
        .expect("sparse");
    d.file("y.npy", &f32_npy(&[8, 128], &[0.0; 1024]));
    let (o, peak) = peak_kib(
        d.path(),
        &add_args(&["--in", "x=big.npy", "--in", "y=y.npy"]),
    );
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert_eq!(codes_in(&err), ["PK1004"], "{err}");
    assert!(err.contains("[16384, 16384]"), "{err}");
    assert!(
        peak < 200 << 10,
        "peak {peak} KiB reading a 1 GiB file's header"
    );
}

/// A row sum over a 256 MiB input: the input is held once, so the run's
/// peak memory exceeds that of the same run on a 32 KiB input by about
/// the input's size, not twice it (as when the file was read whole and
/// then copied). The sums are checked against values worked out by hand.
#[test]
fn an_input_is_held_once() {
    let d = TempDir::new("once");
    d.file(
        "rowsum.pk",
        b"kernel rowsum<M, N = 1024, bm = 256>(\n    x: f32[M, N] block [bm, N] at (i, 0),\n) -> s: f32[M, 1] block [bm, 1] at (i, 0)\ngrid (i in M / bm parallel)\n{\n    s[..] = sum(x[..], axis=1, keepdims=true);\n}\n",
    );
    let run = |rows: usize, tag: &str| {
        // Row r holds 1024 copies of r % 7: its sum is 1024 * (r % 7),
        // exact in f32.
        let name = format!("x{tag}.npy");
        let path = d.path().join(&name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        f.write_all(&npy_header("<f4", false, &[rows, 1024]))
            .expect("header");
        for r in 0..rows {
            let v = ((r % 7) as f32).to_le_bytes();
            f.write_all(&v.repeat(1024)).expect("row");
        }
        drop(f);
        let m = format!("M={rows}");
        let x = format!("x={name}");
        let out = format!("s=s{tag}.npy");
        let (o, peak) = peak_kib(
            d.path(),
            &[
                "run",
                "rowsum.pk",
                "-p",
                &m,
                "--in",
                &x,
                "--out",
                &out,
                "--threads=1",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let s = f32s(&std::fs::read(d.path().join(format!("s{tag}.npy"))).expect("output"));
        let want: Vec<f32> = (0..rows).map(|r| 1024.0 * (r % 7) as f32).collect();
        assert_eq!(s, want);
        std::fs::remove_file(&path).expect("remove");
        peak
    };
    let small = run(256, "small");
    let rows = 65536; // 256 MiB of f32
    let big = run(rows, "big");
    let input_kib = (rows * 1024 * 4 / 1024) as u64;
    assert!(
        big - small < input_kib * 5 / 4,
        "peak {big} KiB against {small} KiB for a {input_kib} KiB input"
    );
}

/// `--in NAME=-` reads one `.npy` from standard input, checked and used
/// like a file: x from stdin plus y from a file gives x + y.
#[test]
fn an_input_from_stdin() {
    let d = add_dir("stdin");
    let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..1024).map(|i| 0.5 - i as f32 * 2.0).collect();
    d.file("y.npy", &f32_npy(&[8, 128], &y));
    let o = pkc_stdin(
        d.path(),
        &add_args(&["--in", "x=-", "--in", "y=y.npy", "--out", "z=z.npy"]),
        &f32_npy(&[8, 128], &x),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let z = f32s(&std::fs::read(d.path().join("z.npy")).expect("z"));
    let want: Vec<f32> = (0..1024).map(|i| 0.5 - i as f32).collect();
    assert_eq!(z, want);
    // The header is checked as a file's is, and named as standard input.
    let o = pkc_stdin(
        d.path(),
        &add_args(&["--in", "x=-", "--in", "y=y.npy"]),
        &f32_npy(&[4, 128], &x[..512]),
    );
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK1004"], "{err}");
    assert!(err.contains("<stdin>"), "{err}");
    // Stdout can take an output while stdin gives an input.
    let o = pkc_stdin(
        d.path(),
        &add_args(&["--in", "x=-", "--in", "y=y.npy", "--out", "z=-"]),
        &f32_npy(&[8, 128], &x),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(f32s(&o.stdout), want);
}

/// Standard input holds one file: two inputs from it are a usage error,
/// and `pkc tune`, which reads its inputs once per configuration, refuses
/// it.
#[test]
fn stdin_is_read_at_most_once() {
    let d = add_dir("stdin2");
    let o = pkc_stdin(d.path(), &add_args(&["--in", "x=-", "--in", "y=-"]), b"");
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert_eq!(codes_in(&err), ["PK4006"], "{err}");
    assert!(
        err.contains("`--in x=-` and `--in y=-` both read standard input"),
        "{err}"
    );
    let o = pkc_stdin(
        d.path(),
        &["tune", "add.pk", "--no-aot", "--in", "x=-"],
        b"",
    );
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert_eq!(codes_in(&err), ["PK4002"], "{err}");
    let o = pkc(&["explain", "PK4006"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("stdin-read-twice"), "{}", stdout(&o));
}

/// Header dicts are read as numpy 2.4's `np.load` reads them (checked
/// there on these very bytes): double quotes, a repeated key taking its
/// last value, a comment; an extra key and a non-bool `fortran_order` are
/// refused, as numpy refuses them.
#[test]
fn npy_headers_are_read_as_numpy_reads_them() {
    let d = add_dir("headers");
    let vals: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    d.file("y.npy", &f32_npy(&[8, 128], &[1.0; 1024]));
    let read = [
        r#"{"descr": "<f4", "fortran_order": False, "shape": (8, 128)}"#,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1024,), 'shape': (8, 128)}",
        "{'descr': '<f4', 'fortran_order': True, 'shape': (8, 128), 'fortran_order': False}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 128,),} # c",
    ];
    for (k, h) in read.iter().enumerate() {
        let mut b = raw_header(h);
        b.extend_from_slice(&data);
        d.file("x.npy", &b);
        let out = format!("z=z{k}.npy");
        let o = pkc_in(
            d.path(),
            &add_args(&["--in", "x=x.npy", "--in", "y=y.npy", "--out", &out]),
        );
        assert_eq!(code(&o), 0, "{h}: {}", stderr(&o));
        let z = f32s(&std::fs::read(d.path().join(format!("z{k}.npy"))).expect("z"));
        let want: Vec<f32> = vals.iter().map(|v| v + 1.0).collect();
        assert_eq!(z, want, "{h}");
    }
    let refused = [
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 128), 'extra': 1}",
            "keys are ['descr', 'extra', 'fortran_order', 'shape']",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (8, 128)}",
            "fortran_order is not a valid bool: 0",
        ),
    ];
    for (h, text) in refused {
        let mut b = raw_header(h);
        b.extend_from_slice(&data);
        d.file("x.npy", &b);
        let o = pkc_in(d.path(), &add_args(&["--in", "x=x.npy", "--in", "y=y.npy"]));
        let err = stderr(&o);
        assert_eq!(codes_in(&err), ["PK1002"], "{h}: {err}");
        assert!(err.contains(text), "{h}: {err}");
    }
}

/// A Fortran-order header with 20,000 length-1 dimensions is refused at
/// once (numpy's limit is 64 dimensions), and a Fortran-order array is
/// read in C order.
#[test]
fn fortran_order_headers_are_bounded() {
    let d = add_dir("fortran");
    d.file("y.npy", &f32_npy(&[8, 128], &[0.0; 1024]));
    let mut shape = vec![1usize; 20_000];
    shape.extend([8, 128]);
    let mut b = npy_header("<f4", true, &shape);
    b.extend_from_slice(&[0u8; 4096]);
    d.file("x.npy", &b);
    let t = Instant::now();
    let o = pkc_in(d.path(), &add_args(&["--in", "x=x.npy", "--in", "y=y.npy"]));
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK1002"], "{err}");
    assert!(err.contains("numpy allows at most 64"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // The same [8, 128] in Fortran order: element (r, c) is stored at
    // r + 8 * c. Each value is its C-order index, so x + 0 lists 0..1024.
    let mut b = npy_header("<f4", true, &[8, 128]);
    for c in 0..128 {
        for r in 0..8 {
            b.extend_from_slice(&((r * 128 + c) as f32).to_le_bytes());
        }
    }
    d.file("xf.npy", &b);
    let o = pkc_in(
        d.path(),
        &add_args(&["--in", "x=xf.npy", "--in", "y=y.npy", "--out", "z=z.npy"]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let z = f32s(&std::fs::read(d.path().join("z.npy")).expect("z"));
    assert_eq!(z, (0..1024).map(|i| i as f32).collect::<Vec<_>>());
}

/// A UTF-8 byte-order mark at the start of a source or a module is
/// dropped, and columns on the first line still count from its first
/// character.
#[test]
fn a_bom_is_accepted_and_spans_stay_right() {
    let d = TempDir::new("bom");
    let add = std::fs::read(root().join("kernels/add.pk")).expect("add.pk");
    let mut with_bom = b"\xef\xbb\xbf".to_vec();
    with_bom.extend_from_slice(&add);
    d.file("add.pk", &with_bom);
    let o = pkc_in(d.path(), &["check", "add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    d.file("m.pk", b"\xef\xbb\xbffn twice(x) { x + x }\n");
    d.file(
        "uses.pk",
        b"use m::{twice};\nkernel k(x: f32[8, 128]) -> y: f32[8, 128] { y[..] = twice(x[..]); }\n",
    );
    let o = pkc_in(d.path(), &["check", "uses.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // `@` is the 9th character of line 1 after the mark.
    d.file("bad.pk", b"\xef\xbb\xbfconst a = @;\n");
    let o = pkc_in(d.path(), &["check", "bad.pk"]);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0001"], "{err}");
    assert!(err.contains("bad.pk:1:11"), "{err}");
}

/// A `use`d module is held to the limits of a source file: over 16 MiB is
/// PK0008 and bytes that are not UTF-8 are PK0007, each naming the module
/// and pointing at the `use`.
#[test]
fn modules_have_the_limits_of_sources() {
    let d = TempDir::new("modules");
    let mut big = b"// ".to_vec();
    big.resize(20_000_000, b'x');
    d.file("big.pk", &big);
    d.file("bin.pk", b"fn f(x) { x }\n\xff\xfe");
    for (m, want, text) in [
        (
            "big",
            "PK0008",
            "module `big.pk` is 20000000 bytes, more than the 16 MiB limit",
        ),
        (
            "bin",
            "PK0007",
            "module `bin.pk` is not UTF-8 text (invalid byte at offset 14)",
        ),
    ] {
        d.file(
            "uses.pk",
            format!("use {m};\nkernel k(x: f32[8, 128]) -> y: f32[8, 128] {{ y[..] = x[..]; }}\n")
                .as_bytes(),
        );
        let o = pkc_in(d.path(), &["check", "uses.pk"]);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{err}");
        assert_eq!(codes_in(&err), [want], "{err}");
        assert!(err.contains(text), "{err}");
        assert!(err.contains("uses.pk:1:5"), "{err}");
    }
}

/// `-p scale=1e309` overflows to infinity: refused with PK0403 as
/// `-p scale=inf` is, and so is an expression that overflows. A literal
/// past the float range in a source is PK0005.
#[test]
fn overflowing_floats_are_refused() {
    let base = ["check", "kernels/attention.pk", "-p"];
    for v in ["scale=inf", "scale=1e309", "scale=1e308*10.0"] {
        let mut args = base.to_vec();
        args.push(v);
        let o = pkc(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{v}: {err}");
        assert_eq!(codes_in(&err), ["PK0403"], "{v}: {err}");
    }
    let d = TempDir::new("float");
    d.file("k.pk", b"const big = 1e309;\n");
    let o = pkc_in(d.path(), &["check", "k.pk"]);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0005"], "{err}");
    assert!(err.contains("float literal is too large"), "{err}");
}

/// A 1 GiB source (sparse: it takes no disk) is PK0008 from its size,
/// without being read: the check's peak memory stays far below it.
#[test]
fn a_huge_source_is_refused_from_its_size() {
    let d = TempDir::new("huge-source");
    let f = std::fs::File::create(d.path().join("big.pk")).expect("create");
    f.set_len(1 << 30).expect("sparse");
    drop(f);
    let (o, peak) = peak_kib(d.path(), &["check", "big.pk"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert_eq!(codes_in(&err), ["PK0008"], "{err}");
    assert!(err.contains("`big.pk` is 1073741824 bytes"), "{err}");
    assert!(peak < 100 << 10, "peak {peak} KiB refusing a 1 GiB source");
}

/// `pkc test` compares each output with its expected array element by
/// element, in their dtypes: a copy of 64 MiB compared with its expected
/// file peaks at about its input, output and expected array (three times
/// 64 MiB), not at f64 copies of both besides. The copy must match, and a
/// changed element is reported where it is.
#[test]
fn test_compares_without_f64_copies() {
    let d = TempDir::new("test-peak");
    d.file(
        "copy.pk",
        b"kernel copy<M, N = 1024, bm = 256>(\n    x: f32[M, N] block [bm, N] at (i, 0),\n) -> y: f32[M, N] block [bm, N] at (i, 0)\ngrid (i in M / bm parallel)\n{\n    y[..] = x[..];\n}\n",
    );
    let write = |name: &str, rows: usize, bump: Option<usize>| {
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(d.path().join(name)).expect("create"));
        f.write_all(&npy_header("<f4", false, &[rows, 1024]))
            .expect("header");
        for r in 0..rows {
            let mut row: Vec<u8> = Vec::with_capacity(4096);
            for c in 0..1024 {
                let mut v = (r * 1024 + c) as f32;
                if bump == Some(r * 1024 + c) {
                    v += 1.0;
                }
                row.extend_from_slice(&v.to_le_bytes());
            }
            f.write_all(&row).expect("row");
        }
    };
    let test = |rows: usize, expect: &str| {
        let m = format!("M={rows}");
        let e = format!("y={expect}");
        peak_kib(
            d.path(),
            &[
                "test",
                "copy.pk",
                "-p",
                &m,
                "--in",
                "x=x.npy",
                "--expect",
                &e,
                "--threads=1",
            ],
        )
    };
    write("x.npy", 256, None);
    let (o, small) = test(256, "x.npy");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows = 16384; // 64 MiB of f32
    write("x.npy", rows, None);
    write("e.npy", rows, Some(5 * 1024 + 7));
    let (o, big) = test(rows, "x.npy");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let array = 64 << 10;
    assert!(
        big - small < 3 * array + array / 2,
        "peak {big} KiB against {small} KiB for 64 MiB arrays"
    );
    let (o, _) = test(rows, "e.npy");
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("1/16777216 elements")
            && out.contains("worst at (5, 7): got 5127, expected 5128"),
        "{out}"
    );
}
