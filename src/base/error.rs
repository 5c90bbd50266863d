//! The one error type, carrying the docs/protocol.md §9 codes; [`crate::base::exit`]
//! names the exit status of each.
//!
//! Every message names the file or id it concerns; a hint says what to do
//! next where that helps. Commands return `Result<_, Error>`; `main` prints
//! the error once, in human or JSON form, and exits with the code's status.

use std::fmt;
use std::path::Path;

/// The error vocabulary of docs/protocol.md §9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// A missing or invalid id, name, duration or flag value.
    Validation,
    /// An input document that does not parse.
    BadRequest,
    /// Unknown target, job or file.
    NotFound,
    /// I/O and everything else; a retry is safe.
    Internal,
    /// Another listener holds the lock.
    Busy,
    /// Signature, target or parent rule refused.
    Forbidden,
    /// No root, no key file, a key too short or readable by others.
    Config,
}

impl Code {
    /// Every code, in the protocol's order.
    pub const ALL: [Code; 7] = [
        Code::Validation,
        Code::BadRequest,
        Code::NotFound,
        Code::Internal,
        Code::Busy,
        Code::Forbidden,
        Code::Config,
    ];

    /// When the code is used, for the man page's EXIT STATUS.
    pub fn meaning(self) -> &'static str {
        match self {
            Code::Validation => "a missing or invalid id, name, duration or flag value",
            Code::BadRequest => "an input document that does not parse",
            Code::NotFound => "unknown target, job or file",
            Code::Internal => {
                "I/O and everything else; what already happened stays done, so a retry is safe"
            }
            Code::Busy => "another listener holds the lock; retry later",
            Code::Forbidden => "signature, target or parent rule refused",
            Code::Config => "no root, no key file, a key too short or readable by others",
        }
    }

    /// The code as printed, e.g. `VALIDATION_ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Validation => "VALIDATION_ERROR",
            Code::BadRequest => "BAD_REQUEST",
            Code::NotFound => "NOT_FOUND",
            Code::Internal => "INTERNAL_ERROR",
            Code::Busy => "BUSY",
            Code::Forbidden => "FORBIDDEN",
            Code::Config => "CONFIG",
        }
    }
}

/// An error with its protocol code, a message and an optional hint.
#[derive(Debug, Clone)]
pub struct Error {
    /// The docs/protocol.md §9 code.
    pub code: Code,
    /// What went wrong, naming the file or id.
    pub message: String,
    /// What to do next, when there is something useful to say.
    pub hint: Option<String>,
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error with no hint.
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// `VALIDATION_ERROR`.
    pub fn validation(message: impl Into<String>) -> Error {
        Error::new(Code::Validation, message)
    }

    /// `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(Code::NotFound, message)
    }

    /// `FORBIDDEN`.
    pub fn forbidden(message: impl Into<String>) -> Error {
        Error::new(Code::Forbidden, message)
    }

    /// `CONFIG`.
    pub fn config(message: impl Into<String>) -> Error {
        Error::new(Code::Config, message)
    }

    /// `INTERNAL_ERROR` for an I/O failure on `path`.
    pub fn io(what: &str, path: &Path, err: &std::io::Error) -> Error {
        let mut e = Error::new(
            Code::Internal,
            format!("cannot {what} {}: {err}", path.display()),
        );
        if err.kind() == std::io::ErrorKind::StorageFull {
            e = e.hint("the disk is full; free some space and retry");
        } else if err.kind() == std::io::ErrorKind::PermissionDenied {
            e = e.hint("check that this user may write there");
        }
        e
    }

    /// The JSON form of docs/protocol.md §9.
    pub fn to_json(&self) -> serde_json::Value {
        let mut message = self.message.clone();
        if let Some(h) = &self.hint {
            message.push_str(&format!(" (hint: {h})"));
        }
        serde_json::json!({"error": {"code": self.code.as_str(), "message": message}})
    }

    /// Prints the error once, as docs/protocol.md §9.2 says: the JSON form
    /// on stdout under `--json`, else `fleet-dispatch: error: …` on stderr.
    pub fn report(&self, json: bool) {
        use std::io::Write;
        if json {
            let _ = writeln!(std::io::stdout(), "{}", self.to_json());
        } else {
            let text = self.to_string();
            let _ = writeln!(
                std::io::stderr(),
                "fleet-dispatch: error: {}",
                crate::base::screen::screened(&text)
            );
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_has_code_and_message() {
        let e = Error::not_found("no job abc").hint("check the id");
        let v = e.to_json();
        assert_eq!(v["error"]["code"], "NOT_FOUND");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no job abc")
        );
    }
}
