//! Checks a libtpu file before the dynamic loader maps it.
//!
//! The loader maps a shared library's segments as the program headers
//! describe them and trusts the file to hold them: a truncated libtpu maps
//! pages past the end of the file, and the first touch of one kills the
//! process with SIGBUS, with no message. So before `dlopen`:
//!
//! 1. the file is at least an ELF header long and is a 64-bit
//!    little-endian shared object for this machine;
//! 2. its program headers, every loadable segment and its section header
//!    table lie inside the file (a truncation cuts the section headers,
//!    which come last, and usually segments too);
//! 3. the copy in pk's cache (the pinned release) also has the pinned
//!    sha256. Hashing 575 MB takes seconds, so a good hash is remembered in
//!    a stamp file beside the library, keyed by its size, modification time
//!    and inode; any change to the file hashes it again.
//!
//! A file that fails is reported as `PK2002`, before anything is mapped.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::error::PjrtError;

/// The sha256 of `libtpu/libtpu.so` in the pinned wheel
/// (libtpu 0.0.51, whose own sha256 `.ci/setup-libtpu` checks).
pub const LIBTPU_SHA256: &str = "ad0b2a3bc5d4de96f653b3701aaed8769a691776ca0e14c791dcdca785d43e42";

/// `e_machine` of this host's architecture.
#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: (u16, &str) = (62, "x86-64");
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: (u16, &str) = (183, "AArch64");
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_MACHINE: (u16, &str) = (0, "this machine");

const ELF_HEADER: usize = 64;
const PT_LOAD: u32 = 1;

/// Why a libtpu file cannot be loaded, in words for the error message.
type Reason = String;

/// Checks the file at `path` (see the module's list); `pinned` asks for the
/// sha256 check of the cached release too.
pub(crate) fn check(path: &Path, pinned: bool) -> Result<(), PjrtError> {
    let fail = |reason: Reason, hint: &str| PjrtError::LibtpuDamaged {
        path: path.display().to_string(),
        reason,
        hint: hint.to_string(),
    };
    let hint = if pinned {
        "reinstall it with `bash .ci/setup-libtpu`, which replaces a damaged copy"
    } else {
        "give the path of a complete libtpu.so (pk pins libtpu 0.0.51), or unset it to use the one `bash .ci/setup-libtpu` installs"
    };
    check_elf(path).map_err(|r| fail(r, hint))?;
    if pinned {
        check_sha256(path).map_err(|r| fail(r, hint))?;
    }
    Ok(())
}

/// Little-endian fields of a byte slice known to be long enough.
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// Whether `[offset, offset + len)` lies inside a file of `size` bytes.
fn inside(offset: u64, len: u64, size: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

fn check_elf(path: &Path) -> Result<(), Reason> {
    let mut f = File::open(path).map_err(|e| e.to_string())?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut h = [0u8; ELF_HEADER];
    if size < ELF_HEADER as u64 {
        return Err(format!(
            "it is {size} bytes long, shorter than an ELF header: not a shared library"
        ));
    }
    f.read_exact(&mut h).map_err(|e| e.to_string())?;
    check_header(&h, size)?;
    // Program headers: every loadable segment must be in the file.
    let (phoff, phentsize, phnum) = (u64_at(&h, 32), u16_at(&h, 54), u16_at(&h, 56));
    let table = u64::from(phentsize) * u64::from(phnum);
    if phentsize < 56 || !inside(phoff, table, size) {
        return Err(format!(
            "its program headers end past the end of the file ({size} bytes): the file is truncated"
        ));
    }
    let mut ph = vec![0u8; table as usize];
    f.seek(SeekFrom::Start(phoff))
        .and_then(|_| f.read_exact(&mut ph))
        .map_err(|e| e.to_string())?;
    for e in ph.chunks_exact(usize::from(phentsize)) {
        let (kind, offset, filesz) = (u32_at(e, 0), u64_at(e, 8), u64_at(e, 32));
        if kind == PT_LOAD && !inside(offset, filesz, size) {
            return Err(format!(
                "a loadable segment spans bytes {offset}..{} but the file has {size}: the file is truncated",
                offset.saturating_add(filesz)
            ));
        }
    }
    // The section header table comes last in the file.
    let (shoff, shentsize, shnum) = (u64_at(&h, 40), u16_at(&h, 58), u16_at(&h, 60));
    if shoff != 0 && !inside(shoff, u64::from(shentsize) * u64::from(shnum), size) {
        return Err(format!(
            "its section headers end past the end of the file ({size} bytes): the file is truncated"
        ));
    }
    Ok(())
}

/// Checks the 64-byte ELF header `h` of a file of `size` bytes.
fn check_header(h: &[u8; ELF_HEADER], size: u64) -> Result<(), Reason> {
    if &h[..4] != b"\x7fELF" {
        return Err(format!(
            "it does not start like an ELF file ({size} bytes): not a shared library"
        ));
    }
    if h[4] != 2 || h[5] != 1 {
        return Err("it is not a 64-bit little-endian ELF file".into());
    }
    let (kind, machine) = (u16_at(h, 16), u16_at(h, 18));
    if kind != 3 {
        return Err(format!(
            "it is an ELF file of type {kind}, not a shared object (type 3)"
        ));
    }
    if HOST_MACHINE.0 != 0 && machine != HOST_MACHINE.0 {
        return Err(format!(
            "it is built for ELF machine {machine}, not {} ({})",
            HOST_MACHINE.1, HOST_MACHINE.0
        ));
    }
    Ok(())
}

/// What the stamp beside a library records of it.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    size: u64,
    mtime_ns: i128,
    inode: u64,
}

fn identity(path: &Path) -> Option<Identity> {
    let m = fs::metadata(path).ok()?;
    let mtime_ns = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as i128;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Identity {
        size: m.len(),
        mtime_ns,
        inode,
    })
}

fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".sha256-ok");
    path.with_file_name(name)
}

fn stamp_text(id: &Identity) -> String {
    format!(
        "sha256 {LIBTPU_SHA256}\nsize {}\nmtime_ns {}\ninode {}\n",
        id.size, id.mtime_ns, id.inode
    )
}

fn check_sha256(path: &Path) -> Result<(), Reason> {
    let id = identity(path);
    let stamp = stamp_path(path);
    if let Some(id) = &id {
        if fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_text(id)) {
            return Ok(());
        }
    }
    let actual = sha256_of(path).map_err(|e| e.to_string())?;
    if actual != LIBTPU_SHA256 {
        let _ = fs::remove_file(&stamp);
        return Err(format!(
            "its sha256 is {actual}, not the pinned libtpu's {LIBTPU_SHA256}"
        ));
    }
    // Remembered for next time; a cache that cannot be written only costs
    // the hash again.
    if let Some(id) = &id {
        let _ = write_stamp(&stamp, &stamp_text(id));
    }
    Ok(())
}

fn write_stamp(stamp: &Path, text: &str) -> std::io::Result<()> {
    let dir = stamp.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".sha256-ok-")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(stamp).map_err(|e| e.error)?;
    Ok(())
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 shared-object header for this machine with one
    /// loadable segment of `seg_len` bytes at offset 0 and section headers
    /// at `shoff`.
    fn elf(total: usize, seg_len: u64, shoff: u64) -> Vec<u8> {
        let mut b = vec![0u8; total];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16..18].copy_from_slice(&3u16.to_le_bytes());
        b[18..20].copy_from_slice(&HOST_MACHINE.0.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[40..48].copy_from_slice(&shoff.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&1u16.to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&2u16.to_le_bytes());
        // The program header: PT_LOAD, offset 0, file size seg_len.
        b[64..68].copy_from_slice(&PT_LOAD.to_le_bytes());
        b[64 + 32..64 + 40].copy_from_slice(&seg_len.to_le_bytes());
        b
    }

    fn check_bytes(bytes: &[u8]) -> Result<(), Reason> {
        let d = tempfile::tempdir().expect("temp dir");
        let p = d.path().join("libtpu.so");
        fs::write(&p, bytes).expect("written");
        check_elf(&p)
    }

    #[test]
    fn a_whole_file_passes_and_every_cut_is_named() {
        // 4096 bytes: a 3968-byte segment, then 2 x 64 bytes of sections.
        let whole = elf(4096, 3968, 3968);
        assert_eq!(check_bytes(&whole), Ok(()));
        let e = check_bytes(&whole[..4000]).expect_err("sections cut");
        assert!(
            e.contains("section headers") && e.contains("truncated"),
            "{e}"
        );
        let e = check_bytes(&whole[..2000]).expect_err("segment cut");
        assert!(e.contains("bytes 0..3968 but the file has 2000"), "{e}");
        let e = check_bytes(&whole[..100]).expect_err("headers cut");
        assert!(e.contains("program headers"), "{e}");
        let e = check_bytes(&whole[..10]).expect_err("too short");
        assert!(e.contains("10 bytes long"), "{e}");
        let e = check_bytes(&[]).expect_err("empty");
        assert!(e.contains("0 bytes long"), "{e}");
    }

    #[test]
    fn other_files_are_not_taken_for_libraries() {
        let e = check_bytes(&[b'#'; 4096]).expect_err("text");
        assert!(e.contains("does not start like an ELF file"), "{e}");
        let mut exe = elf(4096, 3968, 3968);
        exe[16] = 2; // ET_EXEC
        assert!(check_bytes(&exe).expect_err("exe").contains("type 2"));
        let mut arm = elf(4096, 3968, 3968);
        arm[18..20].copy_from_slice(&(HOST_MACHINE.0 + 1).to_le_bytes());
        assert!(check_bytes(&arm)
            .expect_err("other machine")
            .contains("ELF machine"));
    }

    #[test]
    fn a_wrong_hash_is_refused_and_a_good_one_remembered() {
        let d = tempfile::tempdir().expect("temp dir");
        let p = d.path().join("libtpu.so");
        fs::write(&p, b"abc").expect("written");
        let e = check_sha256(&p).expect_err("not the pinned file");
        // sha256("abc"), as `printf abc | sha256sum` prints it.
        assert!(
            e.contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            "{e}"
        );
        assert!(!stamp_path(&p).exists());
        // A stamp matching the file stands for the hash; touching the
        // file makes it stale.
        let id = identity(&p).expect("metadata");
        fs::write(stamp_path(&p), stamp_text(&id)).expect("stamp");
        assert_eq!(check_sha256(&p), Ok(()));
        fs::write(&p, b"abcd").expect("rewritten");
        assert!(check_sha256(&p).is_err());
    }
}
