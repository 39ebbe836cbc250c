//! Reading a file that must be a regular file — a configuration, a skill, a document to compare
//! with its buffer — without ever blocking. Opening a FIFO for reading waits for a writer that may
//! never come (a cloned repository can ship one named `toolhost.toml`), and a device may block or
//! act on being opened. The open here is non-blocking and the type is checked on the open handle,
//! so a FIFO swapped in after a `stat` cannot hang the caller either; the read stops at a bound.

use std::fs::{FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a regular file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RegularFileError {
    #[error("no such file")]
    NotFound,
    #[error("{0} is not a regular file")]
    NotRegular(&'static str),
    #[error("larger than {max} bytes")]
    TooLarge { max: u64 },
    #[error("{0}")]
    Io(io::Error),
}

impl RegularFileError {
    /// A stable code for logs and messages.
    pub fn code(&self) -> &'static str {
        match self {
            RegularFileError::NotFound => "FILE_NOT_FOUND",
            RegularFileError::NotRegular(_) => "FILE_NOT_REGULAR",
            RegularFileError::TooLarge { .. } => "FILE_TOO_LARGE",
            RegularFileError::Io(_) => "FILE_UNREADABLE",
        }
    }
}

impl From<io::Error> for RegularFileError {
    fn from(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::NotFound {
            RegularFileError::NotFound
        } else {
            RegularFileError::Io(err)
        }
    }
}

/// What a file that is not regular is, for messages ("a FIFO is not a regular file").
pub fn kind_name(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// The bytes of `path` (symbolic links followed) if it is a regular file of at most `max` bytes.
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, RegularFileError> {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(RegularFileError::NotRegular(kind_name(meta.file_type())));
    }
    if meta.len() > max {
        return Err(RegularFileError::TooLarge { max });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte over the bound tells a file that grew since the `fstat` from one that did not.
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(RegularFileError::TooLarge { max });
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, max: u64) -> Result<String, RegularFileError> {
    let bytes = read_regular(path, max)?;
    String::from_utf8(bytes).map_err(|_| {
        RegularFileError::Io(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_instead_of_blocking_the_reader() {
        let dir = tempfile_dir();
        let fifo = dir.join("toolhost.toml");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        let err = read_regular(&fifo, 1024).unwrap_err();
        assert_eq!(err.to_string(), "a FIFO is not a regular file");
        assert_eq!(err.code(), "FILE_NOT_REGULAR");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn regular_files_are_read_up_to_the_bound() {
        let dir = tempfile_dir();
        let file = dir.join("a.txt");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_regular_text(&file, 5).unwrap(), "12345");
        assert!(matches!(read_regular(&file, 4), Err(RegularFileError::TooLarge { max: 4 })));
        assert!(matches!(read_regular(&dir.join("none"), 4), Err(RegularFileError::NotFound)));
        assert!(matches!(read_regular(&dir, 4), Err(RegularFileError::NotRegular("a directory"))));
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "toolhost-regular-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
