//! Unit tests of the job rules: the spec text, its header and payload,
//! and what a listener would refuse.

use super::rules::spec_field;
use super::*;

/// When the jobs of these tests were made.
const T0: &str = "2026-11-29T10:00:00.000Z";

#[test]
fn spec_fields() {
    let s = Spec::parse(
        r#"{"argv":["a","b"],"cwd":"/tmp","env":{"X":"1"},"timeoutSec":1.5,"graceSec":2,"priority":"high","parentJobId":"p-1","label":"hi"}"#,
    )
    .unwrap();
    assert_eq!(s.payload.argv, ["a", "b"]);
    assert_eq!(s.header.timeout, Some(Duration::from_millis(1500)));
    assert_eq!(s.header.grace(), Duration::from_secs(2));
    assert_eq!(s.header.priority, Priority::High);
    assert_eq!(Spec::parse(&s.to_text()).unwrap(), s);
}

#[test]
fn spec_refusals() {
    for bad in [
        r#"{"argv":["a"],"shell":true}"#,
        r#"{"argv":[]}"#,
        r#"{"argv":"a"}"#,
        r#"{"argv":[1]}"#,
        r#"{}"#,
        r#"[]"#,
        r#"{"argv":["a"],"env":{"FLEET_DISPATCH_JOB_ID":"x"}}"#,
        r#"{"argv":["a"],"env":{"A-B":"x"}}"#,
        r#"{"argv":["a"],"env":{"A":1}}"#,
        r#"{"argv":["a"],"timeoutSec":-1}"#,
        r#"{"argv":["a"],"timeoutSec":1e300}"#,
        r#"{"argv":["a"],"timeoutSec":"5"}"#,
        r#"{"argv":["a"],"priority":"urgent"}"#,
        r#"{"argv":["a"],"parentJobId":"../x"}"#,
        r#"{"argv":["a\u0000b"]}"#,
        r#"{"argv":["a"],"after":[]}"#,
        r#"{"argv":["a"],"after":{"target":"PC","jobId":"x"}}"#,
        r#"{"argv":["a"],"after":[{"target":"PC"}]}"#,
        r#"{"argv":["a"],"after":[{"target":"PC","jobId":"../x"}]}"#,
        r#"{"argv":["a"],"after":[{"target":"a/b","jobId":"x"}]}"#,
        r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x","ok":true}]}"#,
        r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x"},{"target":"pc","jobId":"x"}]}"#,
        r#"{"argv":["a"],"afterAny":true}"#,
        r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x"}],"afterAny":"yes"}"#,
        r#"not json"#,
    ] {
        assert!(Spec::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn after_round_trips_and_is_bounded() {
    let s = Spec::parse(
        r#"{"argv":["a"],"after":[{"target":"BUILD","jobId":"j-1"},{"target":"PC","jobId":"j-2"}],"afterAny":true}"#,
    )
    .unwrap();
    assert_eq!(s.header.after.len(), 2);
    assert_eq!(s.header.after[0].to_string(), "BUILD:j-1");
    assert!(s.header.after_any);
    assert_eq!(Spec::parse(&s.to_text()).unwrap(), s);
    let list = |n: usize| {
        (0..n)
            .map(|i| format!(r#"{{"target":"PC","jobId":"j-{i}"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(
        Spec::parse(&format!(
            r#"{{"argv":["a"],"after":[{}]}}"#,
            list(MAX_AFTER)
        ))
        .is_ok()
    );
    let over = Spec::parse(&format!(
        r#"{{"argv":["a"],"after":[{}]}}"#,
        list(MAX_AFTER + 1)
    ));
    assert!(over.unwrap_err().contains("at most 64"));
    // No dependencies: the spec text is what it always was.
    let plain = Spec::of(vec!["a".into()]);
    assert_eq!(plain.to_text(), r#"{"argv":["a"]}"#);
}

#[test]
fn a_refusal_names_its_field() {
    for (bad, field) in [
        (r#"{"argv":["a\u0000b"]}"#, Some("argv")),
        (r#"{"argv":["a"],"cwd":"/tmp/\u0000"}"#, Some("cwd")),
        (r#"{"argv":["a"],"env":{"A":"\u0000"}}"#, Some("env")),
        (r#"{"argv":["a"],"timeoutSec":-1}"#, Some("timeoutSec")),
        (r#"{"argv":["a"],"afterAny":true}"#, Some("afterAny")),
        (r#"{"argv":["a"],"after":[]}"#, Some("after")),
        (r#"{"argv":["a"],"shell":true}"#, None),
    ] {
        let r = Spec::check(bad).unwrap_err();
        assert_eq!(r.field, field, "{bad}");
        assert_eq!(Spec::parse(bad).unwrap_err(), r.message);
    }
}

#[test]
fn a_job_over_the_limit_or_with_a_bad_spec_would_be_refused() {
    let key = Key::from_bytes(&[7u8; 32]).unwrap();
    let t0 = crate::base::clock::parse(T0).unwrap();
    let sign = |argv: Vec<String>| {
        Job::sign(
            &key,
            JobId::parse("j").unwrap(),
            "PC",
            "PC",
            t0,
            Spec::of(argv),
        )
    };
    let refusal = |j: &Job| j.refusal(&j.to_file_bytes(), &spec_field);
    assert_eq!(refusal(&sign(vec!["true".into()])), None);
    let big = sign(vec!["x".repeat(MAX_BYTES as usize)]);
    assert!(matches!(refusal(&big), Some(Unacceptable::TooLarge(n)) if n > MAX_BYTES));
    let nul = sign(vec!["tr\0ue".into()]);
    assert!(matches!(
        refusal(&nul),
        Some(Unacceptable::Spec(SpecRefusal {
            field: Some("argv"),
            ..
        }))
    ));
}

#[test]
fn drain_order_is_high_then_created_then_id() {
    let key = Key::from_bytes(&[7u8; 32]).unwrap();
    let t0 = crate::base::clock::parse(T0).unwrap();
    let mk = |id: &str, secs: i64, p: Priority| {
        Job::sign(
            &key,
            JobId::parse(id).unwrap(),
            "PC",
            "PC",
            if secs < 0 {
                t0 - Duration::from_secs(secs.unsigned_abs())
            } else {
                t0 + Duration::from_secs(secs as u64)
            },
            Spec {
                header: Header {
                    priority: p,
                    ..Header::default()
                },
                ..Spec::of(vec!["true".into()])
            },
        )
    };
    let mut jobs = [
        mk("b", 0, Priority::Normal),
        mk("a", 0, Priority::Normal),
        mk("c", -10, Priority::Normal),
        mk("z", 50, Priority::High),
    ];
    jobs.sort_by(Job::drain_order);
    let ids: Vec<_> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["z", "c", "a", "b"]);
}

/// Every field set, given in reverse order: the text is written in the
/// order it has always been signed in, header and payload fields
/// interleaved as before they were split.
const ALL_FIELDS: &str = r#"{"afterAny":true,"after":[{"target":"B","jobId":"j-1"}],"label":"l","parentJobId":"p-1","priority":"high","graceSec":2.5,"timeoutSec":1.5,"env":{"X":"1","A":"2"},"cwd":"/tmp","argv":["a","b"]}"#;

#[test]
fn the_spec_text_keeps_its_field_order() {
    assert_eq!(
        Spec::parse(ALL_FIELDS).unwrap().to_text(),
        r#"{"argv":["a","b"],"cwd":"/tmp","env":{"A":"2","X":"1"},"timeoutSec":1.5,"graceSec":2.5,"priority":"high","parentJobId":"p-1","label":"l","after":[{"target":"B","jobId":"j-1"}],"afterAny":true}"#
    );
}

#[test]
fn the_header_holds_scheduling_and_the_payload_what_runs() {
    let s = Spec::parse(ALL_FIELDS).unwrap();
    let after = vec![After {
        target: Machine::parse("B", "target").unwrap(),
        job_id: JobId::parse("j-1").unwrap(),
    }];
    assert_eq!(
        s.header,
        Header {
            timeout: Some(Duration::from_millis(1500)),
            grace: Some(Duration::from_millis(2500)),
            priority: Priority::High,
            parent_job_id: Some("p-1".into()),
            after,
            after_any: true,
        }
    );
    assert_eq!(
        s.payload,
        Payload {
            argv: vec!["a".into(), "b".into()],
            cwd: Some("/tmp".into()),
            env: [("A".into(), "2".into()), ("X".into(), "1".into())].into(),
            label: Some("l".into()),
        }
    );
}

fn signed(spec: Spec) -> Job {
    Job::sign(
        &Key::from_bytes(&[7u8; 32]).unwrap(),
        JobId::parse("j-2").unwrap(),
        "PC",
        "LAPTOP",
        crate::base::clock::parse(T0).unwrap(),
        spec,
    )
}

#[test]
fn a_job_reads_its_header_and_payload_apart() {
    let spec = Spec::parse(ALL_FIELDS).unwrap();
    let job = signed(spec.clone());
    assert_eq!(job.header(), &spec.header);
    assert_eq!(job.payload(), &spec.payload);
    // A clear job: every reader may read its payload.
    assert_eq!(job.readable_payload(), Some(&spec.payload));
}

/// A machine's identity from one repeated byte.
fn identity(name: &str, b: u8) -> crate::trust::identity::Identity {
    crate::trust::identity::Identity::new(name, [b; 64])
}

/// `spec` sealed to `to` within the job of id `j1` from LAPTOP to PC,
/// as its file's spec text.
fn sealed_text(spec: &Spec, to: &crate::trust::identity::Identity) -> String {
    let key = Key::from_bytes(&[7u8; 32]).unwrap();
    let id = JobId::parse("j1").unwrap();
    let created = crate::base::clock::parse(T0).unwrap();
    let job = Job::sign_sealed(
        &key,
        id,
        "PC",
        "LAPTOP",
        created,
        spec.clone(),
        (&to.line().x25519, [9u8; 32]),
    );
    assert!(job.is_sealed() && job.readable_payload().is_some());
    job.spec_text
}

#[test]
fn a_sealed_spec_shows_its_header_only_and_opens_to_the_whole_spec() {
    let spec = Spec::parse(ALL_FIELDS).unwrap();
    let pc = identity("PC", 1);
    let text = sealed_text(&spec, &pc);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in ["argv", "cwd", "env", "label"] {
        assert!(v.get(field).is_none(), "{field} in {text}");
    }
    // The header reads as it is; the payload is not there to read.
    let read = Spec::check(&text).unwrap();
    assert_eq!(read.header, spec.header);
    assert_eq!(read.payload, Payload::default());
    assert_eq!(
        peek(format!(r#"{{"spec":{}}}"#, serde_json::Value::from(text.clone())).as_bytes()),
        Some(spec.header.clone())
    );
    // Its target opens it, within its job, to the spec signed.
    let context = seal_context("j1", "PC", "LAPTOP");
    let plain = seal::open(&pc, read.sealed.as_ref().unwrap(), context.as_bytes()).unwrap();
    let opened = Spec::check_opened(&text, &plain).unwrap();
    assert_eq!(opened.header, spec.header);
    assert_eq!(opened.payload, spec.payload);
    // Not within another job, nor by another machine.
    let other = seal_context("j2", "PC", "LAPTOP");
    assert!(seal::open(&pc, read.sealed.as_ref().unwrap(), other.as_bytes()).is_err());
    assert!(
        seal::open(
            &identity("NAS", 2),
            read.sealed.as_ref().unwrap(),
            context.as_bytes()
        )
        .is_err()
    );
}

#[test]
fn a_sealed_spec_refuses_payload_fields_in_clear_and_strays_in_its_plaintext() {
    let pc = identity("PC", 1);
    let text = sealed_text(&Spec::of(vec!["true".into()]), &pc);
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["label"] = "beside".into();
    let refused = Spec::check(&v.to_string()).unwrap_err();
    assert!(refused.message.contains("label"), "{refused:?}");
    for (plain, field) in [
        (&br#"{"argv":["a"],"priority":"high"}"#[..], "priority"),
        (br#"["a"]"#, "JSON object"),
        (br#"{"argv":[]}"#, "argv"),
    ] {
        let refused = Spec::check_opened(&text, plain).unwrap_err();
        assert!(refused.message.contains(field), "{refused:?}");
    }
}

#[test]
fn peek_reads_the_header_without_the_key() {
    let spec = Spec::parse(ALL_FIELDS).unwrap();
    let bytes = signed(spec.clone()).to_file_bytes();
    assert_eq!(peek(&bytes), Some(spec.header.clone()));
    // Not verified: a signature that does not hold is read all the same.
    let text = String::from_utf8(bytes).unwrap();
    let sig = signed(spec.clone()).sig;
    let forged = text.replace(&sig, &"0".repeat(sig.len()));
    assert_ne!(forged, text);
    assert_eq!(peek(forged.as_bytes()), Some(spec.header));
    // What a listener would refuse as a spec gives nothing.
    for bad in [
        &b"not json"[..],
        br#"{"spec":{"argv":["a"]}}"#,
        br#"{"spec":"{\"argv\":[]}"}"#,
        br#"{"spec":"{\"argv\":[\"a\"],\"shell\":true}"}"#,
        br#"{"jobId":"j"}"#,
    ] {
        assert_eq!(peek(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}
