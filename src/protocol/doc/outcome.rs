//! Results (docs/protocol.md §5.3): `results/<jobId>.json`, written only by the target's
//! listener. Called "outcome" here to keep clear of Rust's `Result`.

use serde::{Deserialize, Serialize};

use super::Detail;
use crate::trust::Key;

/// Largest result file read back.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// How a job ended, the `error` field of a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// The process ran to its end (`""`).
    Exited,
    /// A valid cancel marker stopped it.
    Cancelled,
    /// A valid cancel marker was found before it started.
    CancelledBeforeStart,
    /// It outlived its `timeoutSec`.
    Timeout,
    /// The listener stopped or died while it ran.
    Interrupted,
    /// The program could not be started.
    SpawnFailed,
    /// A job it waited for (`after`) did not end as required, so it never
    /// started; `detail.dependency` names which and how it ended.
    DependencyFailed,
}

impl Termination {
    /// The `error` field's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Exited => "",
            Termination::Cancelled => "cancelled",
            Termination::CancelledBeforeStart => "cancelled-before-start",
            Termination::Timeout => "timeout",
            Termination::Interrupted => "interrupted",
            Termination::SpawnFailed => "spawn-failed",
            Termination::DependencyFailed => "dependency-failed",
        }
    }

    /// Every ending.
    pub const ALL: [Termination; 7] = [
        Termination::Exited,
        Termination::Cancelled,
        Termination::CancelledBeforeStart,
        Termination::Timeout,
        Termination::Interrupted,
        Termination::SpawnFailed,
        Termination::DependencyFailed,
    ];

    /// The inverse of [`Termination::as_str`].
    pub fn parse(s: &str) -> Option<Termination> {
        Termination::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// A word for people: `done`, `failed`, `cancelled`, …
    pub fn describe(self, ok: bool) -> &'static str {
        self.ending(ok).as_str()
    }

    /// How a result that ended so, `ok` or not, is shown ([`Ending`]).
    pub fn ending(self, ok: bool) -> Ending {
        match self {
            Termination::Exited if ok => Ending::Done,
            Termination::Exited => Ending::Failed,
            Termination::Cancelled => Ending::Cancelled,
            Termination::CancelledBeforeStart => Ending::CancelledBeforeStart,
            Termination::Timeout => Ending::Timeout,
            Termination::Interrupted => Ending::Interrupted,
            Termination::SpawnFailed => Ending::SpawnFailed,
            Termination::DependencyFailed => Ending::DependencyFailed,
        }
    }
}

/// How a job ended, in the one word every output uses for it (`result`,
/// `status`, `--json`'s `outcome`) and `status --outcome` takes: a
/// [`Termination`] with a clean exit told apart from a failed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Ran and exited 0.
    Done,
    /// Ran and ended any other way by itself.
    Failed,
    /// Stopped by a cancel marker.
    Cancelled,
    /// Cancelled before it started.
    CancelledBeforeStart,
    /// Outlived its timeout.
    Timeout,
    /// The listener stopped while it ran.
    Interrupted,
    /// Could not be started.
    SpawnFailed,
    /// Never started: a job it waited for did not end as required.
    DependencyFailed,
}

impl Ending {
    /// Every ending, in the order `--help` lists them.
    pub const ALL: [Ending; 8] = [
        Ending::Done,
        Ending::Failed,
        Ending::Cancelled,
        Ending::CancelledBeforeStart,
        Ending::Timeout,
        Ending::Interrupted,
        Ending::SpawnFailed,
        Ending::DependencyFailed,
    ];

    /// Its word.
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Done => "done",
            Ending::Failed => "failed",
            Ending::Cancelled => "cancelled",
            Ending::CancelledBeforeStart => "cancelled-before-start",
            Ending::Timeout => "timeout",
            Ending::Interrupted => "interrupted",
            Ending::SpawnFailed => "spawn-failed",
            Ending::DependencyFailed => "dependency-failed",
        }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Ending {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A result: signed, or not yet ([`Outcome::unsigned`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Always 1.
    pub v: u32,
    /// The job.
    pub job_id: String,
    /// The machine that ran it.
    pub target: String,
    /// True only for a process that exited 0 by itself.
    pub ok: bool,
    /// The process's own exit code, or -1.
    pub exit_code: i64,
    /// How it ended ([`Termination::as_str`]).
    pub error: String,
    /// When it started; empty when it never did.
    pub started_at: String,
    /// When it finished.
    pub finished_at: String,
    /// A JSON object as a string ([`Detail`]): duration, signal, output
    /// tails, marker.
    pub detail: String,
    /// `ed25519` in the roster lane; absent for the fleet key's HMAC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// The signing key's id on the roster; absent for the fleet key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The target's signature over [`canonical`], in hex.
    pub sig: String,
    /// The detail of a sealed job's result as its origin opened it
    /// ([`Outcome::open_detail`]): read in place of `detail`, never
    /// written or signed.
    #[serde(skip)]
    pub opened: Option<String>,
}

/// What a sealed job's result detail is sealed within:
/// `result|<jobId>|<target>|<origin>`.
pub fn seal_context(job_id: &str, target: &str, origin: &str) -> String {
    format!("result|{job_id}|{target}|{origin}")
}

/// A result as the listener records it (docs/protocol.md §7.8): the file's
/// bytes of a result not yet signed, signed now with `key`. Bytes that are
/// signed already (a record of an earlier version) or that do not read as
/// a result are returned as they are.
pub fn signed_record(bytes: &[u8], key: &Key) -> Vec<u8> {
    match serde_json::from_slice::<Outcome>(bytes) {
        Ok(o) if o.sig.is_empty() => super::to_file_bytes(&o.signed(key)),
        _ => bytes.to_vec(),
    }
}

/// `result|{jobId}|{target}|{ok}|{exitCode}|{error}|{startedAt}|{finishedAt}|{detail}`.
#[allow(clippy::too_many_arguments)]
pub fn canonical(
    job_id: &str,
    target: &str,
    ok: bool,
    exit_code: i64,
    error: &str,
    started_at: &str,
    finished_at: &str,
    detail: &str,
) -> String {
    format!("result|{job_id}|{target}|{ok}|{exit_code}|{error}|{started_at}|{finished_at}|{detail}")
}

impl Outcome {
    /// A new result, not yet signed (`ok` follows from the termination
    /// and exit code): its fields are all a signature depends on, so it
    /// can be signed later, off the path between two
    /// jobs ([`Outcome::signed`], [`signed_record`]).
    #[allow(clippy::too_many_arguments)]
    pub fn unsigned(
        job_id: &str,
        target: &str,
        how: Termination,
        exit_code: Option<i32>,
        started_at: Option<&str>,
        finished_at: &str,
        detail: &Detail,
    ) -> Outcome {
        let ok = how == Termination::Exited && exit_code == Some(0);
        let exit_code = match how {
            Termination::Exited => exit_code.map_or(-1, i64::from),
            _ => -1,
        };
        Outcome {
            v: 1,
            job_id: job_id.to_string(),
            target: target.to_string(),
            ok,
            exit_code,
            error: how.as_str().to_string(),
            started_at: started_at.unwrap_or("").to_string(),
            finished_at: finished_at.to_string(),
            detail: detail.to_text(),
            alg: None,
            key_id: None,
            sig: String::new(),
            opened: None,
        }
    }

    /// This result signed with `key` (its algorithm and key id named).
    pub fn signed(mut self, key: &Key) -> Outcome {
        let signed = key.sign_document(&self.canonical());
        (self.alg, self.key_id, self.sig) = (signed.alg, signed.key_id, signed.sig);
        self
    }

    /// This result's canonical string.
    pub fn canonical(&self) -> String {
        canonical(
            &self.job_id,
            &self.target,
            self.ok,
            self.exit_code,
            &self.error,
            &self.started_at,
            &self.finished_at,
            &self.detail,
        )
    }

    /// How the job ended.
    pub fn termination(&self) -> Termination {
        Termination::parse(&self.error).unwrap_or(Termination::Exited)
    }

    /// The detail; an empty one when it does not parse. A sealed one
    /// this machine opened is read opened.
    pub fn detail(&self) -> Detail {
        Detail::from_text(self.opened.as_deref().unwrap_or(&self.detail))
    }

    /// The detail as it was written, unknown fields included (for showing
    /// it whole); an empty object when it does not parse. A sealed one
    /// this machine opened is shown opened.
    pub fn detail_value(&self) -> serde_json::Value {
        serde_json::from_str(self.opened.as_deref().unwrap_or(&self.detail))
            .unwrap_or_else(|_| serde_json::json!({}))
    }

    /// True when the detail is sealed and was not opened here: a reader
    /// shows `sealed` where the detail's facts would be.
    pub fn sealed_here(&self) -> bool {
        self.opened.is_none() && self.detail().sealed.is_some()
    }

    /// Opens a sealed detail when `me` is the origin it is sealed to; a
    /// detail that is not sealed, or not to `me`, is left as it is.
    pub fn open_detail(&mut self, me: &crate::trust::identity::Identity) {
        let Some(envelope) = self.detail().sealed else {
            return;
        };
        let Ok(sealed) = crate::trust::seal::Sealed::from_json(&envelope) else {
            return;
        };
        let context = seal_context(&self.job_id, &self.target, me.name());
        if let Ok(plain) = crate::trust::seal::open(me, &sealed, context.as_bytes())
            && let Ok(text) = String::from_utf8(plain)
        {
            self.opened = Some(text);
        }
    }

    /// How its process ended, for people: `exit 3` for a code it gave by
    /// itself, `exited 143 after SIGTERM` for one it gave once stopped,
    /// `ended by SIGKILL` for a signal, `never started`, or `no exit code`
    /// (a result recovered after a crash). Never the `-1` the protocol
    /// records for "no code of its own" (§5.3): a job that exited 143 was
    /// shown as `exit -1` beside one that was killed.
    pub fn exit_phrase(&self) -> String {
        self.exit_phrase_with(&self.detail())
    }

    /// [`Outcome::exit_phrase`] for a reader that holds its detail `d`
    /// already (a report of many results parses each detail once).
    pub fn exit_phrase_with(&self, d: &Detail) -> String {
        match (self.termination(), &d.signal, d.exit_code_after_signal) {
            (Termination::Exited, None, _) if self.exit_code >= 0 => {
                format!("exit {}", self.exit_code)
            }
            (_, Some(sig), Some(c)) => format!("exited {c} after {sig}"),
            (_, Some(sig), None) => format!("ended by {sig}"),
            _ if self.started_at.is_empty() => "never started".to_string(),
            _ => "no exit code".to_string(),
        }
    }

    /// The exit status `enqueue --wait` and `result --wait` end with (docs/protocol.md §9):
    /// the job's own exit code when it ran to its end, 1 otherwise.
    pub fn wait_exit_status(&self) -> u8 {
        match self.termination() {
            Termination::Exited if (0..=255).contains(&self.exit_code) => self.exit_code as u8,
            _ => crate::base::exit::NO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_words_round_trip() {
        for t in Termination::ALL {
            assert_eq!(Termination::parse(t.as_str()), Some(t));
        }
        assert_eq!(Termination::parse("exploded"), None);
    }

    #[test]
    fn every_ending_has_its_own_word_and_every_termination_an_ending() {
        let words: std::collections::BTreeSet<&str> =
            Ending::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(words.len(), Ending::ALL.len());
        for t in Termination::ALL {
            for ok in [false, true] {
                assert!(Ending::ALL.contains(&t.ending(ok)));
                assert_eq!(t.describe(ok), t.ending(ok).as_str());
            }
        }
        assert_eq!(Termination::Exited.ending(true), Ending::Done);
        assert_eq!(Termination::Exited.ending(false), Ending::Failed);
        assert_eq!(serde_json::json!(Ending::SpawnFailed), "spawn-failed");
    }

    #[test]
    fn a_recorded_result_signs_to_the_bytes_a_signed_one_has() {
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let other = Key::from_bytes(&[2u8; 32]).unwrap();
        let d = Detail::default();
        let o = Outcome::unsigned(
            "j-1",
            "PC",
            Termination::Exited,
            Some(0),
            Some("s"),
            "f",
            &d,
        );
        let signed = super::super::to_file_bytes(&o.clone().signed(&key));
        let unsigned = super::super::to_file_bytes(&o);
        assert_ne!(signed, unsigned);
        assert_eq!(signed_record(&unsigned, &key), signed);
        // Signed already (an earlier version's record): kept, whatever the key.
        assert_eq!(signed_record(&signed, &other), signed);
        assert_eq!(signed_record(b"not a result", &key), b"not a result");
    }

    #[test]
    fn ok_only_for_a_clean_exit() {
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let d = Detail::default();
        let ok = Outcome::unsigned("a", "PC", Termination::Exited, Some(0), Some("s"), "f", &d)
            .signed(&key);
        assert!(ok.ok);
        assert_eq!(ok.wait_exit_status(), 0);
        let fail = Outcome::unsigned("a", "PC", Termination::Exited, Some(3), Some("s"), "f", &d)
            .signed(&key);
        assert!(!fail.ok);
        assert_eq!(fail.wait_exit_status(), 3);
        let c = Outcome::unsigned(
            "a",
            "PC",
            Termination::Cancelled,
            Some(0),
            Some("s"),
            "f",
            &d,
        )
        .signed(&key);
        assert!(!c.ok);
        assert_eq!(c.exit_code, -1);
        assert_eq!(c.wait_exit_status(), 1);
        assert!(key.verify(
            crate::trust::Signer::Machine(&c.target),
            &c.canonical(),
            &c.sig
        ));
    }
}
