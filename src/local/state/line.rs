//! The ledger's lines: how one is written and read, and what they add up
//! to at start-up ([`replay`], a pure function of the file's bytes).
//!
//! A line is one JSON object on one line, tagged with the format version
//! `v` and its `kind`; each kind carries exactly its fields:
//!
//! ```text
//! {"v":2,"kind":"record","jobId":"…","processedAt":"…"}      a processed id (all compaction keeps)
//! {"v":2,"kind":"start","jobId":"…","processedAt":"…"}       written and flushed before the spawn
//! {"v":2,"kind":"pid","jobId":"…","pid":4242}                the spawned process, noted after
//! {"v":2,"kind":"result","jobId":"…","processedAt":"…","result":"…"}   the result file's text
//! {"v":2,"kind":"checkpoint","checkpoint":"…"}               every result before it is published
//! ```
//!
//! Version 1 is the format before versions: untagged, with optional fields
//! whose combination meant the kind (`"run":true` on a start). A running
//! fleet's ledger is in that format when its binary is upgraded, and its
//! journal must still be recovered, so version 1 is read forever: a line
//! without `v` (or with `"v":1`) goes to the legacy reader. Field names are
//! kept from version 1, so an older binary reading a version 2 file still
//! finds the processed ids and the results (it misses only the starts).
//!
//! A line of a later version, or of a kind this binary does not know, is
//! [`Line::Unknown`]: skipped, and kept until the file is rewritten. A line
//! that is not JSON (torn by a crash mid-append) is damaged: `decode` answers
//! `None`.

use std::collections::HashMap;
use std::io::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{Recorded, Started, Unfinished};

/// The version this binary writes.
const VERSION: u64 = 2;

/// One ledger line, as this binary understands it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(super) enum Line {
    /// A processed id and when it was processed: all compaction keeps.
    Record {
        job_id: String,
        processed_at: String,
    },
    /// A job about to be spawned.
    Start {
        job_id: String,
        processed_at: String,
    },
    /// The started job's process (and group) id.
    Pid { job_id: String, pid: i32 },
    /// A finished job and its result file's text.
    Result {
        job_id: String,
        processed_at: String,
        result: String,
    },
    /// Every result recorded before this line is durably published.
    Checkpoint { checkpoint: String },
    /// A line of a later version or an unknown kind: skipped.
    #[serde(other, skip_serializing)]
    Unknown,
}

/// The line's bytes, with its newline, in the current version.
pub(super) fn encode(line: &Line) -> Vec<u8> {
    // `{"v":2,` then the line's own object without its `{`: the same bytes
    // a flattened wrapper gives, without serde's slower path for one.
    let mut bytes = Vec::with_capacity(256);
    write!(bytes, "{{\"v\":{VERSION},").expect("writes to memory");
    let own = bytes.len();
    serde_json::to_writer(&mut bytes, line).expect("serialises");
    bytes.remove(own);
    bytes.push(b'\n');
    bytes
}

/// Reads one line of any version; `None` when it is damaged.
pub(super) fn decode(raw: &[u8]) -> Option<Line> {
    /// The version alone (the rest of the line is skipped, not kept).
    #[derive(Deserialize)]
    struct Head {
        v: Option<u64>,
    }
    match serde_json::from_slice::<Head>(raw).ok()?.v.unwrap_or(1) {
        1 => serde_json::from_slice::<Legacy>(raw).ok()?.into_line(),
        VERSION => serde_json::from_slice(raw).ok(),
        _ => Some(Line::Unknown),
    }
}

/// A version 1 line: every field optional, the kind told by which are set.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Legacy {
    job_id: Option<String>,
    processed_at: Option<String>,
    #[serde(default)]
    run: bool,
    pid: Option<i32>,
    result: Option<String>,
    checkpoint: Option<String>,
}

impl Legacy {
    /// The kind, tested in the order the version 1 reader did; `None` for a
    /// combination that version never wrote.
    fn into_line(self) -> Option<Line> {
        if let Some(checkpoint) = self.checkpoint {
            return Some(Line::Checkpoint { checkpoint });
        }
        let job_id = self.job_id?;
        Some(match (self.processed_at, self.run, self.pid, self.result) {
            (Some(processed_at), true, None, None) => Line::Start {
                job_id,
                processed_at,
            },
            (None, false, Some(pid), None) => Line::Pid { job_id, pid },
            (Some(processed_at), false, None, Some(result)) => Line::Result {
                job_id,
                processed_at,
                result,
            },
            (Some(processed_at), false, None, None) => Line::Record {
                job_id,
                processed_at,
            },
            _ => return None,
        })
    }
}

/// What the ledger's lines add up to.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// The ids processed within the retention, and when.
    pub(super) seen: HashMap<String, OffsetDateTime>,
    /// What a crashed listener left unfinished.
    pub(super) left: Unfinished,
    /// Bytes of the lines compaction drops (all but plain records).
    pub(super) extra_bytes: u64,
    /// Expired ids or damaged lines: the file should be rewritten.
    pub(super) stale: bool,
}

/// Reads the ledger's text, in any mix of line versions, as of `now`.
pub(super) fn replay(text: &[u8], now: OffsetDateTime, retention: Duration) -> Replay {
    let mut r = Replay::default();
    // A torn last line (a crash mid-append) is damaged and skipped: it was
    // never flushed, so nothing was spawned or published on its word. Zero
    // bytes are the file's unused space (never part of a line: JSON escapes
    // them), read as line ends wherever a crash left them.
    for raw in text
        .split(|&b| b == b'\n' || b == 0)
        .filter(|l| !l.is_empty())
    {
        let Some(line) = decode(raw) else {
            r.stale = true;
            continue;
        };
        if !matches!(line, Line::Record { .. }) {
            r.extra_bytes += raw.len() as u64 + 1;
        }
        let mut keep = |id: &str, at: &str| match crate::base::clock::parse(at) {
            Some(at) if now - at <= retention => {
                r.seen.insert(id.to_string(), at);
            }
            Some(_) => r.stale = true,
            None => {}
        };
        match line {
            Line::Record {
                job_id,
                processed_at,
            } => keep(&job_id, &processed_at),
            Line::Start {
                job_id,
                processed_at,
            } => {
                keep(&job_id, &processed_at);
                r.left.started.push(Started {
                    job_id,
                    started_at: processed_at,
                    pid: 0,
                });
            }
            Line::Pid { job_id, pid } => {
                if let Some(s) = r.left.started.iter_mut().find(|s| s.job_id == job_id) {
                    s.pid = pid;
                }
            }
            Line::Result {
                job_id,
                processed_at,
                result,
            } => {
                keep(&job_id, &processed_at);
                r.left.started.retain(|s| s.job_id != job_id);
                r.left.recorded.push(Recorded {
                    job_id,
                    result: result.into_bytes(),
                });
            }
            Line::Checkpoint { .. } => r.left.recorded.clear(),
            // Written by a later version: not ours to act on, and left in
            // place until the file is rewritten for another reason.
            Line::Unknown => {}
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Line> {
        let (id, at) = ("j-1".to_string(), "2026-11-01T08:00:00.125Z".to_string());
        vec![
            Line::Record {
                job_id: id.clone(),
                processed_at: at.clone(),
            },
            Line::Start {
                job_id: id.clone(),
                processed_at: at.clone(),
            },
            Line::Pid {
                job_id: id.clone(),
                pid: 4242,
            },
            Line::Result {
                job_id: id,
                processed_at: at.clone(),
                result: "{\n  \"v\": 1\n}\n".into(),
            },
            Line::Checkpoint { checkpoint: at },
        ]
    }

    #[test]
    fn every_kind_is_written_tagged_with_the_version_and_read_back() {
        let written: Vec<String> = every_kind()
            .iter()
            .map(|l| String::from_utf8(encode(l)).unwrap())
            .collect();
        let at = "\"processedAt\":\"2026-11-01T08:00:00.125Z\"";
        assert_eq!(
            written,
            [
                format!("{{\"v\":2,\"kind\":\"record\",\"jobId\":\"j-1\",{at}}}\n"),
                format!("{{\"v\":2,\"kind\":\"start\",\"jobId\":\"j-1\",{at}}}\n"),
                "{\"v\":2,\"kind\":\"pid\",\"jobId\":\"j-1\",\"pid\":4242}\n".to_string(),
                format!(
                    "{{\"v\":2,\"kind\":\"result\",\"jobId\":\"j-1\",{at},\
                     \"result\":\"{{\\n  \\\"v\\\": 1\\n}}\\n\"}}\n"
                ),
                "{\"v\":2,\"kind\":\"checkpoint\",\"checkpoint\":\"2026-11-01T08:00:00.125Z\"}\n"
                    .to_string(),
            ]
        );
        for (line, text) in every_kind().into_iter().zip(&written) {
            assert_eq!(decode(text.trim_end().as_bytes()), Some(line));
        }
    }

    #[test]
    fn version_1_lines_read_as_their_kind() {
        let v1 = [
            r#"{"jobId":"j-1","processedAt":"2026-11-01T08:00:00.125Z"}"#,
            r#"{"jobId":"j-1","processedAt":"2026-11-01T08:00:00.125Z","run":true}"#,
            r#"{"jobId":"j-1","pid":4242}"#,
            r#"{"jobId":"j-1","processedAt":"2026-11-01T08:00:00.125Z","result":"{\n  \"v\": 1\n}\n"}"#,
            r#"{"checkpoint":"2026-11-01T08:00:00.125Z"}"#,
        ];
        let read: Vec<_> = v1.iter().map(|l| decode(l.as_bytes())).collect();
        let expected: Vec<_> = every_kind().into_iter().map(Some).collect();
        assert_eq!(read, expected);
        // An explicit version 1 is the same format.
        assert_eq!(
            decode(br#"{"v":1,"jobId":"j-1","pid":4242}"#),
            Some(every_kind().swap_remove(2))
        );
    }

    #[test]
    fn later_versions_and_unknown_kinds_are_skipped_and_damage_is_told_apart() {
        for unknown in [
            r#"{"v":3,"kind":"start","jobId":"j-1","processedAt":"2026-11-01T08:00:00.125Z"}"#,
            r#"{"v":3}"#,
            r#"{"v":2,"kind":"lease","jobId":"j-1","until":"2026-11-01T08:00:00.125Z"}"#,
        ] {
            assert_eq!(decode(unknown.as_bytes()), Some(Line::Unknown), "{unknown}");
        }
        for damaged in [
            r#"{"v":2,"kind":"sta"#,
            r#"{"jobId":"x"#,
            r#"{"v":2,"kind":"start","jobId":"j-1"}"#,
            r#"{"v":2,"jobId":"j-1"}"#,
            r#"{"v":"2"}"#,
            r#"{"jobId":"j-1","run":true}"#,
            r#"{"processedAt":"2026-11-01T08:00:00.125Z"}"#,
            "[]",
        ] {
            assert_eq!(decode(damaged.as_bytes()), None, "{damaged}");
        }
    }

    #[test]
    fn replay_keeps_lines_of_later_versions_but_rewrites_damage_and_expiry() {
        let day = Duration::from_secs(86400);
        let now = time::macros::datetime!(2026-11-02 08:00 UTC);
        let record =
            r#"{"v":2,"kind":"record","jobId":"j-1","processedAt":"2026-11-01T08:00:00.125Z"}"#;
        let later = r#"{"v":3,"kind":"record","jobId":"j-2"}"#;
        let r = replay(format!("{record}\n{later}\n").as_bytes(), now, day);
        assert!(r.seen.contains_key("j-1") && r.seen.len() == 1);
        assert!(!r.stale);
        assert_eq!(r.extra_bytes, later.len() as u64 + 1);
        let torn = replay(format!("{record}\n{{\"v\":2,\"ki").as_bytes(), now, day);
        assert!(torn.stale && torn.seen.contains_key("j-1"));
        let expired = replay(record.as_bytes(), now + time::Duration::hours(1), day);
        assert!(expired.stale && expired.seen.is_empty());
    }
}
