//! The hostile corpus (docs/protocol.md §1, §3, §6): write access to the
//! folder alone must never run, cancel or forge anything, and no file, however
//! crafted, may take the listener down or make it write outside the root.
//!
//! Over 400 crafted entries, generated from a fixed seed (a xorshift, no extra
//! crates): random bytes, truncated, deeply nested, NUL-laden and non-UTF-8
//! JSON, duplicate keys, wrong types, 2 MiB bodies, traversal and reserved
//! names, links out of the root, FIFOs, directories, forged signatures and
//! other keys' signatures, and genuinely signed documents that must still be
//! refused. They are dropped into `inbox/` and `cancel/` while a loop listener
//! runs a genuine job, and while the cancel watcher of that job is looking.
//!
//! Only timestamps (which must be fresh) and the ids of the few jobs that may
//! legitimately run (tagged with the test's pid) vary between runs.
//!
//! Last, links planted among the target's own folders (a log file named for a
//! queued job, a whole sub-folder, before or after the listener starts) must
//! never lead a read or write out of the root.
//!
//! On Windows the corpus has no links (Wine cannot create symbolic links),
//! no FIFOs (Windows has none), and none of the names Windows cannot hold
//! (see [`ignored_names`] and [`reserved_file_names`]); everything else is
//! the same.

use std::ffi::OsString;
#[cfg(unix)]
use std::ffi::{CString, OsStr};
use std::fs::File;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

// ---------------------------------------------------------------- the corpus

/// The seed of the corpus.
const SEED: u64 = 0x5eed_f1ee_7d15_7a7c;

const MIB: usize = 1024 * 1024;

/// xorshift64: enough randomness for a corpus, and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// What an entry is on disk. Links and FIFOs are made on Unix only: Wine
/// cannot create symbolic links, and Windows has no FIFOs.
#[derive(Clone)]
enum Content {
    File(Vec<u8>),
    #[cfg(unix)]
    Link(PathBuf),
    #[cfg(unix)]
    Fifo,
    Dir(Vec<(String, Vec<u8>)>),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Place {
    Inbox,
    Cancel,
}

/// What must become of an entry.
#[derive(Clone, PartialEq, Debug)]
enum Fate {
    /// An inbox entry named `<id>.json`: moved to `archive/rejected/` with a
    /// reason; with `Some`, exactly this verdict.
    Rejected(Option<&'static str>),
    /// Duplicate keys where one copy is the validly signed one: refused, or
    /// run once as signed (appending this word to the genuine side file);
    /// the unsigned copy never acts either way.
    RejectedOrSigned(String),
    /// A name readers ignore: never read, moved or deleted.
    Ignored,
    /// A marker named `<id>.json` for a job nobody queued: left alone, or
    /// refused with a reason; never deleted unexplained.
    Untouched,
}

struct Entry {
    place: Place,
    name: OsString,
    content: Content,
    category: &'static str,
    fate: Fate,
}

/// Paths and ids the corpus refers to.
struct Ctx {
    /// Appended to by every hostile job that runs: must never exist.
    hostile_side: PathBuf,
    /// Appended to by the signed copy of a duplicate-key document.
    genuine_side: PathBuf,
    /// A directory outside the root, with the links' targets.
    outside: PathBuf,
    /// The genuine job running while the corpus lands.
    running: String,
    /// The job enqueued afterwards.
    later: String,
    /// Run tag for ids that may legitimately run.
    tag: String,
    now: String,
}

fn s(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// A JSON object from (key, raw JSON value) pairs, in order, duplicates kept.
fn obj(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", s(k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// The fields of a job envelope, in the usual order.
fn job_fields(
    id: &str,
    target: &str,
    created: &str,
    origin: &str,
    spec: &str,
    sig: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("v", "1".into()),
        ("jobId", s(id)),
        ("target", s(target)),
        ("createdAt", s(created)),
        ("origin", s(origin)),
        ("spec", s(spec)),
        ("sig", s(sig)),
    ]
}

fn marker_fields(
    id: &str,
    target: &str,
    created: &str,
    origin: &str,
    sig: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("jobId", s(id)),
        ("target", s(target)),
        ("createdAt", s(created)),
        ("origin", s(origin)),
        ("sig", s(sig)),
    ]
}

/// A job for PC signed with the fleet key over exactly these fields.
fn signed_job(id: &str, target: &str, created: &str, origin: &str, spec: &str) -> String {
    let sig = independent_sig(&job_canonical(id, target, created, origin, spec));
    obj(&job_fields(id, target, created, origin, spec, &sig))
}

fn signed_marker(id: &str, target: &str, created: &str, origin: &str) -> String {
    let sig = independent_sig(&marker_canonical(id, target, created, origin));
    obj(&marker_fields(id, target, created, origin, &sig))
}

/// A spec that appends `word` to `file` when run.
fn appends(file: &Path, word: &str) -> String {
    kit_spec(&["append", p(file), word]).to_string()
}

/// Flips one hex digit of a valid signature at a random place.
fn flip_hex(rng: &mut Rng, sig: &str) -> String {
    let mut b = sig.as_bytes().to_vec();
    let i = rng.below(b.len());
    b[i] = if b[i] == b'0' { b'1' } else { b'0' };
    String::from_utf8(b).unwrap()
}

fn file(bytes: impl Into<Vec<u8>>) -> Content {
    Content::File(bytes.into())
}

fn name(n: &str) -> OsString {
    OsString::from(n)
}

/// Builds the documents of one kind (`job` for the inbox, `marker` for
/// cancel/) under `prefix`: every category except those needing a place of
/// their own. Returns (category, id, content, expected verdict).
fn documents(
    rng: &mut Rng,
    ctx: &Ctx,
    kind: &str,
    prefix: &str,
    scale: usize,
) -> Vec<(&'static str, String, Content, Option<&'static str>)> {
    let is_job = kind == "job";
    let hostile = appends(&ctx.hostile_side, "hostile");
    let now = ctx.now.as_str();
    let mut out: Vec<(&'static str, String, Content, Option<&'static str>)> = Vec::new();
    let mut n = 0;
    let mut id = |cat: &str| {
        n += 1;
        format!("{prefix}-{cat}-{n}")
    };
    // A genuine document for `id`, as the fleet key would sign it.
    let genuine = |id: &str| {
        if is_job {
            signed_job(id, "PC", now, "LAPTOP", &hostile)
        } else {
            signed_marker(id, "PC", now, "LAPTOP")
        }
    };
    let forged_with = |id: &str, sig: &str| {
        if is_job {
            obj(&job_fields(id, "PC", now, "LAPTOP", &hostile, sig))
        } else {
            obj(&marker_fields(id, "PC", now, "LAPTOP", sig))
        }
    };
    let canonical = |id: &str| {
        if is_job {
            job_canonical(id, "PC", now, "LAPTOP", &hostile)
        } else {
            marker_canonical(id, "PC", now, "LAPTOP")
        }
    };

    // Random bytes, some of them starting like an envelope.
    for i in 0..20 * scale {
        let i_d = id("random");
        let len = rng.below(4096);
        let mut b = rng.bytes(len);
        if i.is_multiple_of(3) {
            let mut head = br#"{"jobId":""#.to_vec();
            head.extend(b);
            b = head;
        }
        out.push(("random bytes", i_d, file(b), Some("malformed")));
    }
    // Truncated genuine documents: a prefix never parses, never acts.
    for _ in 0..12 * scale {
        let i_d = id("truncated");
        let doc = genuine(&i_d);
        let cut = 1 + rng.below(doc.len() - 1);
        out.push((
            "truncated JSON",
            i_d,
            file(&doc.as_bytes()[..cut]),
            Some("malformed"),
        ));
    }
    // Deep nesting: no stack overflow, only a refusal.
    let deep = 100_000;
    for (i, body) in [
        "[".repeat(deep),
        "{\"a\":".repeat(deep),
        format!("{}{}", "[".repeat(deep), "]".repeat(deep)),
        format!("{}1{}", "{\"a\":".repeat(deep), "}".repeat(deep)),
    ]
    .into_iter()
    .enumerate()
    {
        let i_d = id("nested");
        let b = if i == 3 {
            // Deep inside an otherwise complete envelope.
            genuine(&i_d).replacen('{', &format!("{{\"x\":{body},"), 1)
        } else {
            body
        };
        out.push(("deeply nested JSON", i_d, file(b), Some("malformed")));
    }
    // NUL bytes: raw ones, and escaped ones in the fields.
    for _ in 0..4 * scale {
        let i_d = id("nul");
        let mut b = genuine(&i_d).into_bytes();
        let at = rng.below(b.len());
        b.insert(at, 0);
        out.push(("NUL bytes", i_d, file(b), Some("malformed")));
    }
    {
        let i_d = id("nul");
        out.push((
            "NUL bytes",
            i_d,
            file(vec![0u8; 1 + rng.below(2000)]),
            Some("malformed"),
        ));
        let i_d = id("nul");
        let mut b = genuine(&i_d).into_bytes();
        b.extend_from_slice(b"\0\0");
        out.push(("NUL bytes", i_d, file(b), Some("malformed")));
        let i_d = id("nul");
        let nul_id = format!("{i_d}\u{0}x");
        let doc = if is_job {
            signed_job(&nul_id, "PC", now, "LAPTOP", &hostile)
        } else {
            signed_marker(&nul_id, "PC", now, "LAPTOP")
        };
        out.push(("NUL bytes", i_d, file(doc), Some("invalid-job-id")));
        let i_d = id("nul");
        let doc = if is_job {
            signed_job(&i_d, "PC", now, "LAP\u{0}TOP", &hostile)
        } else {
            signed_marker(&i_d, "PC", now, "LAP\u{0}TOP")
        };
        out.push(("NUL bytes", i_d, file(doc), Some("invalid-origin")));
    }
    // Non-UTF-8: stray bytes inside strings, other encodings.
    for bad in [
        &b"\xff"[..],
        b"\xc3\x28",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xe9",
        b"\xf8\x88\x80\x80\x80",
    ] {
        let i_d = id("utf8");
        let doc = genuine(&i_d);
        // Inside the origin's value.
        let at = doc.find("LAPTOP").unwrap() + 3;
        let mut b = doc.as_bytes()[..at].to_vec();
        b.extend_from_slice(bad);
        b.extend_from_slice(&doc.as_bytes()[at..]);
        out.push(("non-UTF-8", i_d, file(b), Some("malformed")));
    }
    {
        let i_d = id("utf8");
        let utf16: Vec<u8> = genuine(&i_d)
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        out.push(("non-UTF-8", i_d, file(utf16), Some("malformed")));
        let i_d = id("utf8");
        let mut b = b"\xef\xbb\xbf".to_vec();
        b.extend(forged_with(&i_d, &"0".repeat(64)).into_bytes());
        out.push(("non-UTF-8", i_d, file(b), None));
        let i_d = id("utf8");
        let doc =
            forged_with(&i_d, &"0".repeat(64)).replacen(&s(&i_d), &format!("\"{i_d}\\ud800\""), 1);
        out.push(("non-UTF-8", i_d, file(doc), None));
    }
    // Wrong types for every required field, and for the signature.
    let fields: &[&str] = if is_job {
        &["jobId", "target", "createdAt", "origin", "spec"]
    } else {
        &["jobId", "target", "createdAt", "origin"]
    };
    for field in fields {
        for v in ["1", "null", "true", "[]", "{}", "-1.5e300"] {
            let i_d = id("type");
            let doc = genuine(&i_d);
            let parsed: Value = serde_json::from_str(&doc).unwrap();
            let original = s(parsed[*field].as_str().unwrap());
            let doc = doc.replacen(
                &format!("{}:{original}", s(field)),
                &format!("{}:{v}", s(field)),
                1,
            );
            out.push(("wrong types", i_d, file(doc), Some("malformed")));
        }
        let i_d = id("type");
        let doc = genuine(&i_d);
        let parsed: Value = serde_json::from_str(&doc).unwrap();
        let original = s(parsed[*field].as_str().unwrap());
        let doc = doc.replacen(&format!("{}:{original},", s(field)), "", 1);
        out.push((
            "wrong types (missing field)",
            i_d,
            file(doc),
            Some("malformed"),
        ));
    }
    for v in ["1", "null", "[]", "{}", "true"] {
        let i_d = id("type");
        let sig = independent_sig(&canonical(&i_d));
        let doc = genuine(&i_d).replacen(&s(&sig), v, 1);
        out.push(("wrong types (sig)", i_d, file(doc), Some("bad-signature")));
    }
    for top in ["[]", "\"text\"", "42", "null", "true", "[{}]"] {
        let i_d = id("type");
        out.push(("wrong types (top level)", i_d, file(top), Some("malformed")));
    }
    {
        let i_d = id("type");
        let doc = genuine(&i_d).replacen('{', "{\"v\":1e400,", 1);
        out.push((
            "wrong types (huge number)",
            i_d,
            file(doc),
            Some("malformed"),
        ));
    }
    // Bodies far over the limits.
    {
        let i_d = id("large");
        let mut doc = genuine(&i_d);
        doc.push_str(&" ".repeat(2 * MIB));
        out.push(("2 MiB body", i_d, file(doc), Some("too-large")));
        let i_d = id("large");
        out.push((
            "2 MiB body",
            i_d,
            file(rng.bytes(2 * MIB)),
            Some("too-large"),
        ));
        let i_d = id("large");
        let limit = if is_job { MIB } else { 16 * 1024 };
        let mut doc = genuine(&i_d);
        doc.push_str(&" ".repeat(limit + 1 - doc.len()));
        out.push(("one byte over the limit", i_d, file(doc), Some("too-large")));
    }
    // Traversal and other invalid ids in the body, signed with the fleet key.
    for bad in [
        "../../etc/passwd",
        "..\\x",
        "/etc/passwd",
        "%2e%2e",
        "..",
        ".",
        "a/b",
        "C:\\Windows\\System32",
        "\\\\server\\share",
        "~root",
        "a\u{202e}b",
        "",
        "a b",
        &"x".repeat(65),
    ] {
        let i_d = id("traversal");
        let doc = if is_job {
            signed_job(bad, "PC", now, "LAPTOP", &hostile)
        } else {
            signed_marker(bad, "PC", now, "LAPTOP")
        };
        out.push(("path-traversal ids", i_d, file(doc), Some("invalid-job-id")));
    }
    // Reserved device names as target and origin, signed with the fleet key.
    for (target, origin, verdict) in [
        ("CON", "LAPTOP", "invalid-target"),
        ("com1", "LAPTOP", "invalid-target"),
        ("PC", "nul", "invalid-origin"),
        ("PC", "LPT9", "invalid-origin"),
        ("PC/../LAPTOP", "LAPTOP", "invalid-target"),
    ] {
        let i_d = id("reserved");
        let doc = if is_job {
            signed_job(&i_d, target, now, origin, &hostile)
        } else {
            signed_marker(&i_d, target, now, origin)
        };
        out.push(("reserved names", i_d, file(doc), Some(verdict)));
    }
    // Forged signatures.
    for _ in 0..6 * scale {
        let i_d = id("forged");
        let sig = flip_hex(rng, &independent_sig(&canonical(&i_d)));
        out.push((
            "forged signature",
            i_d.clone(),
            file(forged_with(&i_d, &sig)),
            Some("bad-signature"),
        ));
    }
    {
        let other_sig = |rng: &mut Rng| {
            let other = format!("other-{}", rng.next());
            independent_sig(&canonical(&other))
        };
        let mut sigs = vec![
            other_sig(rng),
            other_sig(rng),
            "0".repeat(64),
            "f".repeat(64),
            flip_hex(rng, &independent_sig(&canonical("x"))).to_ascii_uppercase(),
            "a".repeat(63),
            "a".repeat(65),
            "g".repeat(64),
            String::new(),
            format!(" {}", "a".repeat(63)),
        ];
        // A signature from another kind, or over a near-miss canonical string.
        let base = |i_d: &str| {
            if is_job {
                vec![
                    independent_sig(&marker_canonical(i_d, "PC", now, "LAPTOP")),
                    independent_sig(&format!(
                        "{}\n",
                        job_canonical(i_d, "PC", now, "LAPTOP", &hostile)
                    )),
                    independent_sig(&job_canonical(
                        i_d,
                        "PC",
                        now,
                        "LAPTOP",
                        &format!(" {hostile}"),
                    )),
                    independent_sig(&result_canonical(&json!({
                        "jobId": i_d, "target": "PC", "ok": true, "exitCode": 0, "error": "",
                        "startedAt": now, "finishedAt": now, "detail": "{}",
                    }))),
                ]
            } else {
                vec![
                    independent_sig(&job_canonical(i_d, "PC", now, "LAPTOP", "")),
                    independent_sig(&format!("{}\n", marker_canonical(i_d, "PC", now, "LAPTOP"))),
                    independent_sig(&marker_canonical(i_d, "pc", now, "LAPTOP")),
                    independent_sig(&format!("{}|", marker_canonical(i_d, "PC", now, "LAPTOP"))),
                ]
            }
        };
        for (k, sig) in sigs.drain(..).enumerate() {
            let i_d = id("forged");
            out.push((
                "forged signature",
                i_d.clone(),
                file(forged_with(&i_d, &sig)),
                Some("bad-signature"),
            ));
            if k < 4 {
                let i_d = id("forged");
                let sig = base(&i_d)[k].clone();
                out.push((
                    "forged signature (near-miss canonical)",
                    i_d.clone(),
                    file(forged_with(&i_d, &sig)),
                    Some("bad-signature"),
                ));
            }
        }
        let i_d = id("forged");
        let doc = genuine(&i_d);
        let parsed: Value = serde_json::from_str(&doc).unwrap();
        let sig = s(parsed["sig"].as_str().unwrap());
        out.push((
            "forged signature (unsigned)",
            i_d,
            file(doc.replacen(&format!(",\"sig\":{sig}"), "", 1)),
            Some("bad-signature"),
        ));
    }
    // Signatures made with other keys.
    for k in 0..3 * scale {
        let i_d = id("otherkey");
        let key: Vec<u8> = match k {
            // The key file's text untrimmed: a different key.
            0 => VECTOR_KEY.as_bytes().to_vec(),
            1 => VECTOR_KEY.trim_end().to_ascii_uppercase().into_bytes(),
            2 => VECTOR_KEY.trim_end().as_bytes()[..32].to_vec(),
            _ => rng.bytes(32),
        };
        let sig = sig_with(&key, &canonical(&i_d));
        out.push((
            "signature with the wrong key",
            i_d.clone(),
            file(forged_with(&i_d, &sig)),
            Some("bad-signature"),
        ));
    }
    // Genuinely signed, and still refused.
    {
        let i_d = id("genuine");
        let doc = if is_job {
            signed_job(&i_d, "LAPTOP", now, "LAPTOP", &hostile)
        } else {
            signed_marker(&i_d, "LAPTOP", now, "LAPTOP")
        };
        let verdict = if is_job {
            "wrong-target"
        } else {
            "target-mismatch"
        };
        out.push(("signed for another target", i_d, file(doc), Some(verdict)));
        let i_d = id("genuine");
        out.push((
            "signed for another id",
            i_d.clone(),
            file(genuine(&format!("{i_d}-x"))),
            Some("job-id-mismatch"),
        ));
        let i_d = id("genuine");
        let doc = if is_job {
            signed_job(&i_d, "PC", "yesterday", "LAPTOP", &hostile)
        } else {
            signed_marker(&i_d, "PC", "yesterday", "LAPTOP")
        };
        out.push((
            "signed, bad createdAt",
            i_d,
            file(doc),
            Some("invalid-created-at"),
        ));
        let i_d = id("genuine");
        let doc = if is_job {
            signed_job(&i_d, "PC", now, "LAPTOP|x", &hostile)
        } else {
            signed_marker(&i_d, "PC", now, "LAPTOP|x")
        };
        out.push(("signed, bad origin", i_d, file(doc), Some("invalid-origin")));
    }
    if is_job {
        // One dated hours ahead is deferred, not refused: `listen::a_job_dated_hours_ahead_*`.
        let i_d = id("genuine");
        let doc = signed_job(&i_d, "PC", &ts_offset(-8 * 86400), "LAPTOP", &hostile);
        out.push(("signed, 8 days old", i_d, file(doc), Some("stale")));
        let side = p(&ctx.hostile_side);
        for spec in [
            json!({"argv": kit(&["append", side, "x"]), "shell": true}).to_string(),
            json!({"argv": kit(&["append", side, "x"]),
                   "env": {"FLEET_DISPATCH_ROOT": "/"}})
            .to_string(),
            json!({"argv": []}).to_string(),
            json!({"argv": [1, 2]}).to_string(),
            json!({"argv": ["sh\u{0}", "-c", "echo x"]}).to_string(),
            "not json".to_string(),
            json!([["sh"]]).to_string(),
            format!("{{\"argv\":{}", "[".repeat(deep)),
            json!({"argv": ["sh"], "timeoutSec": -1}).to_string(),
            json!({"argv": ["sh"], "cwd": ""}).to_string(),
        ] {
            let i_d = id("genuine");
            let doc = signed_job(&i_d, "PC", now, "LAPTOP", &spec);
            out.push((
                "signed, unsupported spec",
                i_d,
                file(doc),
                Some("unsupported-spec"),
            ));
        }
        // Other kinds of document in the inbox.
        let i_d = id("kind");
        out.push((
            "a marker in the inbox",
            i_d.clone(),
            file(signed_marker(&i_d, "PC", now, "LAPTOP")),
            Some("malformed"),
        ));
        let i_d = id("kind");
        let doc = signed_result(json!({"v": 1, "jobId": i_d, "target": "PC", "ok": true,
            "exitCode": 0, "error": "", "startedAt": now, "finishedAt": now, "detail": "{}"}));
        out.push((
            "a result in the inbox",
            i_d,
            file(doc.to_string()),
            Some("malformed"),
        ));
    }
    out
}

/// Duplicate keys where one copy is validly signed. The signed copy's spec
/// appends to the genuine side file; the unsigned copy's to the hostile one.
fn duplicate_key_jobs(ctx: &Ctx) -> Vec<(String, String)> {
    let now = ctx.now.as_str();
    let hostile = appends(&ctx.hostile_side, "hostile");
    let mut out = Vec::new();
    for case in 0..14 {
        let id = format!("h-dup-{case}-{}", ctx.tag);
        let word = format!("g-{id}");
        let good = appends(&ctx.genuine_side, &word);
        let sig = independent_sig(&job_canonical(&id, "PC", now, "LAPTOP", &good));
        let bad_sig = independent_sig(&job_canonical(&id, "PC", now, "LAPTOP", &hostile));
        let mut f = job_fields(&id, "PC", now, "LAPTOP", &good, &sig);
        // (field index, extra copy); `true` puts the extra copy last.
        let (at, extra, last): (usize, (&'static str, String), bool) = match case {
            0 => (5, ("spec", s(&hostile)), true),
            1 => (5, ("spec", s(&hostile)), false),
            2 => (
                6,
                ("sig", s(&flip_hex(&mut Rng(case as u64 + 7), &sig))),
                true,
            ),
            3 => (
                6,
                ("sig", s(&flip_hex(&mut Rng(case as u64 + 7), &sig))),
                false,
            ),
            4 => (1, ("jobId", s("h-dup-other")), true),
            5 => (1, ("jobId", s("h-dup-other")), false),
            6 => (2, ("target", s("LAPTOP")), true),
            7 => (2, ("target", s("LAPTOP")), false),
            8 => (3, ("createdAt", s(&ts_offset(-8 * 86400))), true),
            9 => (3, ("createdAt", s(&ts_offset(-8 * 86400))), false),
            10 => (4, ("origin", s("nul")), true),
            11 => (4, ("origin", s("nul")), false),
            // A second signature, genuine, but over the hostile spec.
            12 => (6, ("sig", s(&bad_sig)), true),
            _ => (5, ("spec", s(&hostile)), false),
        };
        if case == 13 {
            // A thousand hostile copies before the signed one.
            for _ in 0..999 {
                f.insert(at, extra.clone());
            }
        } else if last {
            f.insert(at + 1, extra);
        } else {
            f.insert(at, extra);
        }
        out.push((id, obj(&f)));
    }
    out
}

/// Names Windows cannot hold: `\` separates folders there, CON and NUL are
/// devices, control characters and `:` are refused, and a trailing space or
/// dot is dropped (the file would be `i1.json`, a job's own name).
const WINDOWS_CANNOT_HOLD: &[&str] = &[
    "..\\x.json",
    "CON",
    "nul",
    "i1.json ",
    "i1.json.",
    "i1\n.json",
    "i1.json:Zone.Identifier",
];

/// Names readers must ignore, each holding a genuine job or marker; on
/// Windows, less those it cannot hold.
fn ignored_names(ctx: &Ctx, kind: &str) -> Vec<(OsString, Content)> {
    let mut out = Vec::new();
    let hostile = appends(&ctx.hostile_side, "hostile");
    let body = |id: &str| {
        let doc = if kind == "job" {
            signed_job(id, "PC", &ctx.now, "LAPTOP", &hostile)
        } else {
            signed_marker(id, "PC", &ctx.now, "LAPTOP")
        };
        file(doc)
    };
    let long = "x".repeat(65);
    for n in [
        "..\\x.json",
        "%2e%2e.json",
        "%2e%2e%2fetc%2fpasswd.json",
        "..json",
        ".json",
        ".hidden.json",
        "CON",
        "nul",
        "desktop.ini",
        ".lock",
        "i1.json.tmp",
        "i1.JSON",
        "i1.json ",
        "i1.json.",
        "i1 .json",
        "i1\n.json",
        "a.b.json",
        "a_b.json",
        "\u{e9}t\u{e9}.json",
        "i1.json~",
        "Thumbs.db",
        "i1.json:Zone.Identifier",
        "\u{ff23}\u{ff2f}\u{ff2e}.json",
        "i1\u{200b}.json",
        "i1.json.sync-conflict-20261129-193000-ABCDEFG",
        ".syncthing.i1.json.tmp",
        "~syncthing~i1.json.tmp",
        "~$i1.json",
        "i1 (PC's conflicted copy 2026-11-29).json",
        "i1.json.partial",
        &format!("{long}.json"),
    ] {
        if cfg!(windows) && WINDOWS_CANNOT_HOLD.contains(&n) {
            continue;
        }
        let stem = n.split('.').next().unwrap_or("i1");
        let id = if names_ok(stem) { stem } else { "i1" };
        out.push((name(n), body(id)));
    }
    // Names that are not Unicode: Windows names are UTF-16, which cannot
    // hold these bytes.
    #[cfg(unix)]
    {
        out.push((
            OsStr::from_bytes(b"\xff\xfe.json").to_os_string(),
            body("i1"),
        ));
        out.push((OsStr::from_bytes(b"i1\xc3.json").to_os_string(), body("i1")));
    }
    out.push((
        name(".stfolder"),
        Content::Dir(vec![("i1.json".into(), body_bytes(&body("i1")))]),
    ));
    out.push((
        name(".dropbox.cache"),
        Content::Dir(vec![("i1.json".into(), body_bytes(&body("i1")))]),
    ));
    out
}

fn body_bytes(c: &Content) -> Vec<u8> {
    match c {
        Content::File(b) => b.clone(),
        _ => unreachable!(),
    }
}

fn names_ok(stem: &str) -> bool {
    !stem.is_empty()
        && stem.len() <= 64
        && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Entries that are not regular files, named `<id>.json`: links and FIFOs
/// on Unix only (see [`Content`]), directories everywhere.
fn special_entries(ctx: &Ctx, prefix: &str, kind: &str) -> Vec<(&'static str, String, Content)> {
    #[cfg(unix)]
    let mut out = special_unix_entries(ctx, prefix, kind);
    #[cfg(windows)]
    let (mut out, _) = (Vec::new(), kind);
    out.push(("directory", format!("{prefix}-dir-0"), Content::Dir(vec![])));
    let hostile = appends(&ctx.hostile_side, "hostile");
    out.push((
        "directory holding a genuine document",
        format!("{prefix}-dir-1"),
        Content::Dir(vec![(
            "job.json".into(),
            signed_job("inner", "PC", &ctx.now, "LAPTOP", &hostile).into_bytes(),
        )]),
    ));
    out
}

/// Links out of the root and FIFOs, named `<id>.json`.
#[cfg(unix)]
fn special_unix_entries(
    ctx: &Ctx,
    prefix: &str,
    kind: &str,
) -> Vec<(&'static str, String, Content)> {
    let o = &ctx.outside;
    let mut out = vec![
        (
            "symlink to a genuine document outside the root",
            format!("{prefix}-link-0"),
            Content::Link(o.join(if kind == "job" {
                "job.json"
            } else {
                "marker.json"
            })),
        ),
        (
            "symlink to a directory outside the root",
            format!("{prefix}-link-1"),
            Content::Link(o.join("dir")),
        ),
        (
            "symlink to a system file",
            format!("{prefix}-link-2"),
            Content::Link(PathBuf::from("/etc/passwd")),
        ),
        (
            "dangling symlink out of the root",
            format!("{prefix}-link-3"),
            Content::Link(o.join("missing.json")),
        ),
        (
            "relative symlink up and out",
            format!("{prefix}-link-4"),
            Content::Link(PathBuf::from("../../../outside/canary.txt")),
        ),
        (
            "symlink to itself",
            format!("{prefix}-link-5"),
            Content::Link(PathBuf::from(format!("{prefix}-link-5.json"))),
        ),
    ];
    for k in 0..3 {
        out.push(("FIFO", format!("{prefix}-fifo-{k}"), Content::Fifo));
    }
    out
}

/// Reserved device names as file names that match the id pattern. Unix
/// only: on Windows such a name is the device itself, extension or not.
#[cfg(unix)]
fn reserved_file_names() -> [&'static str; 6] {
    ["CON", "nul", "AUX", "com1", "LPT9", "PRN"]
}

/// The whole corpus, except the markers that land one after another at the
/// running job's own slot (see [`running_markers`]).
fn corpus(ctx: &Ctx) -> Vec<Entry> {
    let mut rng = Rng(SEED);
    let mut out = Vec::new();
    for (place, kind, prefix, scale) in [
        (Place::Inbox, "job", "h", 3),
        (Place::Cancel, "marker", "m", 1),
    ] {
        for (category, id, content, verdict) in documents(&mut rng, ctx, kind, prefix, scale) {
            out.push(Entry {
                place,
                name: name(&format!("{id}.json")),
                content,
                category,
                fate: if place == Place::Inbox {
                    Fate::Rejected(verdict)
                } else {
                    Fate::Untouched
                },
            });
        }
        for (category, id, content) in special_entries(ctx, prefix, kind) {
            out.push(Entry {
                place,
                name: name(&format!("{id}.json")),
                content,
                category,
                fate: if place == Place::Inbox {
                    Fate::Rejected(Some("not-a-file"))
                } else {
                    Fate::Untouched
                },
            });
        }
        for (n, content) in ignored_names(ctx, kind) {
            out.push(Entry {
                place,
                name: n,
                content,
                category: "names readers ignore",
                fate: Fate::Ignored,
            });
        }
    }
    // Device names as file names, holding forged documents.
    #[cfg(unix)]
    for n in reserved_file_names() {
        let hostile = appends(&ctx.hostile_side, "hostile");
        let sig = "0".repeat(64);
        out.push(Entry {
            place: Place::Inbox,
            name: name(&format!("{n}.json")),
            content: file(obj(&job_fields(
                n, "PC", &ctx.now, "LAPTOP", &hostile, &sig,
            ))),
            category: "reserved names",
            fate: Fate::Rejected(Some("bad-signature")),
        });
        out.push(Entry {
            place: Place::Cancel,
            name: name(&format!("{n}.json")),
            content: file(obj(&marker_fields(n, "PC", &ctx.now, "LAPTOP", &sig))),
            category: "reserved names",
            fate: Fate::Untouched,
        });
    }
    for (id, doc) in duplicate_key_jobs(ctx) {
        out.push(Entry {
            place: Place::Inbox,
            name: name(&format!("{id}.json")),
            content: file(doc),
            category: "duplicate keys",
            fate: Fate::RejectedOrSigned(format!("g-{id}")),
        });
    }
    // Duplicate keys in markers for jobs nobody queued.
    for case in 0..6u32 {
        let id = format!("m-dup-{case}");
        let sig = independent_sig(&marker_canonical(&id, "PC", &ctx.now, "LAPTOP"));
        let mut f = marker_fields(&id, "PC", &ctx.now, "LAPTOP", &sig);
        let extra = match case {
            0 | 1 => ("sig", s(&"0".repeat(64))),
            2 | 3 => ("target", s("LAPTOP")),
            _ => ("jobId", s("m-dup-other")),
        };
        let at = f.iter().position(|(k, _)| *k == extra.0).unwrap();
        f.insert(if case.is_multiple_of(2) { at + 1 } else { at }, extra);
        out.push(Entry {
            place: Place::Cancel,
            name: name(&format!("{id}.json")),
            content: file(obj(&f)),
            category: "duplicate keys",
            fate: Fate::Untouched,
        });
    }
    out
}

/// Hostile documents for the running job's own marker slot, dropped one
/// after another while its watcher looks. None of them is genuine under any
/// reading: duplicate keys here never include a validly signed copy.
fn running_markers(ctx: &Ctx) -> Vec<(&'static str, Content)> {
    let mut rng = Rng(SEED ^ 0xabcdef);
    let id = ctx.running.as_str();
    let now = ctx.now.as_str();
    let genuine = signed_marker(id, "PC", now, "LAPTOP");
    let sig = independent_sig(&marker_canonical(id, "PC", now, "LAPTOP"));
    let forged = |sig: &str| obj(&marker_fields(id, "PC", now, "LAPTOP", sig));
    let mut out: Vec<(&'static str, Content)> = vec![
        ("empty file", file("")),
        ("random bytes", file(rng.bytes(300))),
        ("random bytes", file(rng.bytes(3000))),
        (
            "truncated genuine marker",
            file(&genuine.as_bytes()[..genuine.len() - 1]),
        ),
        (
            "truncated genuine marker",
            file(&genuine.as_bytes()[..genuine.len() / 2]),
        ),
        ("deeply nested JSON", file("[".repeat(100_000))),
        ("NUL inside a genuine marker", {
            let mut b = genuine.clone().into_bytes();
            b.insert(genuine.len() / 3, 0);
            file(b)
        }),
        ("non-UTF-8 inside a genuine marker", {
            let mut b = genuine.clone().into_bytes();
            b.insert(genuine.find("LAPTOP").unwrap() + 2, 0xff);
            file(b)
        }),
        (
            "UTF-16 genuine marker",
            file(
                genuine
                    .encode_utf16()
                    .flat_map(|u| u.to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
        ),
        ("wrong type", file(genuine.replacen(&s(id), "1", 1))),
        (
            "wrong type (sig)",
            file(genuine.replacen(&s(&sig), "[]", 1)),
        ),
        (
            "unsigned",
            file(genuine.replacen(&format!(",\"sig\":{}", s(&sig)), "", 1)),
        ),
        ("forged signature", file(forged(&flip_hex(&mut rng, &sig)))),
        ("forged signature", file(forged(&"0".repeat(64)))),
        (
            "forged signature, upper case",
            file(forged(&flip_hex(&mut rng, &sig).to_ascii_uppercase())),
        ),
        (
            "job-kind signature",
            file(forged(&independent_sig(&job_canonical(
                id, "PC", now, "LAPTOP", "",
            )))),
        ),
        (
            "wrong key",
            file(forged(&sig_with(
                VECTOR_KEY.as_bytes(),
                &marker_canonical(id, "PC", now, "LAPTOP"),
            ))),
        ),
        (
            "wrong key",
            file(forged(&sig_with(
                &rng.bytes(32),
                &marker_canonical(id, "PC", now, "LAPTOP"),
            ))),
        ),
        (
            "signed for another target",
            file(signed_marker(id, "LAPTOP", now, "LAPTOP")),
        ),
        (
            "signed for another job, renamed",
            file(signed_marker(&format!("{id}-x"), "PC", now, "LAPTOP")),
        ),
        (
            "signed, bad origin",
            file(signed_marker(id, "PC", now, "nul")),
        ),
        (
            "signed, bad createdAt",
            file(signed_marker(id, "PC", "now", "LAPTOP")),
        ),
        (
            "genuine marker padded over 16 KiB",
            file(format!("{genuine}{}", " ".repeat(17 * 1024))),
        ),
        ("2 MiB body", file(rng.bytes(2 * MIB))),
        (
            "duplicate keys, no valid copy",
            file(obj(&{
                let mut f = marker_fields(id, "PC", now, "LAPTOP", &"0".repeat(64));
                f.push(("sig", s(&"1".repeat(64))));
                f
            })),
        ),
        (
            "duplicate keys, no valid copy",
            file(obj(&{
                let mut f = marker_fields(id, "LAPTOP", now, "LAPTOP", &sig);
                f.insert(1, ("target", s("LAPTOP2")));
                f
            })),
        ),
        (
            "directory",
            Content::Dir(vec![("m.json".into(), genuine.clone().into_bytes())]),
        ),
    ];
    // Links and a FIFO, before the directory (see [`Content`]).
    #[cfg(unix)]
    {
        let at = out.len() - 1;
        out.splice(
            at..at,
            [
                (
                    "symlink to a genuine marker outside the root",
                    Content::Link(ctx.outside.join("marker.json")),
                ),
                (
                    "symlink to a directory outside the root",
                    Content::Link(ctx.outside.join("dir")),
                ),
                ("FIFO", Content::Fifo),
            ],
        );
    }
    // Left in place when the job ends: refused with a reason, never acted on.
    out.push((
        "forged signature (left in place)",
        file(forged(&"1".repeat(64))),
    ));
    out
}

// ---------------------------------------------------------------- disk

#[cfg(unix)]
fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

/// Creates an entry whole: files and directories are made under a name
/// readers ignore and then renamed into place, so no reader ever sees a
/// prefix (a prefix of a genuine document padded with spaces would be a
/// genuine document, and a fair run).
fn materialize(path: &Path, content: &Content) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmp = path.with_file_name(format!(".hostile.{}.{n}.tmp", std::process::id()));
    match content {
        Content::File(b) => {
            std::fs::write(&tmp, b).unwrap();
            replace_with(&tmp, path);
        }
        #[cfg(unix)]
        Content::Link(to) => std::os::unix::fs::symlink(to, path).unwrap(),
        #[cfg(unix)]
        Content::Fifo => mkfifo(path),
        Content::Dir(files) => {
            std::fs::create_dir(&tmp).unwrap();
            for (n, b) in files {
                std::fs::write(tmp.join(n), b).unwrap();
            }
            std::fs::rename(&tmp, path).unwrap();
        }
    }
}

/// Renames `tmp` over `path`. On Windows a file the listener is reading
/// at that moment cannot be replaced (a sharing violation, "Access
/// denied"): tried again for up to 5 s, as a sync engine retries.
fn replace_with(tmp: &Path, path: &Path) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match std::fs::rename(tmp, path) {
            Ok(()) => return,
            Err(e)
                if cfg!(windows)
                    && e.kind() == std::io::ErrorKind::PermissionDenied
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("cannot put {} in place: {e}", path.display()),
        }
    }
}

fn remove_entry(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

/// True when `path` is still exactly `content` (never following links).
fn holds(path: &Path, content: &Content) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let t = m.file_type();
    match content {
        Content::File(b) => t.is_file() && std::fs::read(path).is_ok_and(|r| &r == b),
        #[cfg(unix)]
        Content::Link(to) => t.is_symlink() && std::fs::read_link(path).is_ok_and(|r| &r == to),
        #[cfg(unix)]
        Content::Fifo => t.is_fifo(),
        Content::Dir(files) => {
            t.is_dir()
                && files
                    .iter()
                    .all(|(n, b)| std::fs::read(path.join(n)).is_ok_and(|r| &r == b))
        }
    }
}

/// One entry of a snapshot: its kind, bytes, link target, mode (on
/// Windows, the read-only flag) and mtime.
type Seen = (String, Vec<u8>, Option<PathBuf>, u32, Option<SystemTime>);

/// Everything under `dir` (or `dir` itself, for a file), never following
/// links: a change anywhere, even a directory's mtime, shows.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Seen)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
    {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        let t = m.file_type();
        let kind = if t.is_symlink() {
            "link"
        } else if t.is_dir() {
            "dir"
        } else if t.is_file() {
            "file"
        } else {
            "other"
        };
        let bytes = if t.is_file() {
            std::fs::read(e.path()).unwrap()
        } else {
            Vec::new()
        };
        let link = t
            .is_symlink()
            .then(|| std::fs::read_link(e.path()).unwrap());
        out.push((
            e.path().to_path_buf(),
            (kind.to_string(), bytes, link, mode(&m), m.modified().ok()),
        ));
    }
    out
}

#[cfg(unix)]
fn mode(m: &std::fs::Metadata) -> u32 {
    m.permissions().mode()
}

#[cfg(windows)]
fn mode(m: &std::fs::Metadata) -> u32 {
    u32::from(m.permissions().readonly())
}

/// What lies outside the root and must never change: the world's other
/// directories (key, home, the links' targets), the names beside the root,
/// and the system file a link points to.
fn outside_state(w: &World) -> Vec<(PathBuf, Seen)> {
    let mut all = Vec::new();
    for d in ["keys", "home", "outside"] {
        all.extend(snapshot(&w.dir.path().join(d)));
    }
    // The system file a link of the corpus points to (links: Unix only).
    #[cfg(unix)]
    all.extend(snapshot(Path::new("/etc/passwd")));
    // The state directory appears with the first listener; it is ours.
    let mut beside: Vec<String> = std::fs::read_dir(w.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "state")
        .collect();
    beside.sort();
    all.push((
        w.dir.path().to_path_buf(),
        (
            "names".into(),
            beside.join("\n").into_bytes(),
            None,
            0,
            None,
        ),
    ));
    all
}

fn assert_same_outside(before: &[(PathBuf, Seen)], after: &[(PathBuf, Seen)]) {
    let b: std::collections::BTreeMap<_, _> = before.iter().cloned().collect();
    let a: std::collections::BTreeMap<_, _> = after.iter().cloned().collect();
    let changed: std::collections::BTreeSet<String> = b
        .keys()
        .chain(a.keys())
        .filter(|k| b.get(*k) != a.get(*k))
        .map(|k| k.display().to_string())
        .collect();
    assert!(changed.is_empty(), "written outside the root: {changed:?}");
}

/// The world's fixtures outside the root.
fn make_outside(w: &World, ctx: &Ctx) {
    let o = &ctx.outside;
    std::fs::create_dir_all(o.join("dir")).unwrap();
    let hostile = appends(&ctx.hostile_side, "hostile");
    std::fs::write(
        o.join("job.json"),
        signed_job("h-link-0", "PC", &ctx.now, "LAPTOP", &hostile),
    )
    .unwrap();
    std::fs::write(
        o.join("marker.json"),
        signed_marker(&ctx.running, "PC", &ctx.now, "LAPTOP"),
    )
    .unwrap();
    std::fs::write(
        o.join("dir").join("a.json"),
        signed_job("a", "PC", &ctx.now, "LAPTOP", &hostile),
    )
    .unwrap();
    std::fs::write(o.join("canary.txt"), b"canary").unwrap();
    std::fs::create_dir_all(w.dir.path().join("work")).unwrap();
    // Old mtimes, so that a rewrite with equal content would still show.
    for f in ["job.json", "marker.json", "dir/a.json", "canary.txt"] {
        File::options()
            .write(true)
            .open(o.join(f))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    }
}

fn dir_of(w: &World, place: Place) -> PathBuf {
    w.pc().join(match place {
        Place::Inbox => "inbox",
        Place::Cancel => "cancel",
    })
}

/// Every verdict docs/protocol.md §6 and §7 name.
const VERDICTS: &[&str] = &[
    "not-a-file",
    "unreadable",
    "too-large",
    "malformed",
    "invalid-job-id",
    "invalid-target",
    "invalid-origin",
    "invalid-created-at",
    "job-id-mismatch",
    "target-mismatch",
    "wrong-target",
    "bad-signature",
    "unsupported-spec",
    "already-processed",
    "stale",
];

/// Every entry of archive/rejected has its reason, and every reason its entry.
fn assert_rejected_explained(w: &World) -> usize {
    let dir = w.pc().join("archive").join("rejected");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut subjects = 0;
    for n in &names {
        if let Some(subject) = n.strip_suffix(".reason.json") {
            assert!(
                names.iter().any(|m| m == subject),
                "a reason without its file: {n}"
            );
            continue;
        }
        subjects += 1;
        let f = dir.join(format!("{n}.reason.json"));
        let text = std::fs::read_to_string(&f).unwrap_or_else(|_| panic!("{n} has no reason"));
        let r: Value = serde_json::from_str(&text).unwrap();
        let verdict = r["verdict"].as_str().unwrap_or_default();
        assert!(VERDICTS.contains(&verdict), "{n}: {r}");
        for k in ["message", "rejectedAt"] {
            assert!(
                r[k].as_str().is_some_and(|v| !v.is_empty()),
                "{n}: {k} in {r}"
            );
        }
    }
    subjects
}

/// A loop listener with `--json` and its output in files (never a pipe that
/// could fill up and block it), killed on drop.
struct Listener {
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
}

impl Listener {
    fn start(w: &World) -> Listener {
        let work = w.dir.path().join("work");
        let out = work.join("listener.out");
        let err = work.join("listener.err");
        let hb = w.pc().join("listener.json");
        let _ = std::fs::remove_file(&hb);
        let child = w
            .bg_cmd()
            .args([
                "--json",
                "listen",
                "--poll-interval",
                "100ms",
                "--settle",
                "1s",
            ])
            .stdout(File::create(&out).unwrap())
            .stderr(File::create(&err).unwrap())
            .start();
        let l = Listener {
            child: Some(child),
            out,
            err,
        };
        wait_until(Duration::from_secs(10), || hb.exists());
        l
    }

    fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Stops it politely (Ctrl-C on Unix, `listen --drain` on Windows, see
    /// [`polite_stop`]); returns its status, its JSON summary and its stderr.
    fn stop(mut self, w: &World) -> (i32, Value, String) {
        polite_stop::ask(w, self.child.as_ref().unwrap(), libc::SIGINT);
        let mut c = self.child.take().unwrap();
        let until = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < until, "the listener did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        let v = serde_json::from_str(out.trim()).unwrap_or(Value::Null);
        (status.code().unwrap_or(-1), v, self.stderr())
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn new_ctx(w: &World) -> Ctx {
    let tag = format!("{:x}", std::process::id());
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Ctx {
        hostile_side: w.dir.path().join("work").join("hostile"),
        genuine_side: w.dir.path().join("work").join("genuine"),
        outside: w.dir.path().join("outside"),
        running: format!("running-{tag}-{nanos:x}"),
        later: format!("later-{tag}-{nanos:x}"),
        tag: format!("{tag}{nanos:x}"),
        now: now_text(),
    }
}

fn summary(entries: &[Entry], running: usize) -> String {
    let mut by: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for e in entries {
        let place = match e.place {
            Place::Inbox => "inbox",
            Place::Cancel => "cancel",
        };
        *by.entry((place, e.category)).or_default() += 1;
    }
    let mut s = format!(
        "{} entries + {running} at the running job's marker slot\n",
        entries.len()
    );
    for ((place, cat), n) in by {
        s.push_str(&format!("  {place:6} {n:4}  {cat}\n"));
    }
    s
}

// ---------------------------------------------------------------- tests

#[test]
fn the_hostile_corpus_never_runs_cancels_or_writes_outside_and_the_listener_survives() {
    let started = Instant::now();
    let w = World::with_target();
    let ctx = new_ctx(&w);
    make_outside(&w, &ctx);
    let entries = corpus(&ctx);
    let slot = running_markers(&ctx);
    eprintln!("{}", summary(&entries, slot.len()));
    assert!(entries.len() + slot.len() >= 400, "{}", entries.len());
    let key_before = std::fs::read(&w.key).unwrap();
    let outside_before = outside_state(&w);
    let release = w.dir.path().join("work").join("release");
    let running_side = w.dir.path().join("work").join("running");
    let later_side = w.dir.path().join("work").join("later");

    let mut l = Listener::start(&w);
    // Half the inbox corpus lands while the listener is idle and scanning.
    let first_half = |i: usize, e: &Entry| e.place == Place::Inbox && i.is_multiple_of(2);
    let first: Vec<&Entry> = (entries.iter().enumerate())
        .filter(|(i, e)| first_half(*i, e))
        .map(|(_, e)| e)
        .collect();
    let second: Vec<&Entry> = (entries.iter().enumerate())
        .filter(|(i, e)| !first_half(*i, e))
        .map(|(_, e)| e)
        .collect();
    for e in &first {
        materialize(&dir_of(&w, e.place).join(&e.name), &e.content);
    }
    // A genuine job that runs while the rest lands.
    let spec = json!({
        "argv": kit(&[
            "append", p(&running_side), "start",
            "wait-for", p(&release),
            "append", p(&running_side), "end",
        ]),
        "timeoutSec": 120,
    });
    w.write_job("PC", &ctx.running, "PC", &now_text(), &spec);
    wait_until(Duration::from_secs(20), || {
        lines(&running_side) == ["start"]
    });
    for e in &second {
        materialize(&dir_of(&w, e.place).join(&e.name), &e.content);
    }
    // A forged marker already waits in the later job's slot.
    std::fs::write(
        w.marker(&ctx.later),
        obj(&marker_fields(
            &ctx.later,
            "PC",
            &ctx.now,
            "LAPTOP",
            &"0".repeat(64),
        )),
    )
    .unwrap();
    // The running job's own slot sees one hostile marker after another,
    // each for several watcher polls (100 ms).
    let slot_path = w.marker(&ctx.running);
    for (i, (what, content)) in slot.iter().enumerate() {
        materialize(&slot_path, content);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(lines(&running_side), ["start"], "stopped by {what}");
        assert!(!w.result_path(&ctx.running).exists(), "ended by {what}");
        if i + 1 < slot.len() {
            remove_entry(&slot_path);
        }
    }
    std::fs::write(&release, b"").unwrap();
    let r = w.wait_result(&ctx.running, Duration::from_secs(20));
    assert_eq!(
        (r["ok"].clone(), r["exitCode"].clone(), r["error"].clone()),
        (json!(true), json!(0), json!("")),
        "{r}"
    );
    assert!(w.detail(&ctx.running).get("marker").is_none(), "{r}");
    assert_eq!(lines(&running_side), ["start", "end"]);

    // A genuine job enqueued afterwards still runs, despite the forged
    // marker in its slot.
    let mut args = vec!["enqueue", "--target", "PC", "--job-id", &ctx.later, "--"];
    let argv = kit(&["append", p(&later_side), "later"]);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
    let r = w.wait_result(&ctx.later, Duration::from_secs(30));
    assert_eq!(
        (r["ok"].clone(), r["error"].clone()),
        (json!(true), json!("")),
        "{r}"
    );
    assert_eq!(lines(&later_side), ["later"]);

    // Every inbox entry named like a job is judged; only ignored names stay.
    let inbox = w.pc().join("inbox");
    let ignored: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.place == Place::Inbox && e.fate == Fate::Ignored)
        .collect();
    wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&inbox).unwrap().count() == ignored.len()
    });
    // Past the settle time, in case anything was still waiting.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(l.alive(), "the listener died: {}", l.stderr());
    let (code, summary_json, stderr) = l.stop(&w);
    assert_eq!(code, polite_stop::EXIT, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Nothing hostile ran; what ran, ran as signed.
    assert!(
        !ctx.hostile_side.exists(),
        "a hostile job ran: {:?}",
        lines(&ctx.hostile_side)
    );
    let genuine = lines(&ctx.genuine_side);
    let mut ran_signed = 0;
    let mut rejected_inbox = 0;
    let mut mismatches = Vec::new();
    for e in &entries {
        let here = dir_of(&w, e.place).join(&e.name);
        let n = e.name.to_string_lossy().into_owned();
        let rejected = w.rejected(&n);
        match &e.fate {
            Fate::Ignored => {
                if !holds(&here, &e.content) {
                    mismatches.push(format!("{:?} ({}) moved or changed", e.name, e.category));
                }
            }
            Fate::Untouched => {
                let explained = holds(&rejected, &e.content)
                    && w.rejected(&format!("{n}.reason.json")).exists();
                if !holds(&here, &e.content) && !explained {
                    mismatches.push(format!("cancel/{n} ({}) vanished unexplained", e.category));
                }
            }
            Fate::Rejected(verdict) => {
                rejected_inbox += 1;
                if std::fs::symlink_metadata(&here).is_ok() {
                    mismatches.push(format!("inbox/{n} ({}) still in the inbox", e.category));
                } else if !holds(&rejected, &e.content) {
                    mismatches.push(format!("inbox/{n} ({}) not kept as it was", e.category));
                } else if let Some(v) = verdict {
                    let text = std::fs::read_to_string(w.rejected(&format!("{n}.reason.json")))
                        .unwrap_or_default();
                    let r: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    if r["verdict"] != *v {
                        mismatches.push(format!("inbox/{n} ({}): want {v}, got {r}", e.category));
                    }
                }
            }
            Fate::RejectedOrSigned(word) => {
                let id = n.trim_end_matches(".json");
                let times = genuine.iter().filter(|l| *l == word).count();
                if holds(&rejected, &e.content) {
                    rejected_inbox += 1;
                    if times != 0 {
                        mismatches.push(format!("{n} was refused but ran"));
                    }
                } else if w.result_path(id).exists() {
                    ran_signed += 1;
                    let r = w.result(id);
                    if times != 1 || r["ok"] != true || !w.done(id).exists() {
                        mismatches.push(format!("{n} ran {times} times as signed: {r}"));
                    }
                } else {
                    mismatches.push(format!("{n} neither refused nor run"));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} wrong:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    eprintln!(
        "{rejected_inbox} inbox entries refused; {ran_signed} duplicate-key documents ran as \
         signed (lexically last copy); {} ignored names untouched",
        ignored.len()
    );

    // Every rejection is explained.
    let explained = assert_rejected_explained(&w);
    assert!(
        explained >= rejected_inbox,
        "{explained} < {rejected_inbox}"
    );
    let c = &summary_json["counters"];
    assert_eq!(c["rejected"], rejected_inbox as u64, "{summary_json}");
    assert_eq!(c["done"], 2 + ran_signed as u64, "{summary_json}");
    for k in ["failed", "cancelled", "deferred", "skipped"] {
        assert_eq!(c[k], 0, "{k} in {summary_json}");
    }
    // Only the genuine jobs have results and logs.
    let mut expect: Vec<String> = vec![
        format!("{}.json", ctx.running),
        format!("{}.json", ctx.later),
    ];
    expect.extend(
        entries
            .iter()
            .filter(|e| matches!(e.fate, Fate::RejectedOrSigned(_)))
            .map(|e| e.name.to_string_lossy().into_owned())
            .filter(|n| w.result_path(n.trim_end_matches(".json")).exists()),
    );
    expect.sort();
    assert_eq!(files(&w.pc().join("results")), expect);

    // Nothing written outside the root; the key unchanged and never copied in.
    assert_same_outside(&outside_before, &outside_state(&w));
    assert_eq!(std::fs::read(&w.key).unwrap(), key_before);
    let key_text = VECTOR_KEY.trim_end().as_bytes();
    for f in files(&w.root) {
        let p = w.root.join(&f);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            let b = std::fs::read(&p).unwrap();
            assert!(
                !b.windows(key_text.len()).any(|x| x == key_text),
                "the key is in {f}"
            );
        }
    }
    eprintln!("hostile corpus: {:?}", started.elapsed());
}

#[test]
fn verify_marker_and_status_survive_the_marker_corpus_and_call_nothing_hostile_valid() {
    let w = World::with_target();
    let ctx = new_ctx(&w);
    make_outside(&w, &ctx);
    let cancel = w.pc().join("cancel");
    let mut checked = Vec::new();
    for e in corpus(&ctx).iter().filter(|e| e.place == Place::Cancel) {
        materialize(&cancel.join(&e.name), &e.content);
        checked.push((cancel.join(&e.name), e.category, e.name.clone()));
    }
    let outside_before = outside_state(&w);
    let run_bounded = |c: &mut assert_cmd::Command| output_within(c, Duration::from_secs(10));
    let mut valid = Vec::new();
    for (path, category, n) in &checked {
        let (code, out, err) = run_bounded(w.cmd().arg("verify-marker").arg(path));
        assert!(!err.contains("panicked"), "{n:?}: {err}");
        // 1: a plain no; 64, 65, 66: a name or file that is no marker at all.
        assert!(
            matches!(code, 0 | 1 | 64 | 65 | 66),
            "{n:?} ({category}): exit {code}: {out}{err}"
        );
        if code == 0 {
            valid.push(format!("{n:?}"));
        }
    }
    // A duplicate-key marker is genuine under one reading or the other
    // (lexically first or last copy); every other marker is hostile.
    for v in &valid {
        assert!(v.starts_with("\"m-dup-"), "verify-marker called {v} valid");
    }
    let (code, out, err) = run_bounded(w.cmd().args(["--json", "status", "--target", "PC"]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("panicked"));
    serde_json::from_str::<Value>(out.trim()).unwrap();
    let (code, out, err) = run_bounded(w.cmd().args(["--json", "sweep", "--dry-run"]));
    assert_eq!(code, 0, "{out}{err}");
    assert_same_outside(&outside_before, &outside_state(&w));
    for (path, _, n) in &checked {
        assert!(std::fs::symlink_metadata(path).is_ok(), "{n:?} vanished");
    }
}

// ------------------------------------------ links planted among our folders

/// `listen --once` that must end by itself; returns (status, stdout+stderr).
fn listen_once_bounded(w: &World) -> (i32, String) {
    let (code, out, err) = output_within(
        w.cmd().args([
            "listen",
            "--once",
            "--poll-interval",
            "100ms",
            "--settle",
            "0s",
        ]),
        Duration::from_secs(20),
    );
    let text = format!("{out}{err}");
    assert!(!text.contains("panicked"), "{text}");
    (code, text)
}

/// A directory outside the root holding two files, with old mtimes.
fn outside_dir(w: &World, name: &str) -> PathBuf {
    let d = w.dir.path().join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("precious.txt"), b"precious").unwrap();
    std::fs::write(d.join("junk.json"), b"{not json").unwrap();
    for f in ["precious.txt", "junk.json"] {
        File::options()
            .write(true)
            .open(d.join(f))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    }
    d
}

/// Replaces one of the target's folders with a link to `to`.
#[cfg(unix)]
fn replace_with_link(w: &World, sub: &str, to: &Path) {
    let p = w.pc().join(sub);
    std::fs::remove_dir_all(&p).unwrap();
    std::os::unix::fs::symlink(to, &p).unwrap();
}

// Unix only: it plants symbolic links, which Wine cannot create.
#[cfg(unix)]
#[test]
fn a_log_file_planted_as_a_link_out_of_the_root_is_never_written_through() {
    let w = World::with_target();
    let outside = outside_dir(&w, "outside");
    let id = format!("logs-{:x}", std::process::id());
    let spec = kit_spec(&["out", "job-output", "err", "job-errors"]);
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    // Whoever can write the folder sees the queued id and plants links.
    let logs = w.pc().join("logs");
    std::os::unix::fs::symlink(
        outside.join("precious.txt"),
        logs.join(format!("{id}.stdout.log")),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.join("junk.json"),
        logs.join(format!("{id}.stderr.log")),
    )
    .unwrap();
    let before = snapshot(&outside);
    listen_once_bounded(&w);
    assert_same_outside(&before, &snapshot(&outside));
}

// Unix only: it plants symbolic links, which Wine cannot create.
#[cfg(unix)]
#[test]
fn folders_of_the_target_replaced_by_links_out_of_the_root_are_never_used() {
    let mut wrong = Vec::new();
    for sub in [
        "inbox",
        "cancel",
        "running",
        "results",
        "logs",
        "archive/done",
        "archive/consumed",
        "archive/rejected",
    ] {
        let w = World::with_target();
        let outside = outside_dir(&w, "outside");
        let side = w.dir.path().join("side");
        let spec = kit_spec(&["append", p(&side), "ran"]);
        replace_with_link(&w, sub, &outside);
        // Work that touches every folder: a job that runs, garbage to
        // reject, a job cancelled before start.
        let inbox = w.pc().join("inbox");
        let ran = format!("ran-{:x}", std::process::id());
        let stopped = format!("stopped-{:x}", std::process::id());
        std::fs::write(
            inbox.join(format!("{ran}.json")),
            signed_job(&ran, "PC", &now_text(), "LAPTOP", &spec.to_string()),
        )
        .unwrap();
        std::fs::write(inbox.join("garbage.json"), b"\xff garbage").unwrap();
        std::fs::write(
            inbox.join(format!("{stopped}.json")),
            signed_job(&stopped, "PC", &now_text(), "LAPTOP", &spec.to_string()),
        )
        .unwrap();
        std::fs::write(
            w.pc().join("cancel").join(format!("{stopped}.json")),
            signed_marker(&stopped, "PC", &now_text(), "LAPTOP"),
        )
        .unwrap();
        let before = snapshot(&outside);
        let (code, text) = listen_once_bounded(&w);
        let after = snapshot(&outside);
        if before != after {
            let names: Vec<String> = after
                .iter()
                .map(|(p, _)| p.strip_prefix(&outside).unwrap().display().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            wrong.push(format!(
                "{sub} as a link: outside now holds {names:?} (exit {code}: {})",
                text.lines().last().unwrap_or_default()
            ));
        }
        if sub == "inbox" && side.exists() {
            wrong.push("a job was read and run through an inbox link".into());
        }
        // The link is moved aside and the folder made again: the listener
        // goes on (it exited 77 once, and at every restart after).
        if code != 0 || !text.contains("repaired 1") {
            wrong.push(format!(
                "{sub} as a link: exit {code}, not repaired: {text}"
            ));
        }
        if !std::fs::symlink_metadata(w.pc().join(sub)).is_ok_and(|m| m.is_dir()) {
            wrong.push(format!("{sub} was not made again"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The reason files in `archive/rejected/` whose verdict is `not-a-folder`.
fn folder_reasons(w: &World) -> Vec<Value> {
    let dir = w.pc().join("archive").join("rejected");
    files(&dir)
        .iter()
        .filter(|n| n.ends_with(".reason.json"))
        .filter_map(|n| serde_json::from_slice::<Value>(&std::fs::read(dir.join(n)).ok()?).ok())
        .filter(|v| v["verdict"] == "not-a-folder")
        .collect()
}

#[test]
fn a_layout_folder_that_is_a_file_or_a_link_is_moved_aside_and_the_listener_goes_on() {
    let mut wrong = Vec::new();
    // `PC` is the target folder itself, moved aside in the root.
    for sub in [
        "PC",
        "inbox",
        "cancel",
        "running",
        "results",
        "logs",
        "archive",
        "archive/done",
        "archive/consumed",
        "archive/rejected",
    ] {
        // A link only on Unix: Wine cannot create symbolic links.
        let kinds: &[bool] = if cfg!(unix) { &[false, true] } else { &[false] };
        for &as_link in kinds {
            let w = World::with_target();
            let outside = outside_dir(&w, "outside");
            let side = w.dir.path().join("side");
            let id = format!("ok-{:x}", std::process::id());
            w.write_job(
                "PC",
                &id,
                "PC",
                &now_text(),
                &crate::util::appends(&side, "ran"),
            );
            let p = if sub == "PC" {
                w.pc()
            } else {
                w.pc().join(sub)
            };
            std::fs::rename(&p, w.dir.path().join("put-away")).unwrap();
            if as_link {
                #[cfg(unix)]
                std::os::unix::fs::symlink(&outside, &p).unwrap();
            } else {
                std::fs::write(&p, b"a file where a folder belongs").unwrap();
            }
            if sub == "inbox" {
                std::fs::rename(
                    w.dir.path().join("put-away"),
                    w.dir.path().join("old-inbox"),
                )
                .unwrap();
            }
            let before = snapshot(&outside);
            let (code, text) = listen_once_bounded(&w);
            let what = format!("{sub} as a {}", if as_link { "link" } else { "file" });
            if code != 0 || !text.contains("repaired 1") {
                wrong.push(format!("{what}: exit {code}: {text}"));
                continue;
            }
            if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                wrong.push(format!("{what}: not made again"));
            }
            if before != snapshot(&outside) {
                wrong.push(format!("{what}: the outside folder changed"));
            }
            // Moved aside with a reason, or beside `archive/` for the two
            // folders that hold the reasons.
            let beside = files(&w.pc())
                .iter()
                .chain(files(&w.pc().join("archive")).iter())
                .chain(files(&w.root).iter())
                .any(|n| n.ends_with(".moved-aside"));
            let explained = folder_reasons(&w)
                .iter()
                .any(|r| r["kind"] == "folder" && r["message"].as_str().unwrap().starts_with(sub));
            if matches!(sub, "PC" | "archive" | "archive/rejected") {
                if !beside {
                    wrong.push(format!("{what}: no <name>.<time>.moved-aside entry"));
                }
            } else if !explained {
                wrong.push(format!(
                    "{what}: no not-a-folder reason: {:?}",
                    folder_reasons(&w)
                ));
            }
            // The job went away with its inbox (or the whole target).
            if !matches!(sub, "inbox" | "PC") && lines(&side) != ["ran"] {
                wrong.push(format!("{what}: the queued job did not run once"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// Unix only: it plants symbolic links, which Wine cannot create.
#[cfg(unix)]
#[test]
fn folders_swapped_for_links_while_the_listener_runs_are_never_written_through() {
    let w = World::with_target();
    let side = w.dir.path().join("side");
    std::fs::create_dir_all(w.dir.path().join("work")).unwrap();
    let l = Listener::start(&w);
    let mut outs = Vec::new();
    for sub in ["results", "logs", "archive/done", "archive/rejected"] {
        let o = outside_dir(&w, &format!("outside-{}", sub.replace('/', "-")));
        replace_with_link(&w, sub, &o);
        outs.push(o);
    }
    let before: Vec<_> = outs.iter().map(|o| snapshot(o)).collect();
    let id = format!("swapped-{:x}", std::process::id());
    let spec = kit_spec(&["append", p(&side), "ran"]);
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    std::fs::write(w.pc().join("inbox").join("garbage.json"), b"garbage").unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    let after: Vec<_> = outs.iter().map(|o| snapshot(o)).collect();
    let (_, _, stderr) = l.stop(&w);
    assert!(!stderr.contains("panicked"), "{stderr}");
    for ((o, b), a) in outs.iter().zip(&before).zip(&after) {
        assert!(b == a, "written through the link to {}", o.display());
    }
}
