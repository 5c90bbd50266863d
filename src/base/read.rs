//! What reading one input file within a size bound gave: the value the file
//! layer ([`crate::store::fsops::Dir::read_limited`]) produces and the acceptance rules
//! ([`crate::protocol::accept`]) judge, so the rules never touch the disk and the file
//! layer never imports the rules.

/// What reading a candidate file gave (steps 1 and 2 of acceptance,
/// docs/protocol.md §6).
#[derive(Debug)]
pub enum FileRead {
    /// The whole content of a regular file within the size limit.
    Bytes(Vec<u8>),
    /// A link, directory, FIFO or device: never followed or read.
    NotAFile(&'static str),
    /// The file exists but cannot be read right now.
    Unreadable(String),
    /// Larger than the kind's limit (the size found).
    TooLarge(u64),
    /// Gone between listing and reading.
    Missing,
}
