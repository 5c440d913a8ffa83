//! Reading a user's files with a bound on what is read.
//!
//! Every file pk reads whole (sources, modules, StableHLO modules) goes
//! through [`read_limited`]: the size is checked before anything is read
//! (from the file's metadata where it has one, else by reading at most one
//! byte past the limit), so a wrong argument such as `/dev/zero` or a
//! multi-gigabyte data file costs at most the limit in memory. Character
//! and block devices are refused outright: `/dev/zero` and `/dev/urandom`
//! never end, and no device is a source file. Pipes and FIFOs are read, up
//! to the limit.
//!
//! invariant: [`read_limited`] never holds more than `limit + 1` bytes of
//! a file in memory, whatever the file is.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a file could not be read whole.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// The file is larger than the limit: its size where the metadata
    /// tells it, else `None` (a stream with more than `limit` bytes).
    TooLarge(Option<u64>),
    /// A character or block device (`/dev/zero`): never a file to read.
    Device(&'static str),
}

impl ReadError {
    /// The reason in words, after "cannot read `PATH`: ".
    pub fn reason(&self) -> String {
        match self {
            ReadError::Io(e) => e.to_string(),
            ReadError::TooLarge(Some(n)) => format!("it is {n} bytes"),
            ReadError::TooLarge(None) => "it is too large".into(),
            ReadError::Device(kind) => format!("it is {kind}, not a file"),
        }
    }
}

/// The kind of device `path`'s metadata describes, if it is one.
pub fn device_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    let _ = meta;
    None
}

/// Opens `path` for reading, refusing devices; returns the file and its
/// length when it is a regular file.
pub fn open(path: &Path) -> Result<(File, Option<u64>), ReadError> {
    let f = File::open(path).map_err(ReadError::Io)?;
    let meta = f.metadata().map_err(ReadError::Io)?;
    if let Some(kind) = device_kind(&meta) {
        return Err(ReadError::Device(kind));
    }
    if meta.is_dir() {
        return Err(ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "Is a directory",
        )));
    }
    let len = meta.is_file().then_some(meta.len());
    Ok((f, len))
}

/// Reads all of `path` if it holds at most `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (f, len) = open(path)?;
    if let Some(n) = len.filter(|&n| n > limit) {
        return Err(ReadError::TooLarge(Some(n)));
    }
    // A regular file may still grow while it is read: the bound holds
    // either way.
    let cap = len.unwrap_or(0).min(limit) as usize;
    let mut out = Vec::with_capacity(cap);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(ReadError::Io)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge(len.filter(|&n| n > limit)));
    }
    Ok(out)
}

/// The byte-order mark some editors put at the start of UTF-8 files.
pub const BOM: &str = "\u{feff}";

/// `text` without a leading byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_refused_before_reading() {
        let e = read_limited(Path::new("/dev/zero"), 16).unwrap_err();
        assert!(
            matches!(e, ReadError::Device("a character device")),
            "{e:?}"
        );
    }

    #[test]
    fn a_file_at_the_limit_is_read_and_one_past_it_is_not() {
        let dir = std::env::temp_dir().join(format!("pk-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("small");
        std::fs::write(&p, b"abcdef").unwrap();
        assert_eq!(read_limited(&p, 6).unwrap(), b"abcdef");
        assert!(matches!(
            read_limited(&p, 5),
            Err(ReadError::TooLarge(Some(6)))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_bom_is_dropped_once() {
        assert_eq!(strip_bom("\u{feff}kernel"), "kernel");
        assert_eq!(strip_bom("\u{feff}\u{feff}x"), "\u{feff}x");
        assert_eq!(strip_bom("x"), "x");
    }
}
