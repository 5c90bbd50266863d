//! docs/protocol.md §5/§6: every reference vector, computed by an independent signer,
//! yields its verdict — markers through the real `verify-marker` binary and
//! the library's acceptance function, jobs and results through the library.

use fleet_dispatch::base::read::FileRead;
use fleet_dispatch::protocol::accept;
use fleet_dispatch::trust::Key;
use serde_json::Value;

use crate::util::{World, vectors};

fn file_bytes(body: &Value) -> Vec<u8> {
    match body {
        Value::String(raw) => raw.as_bytes().to_vec(),
        other => serde_json::to_vec(other).unwrap(),
    }
}

fn key() -> Key {
    Key::from_file_text(vectors()["keyFileText"].as_str().unwrap().as_bytes()).unwrap()
}

fn verdict<T>(r: Result<T, accept::Rejection>) -> String {
    match r {
        Ok(_) => "valid".into(),
        Err(r) => r.verdict.as_str().into(),
    }
}

#[test]
fn canonical_strings_and_signatures_match() {
    let v = vectors();
    let k = key();
    let c = &v["canonical"];
    assert_eq!(k.sign(c["marker"].as_str().unwrap()), c["markerSig"]);
    assert_eq!(k.sign(c["job"].as_str().unwrap()), c["jobSig"]);
    let m = fleet_dispatch::protocol::doc::marker::canonical(
        "20261129-193000-9f2c4e1ab37d5c08",
        "PC",
        "2026-11-29T19:31:00.000Z",
        "LAPTOP",
    );
    assert_eq!(m, c["marker"]);
}

#[test]
fn every_marker_vector_through_the_library() {
    let k = key();
    let v = vectors();
    let markers = v["markers"].as_array().unwrap();
    assert!(markers.len() >= 18);
    for m in markers {
        let got = verdict(accept::marker(
            m["fileName"].as_str().unwrap(),
            FileRead::Bytes(file_bytes(&m["body"])),
            m["listenerTarget"].as_str().unwrap(),
            &k,
        ));
        assert_eq!(
            got,
            m["verdict"].as_str().unwrap(),
            "marker vector {}",
            m["name"]
        );
    }
}

#[test]
fn every_marker_vector_through_verify_marker() {
    let w = World::new();
    let v = vectors();
    for m in v["markers"].as_array().unwrap() {
        let target = m["listenerTarget"].as_str().unwrap();
        let dir = w.root.join(target).join("cancel");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(m["fileName"].as_str().unwrap());
        std::fs::write(&path, file_bytes(&m["body"])).unwrap();
        let (code, out, err) = w.run(&["verify-marker", path.to_str().unwrap()]);
        let expected = m["verdict"].as_str().unwrap();
        assert!(
            out.starts_with(&format!("{expected}: ")),
            "marker vector {}: expected {expected}, got {out}{err}",
            m["name"]
        );
        assert_eq!(
            code,
            if expected == "valid" { 0 } else { 1 },
            "exit status for {}",
            m["name"]
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn every_job_vector() {
    let k = key();
    let v = vectors();
    for j in v["jobs"].as_array().unwrap() {
        let got = verdict(accept::job(
            j["fileName"].as_str().unwrap(),
            FileRead::Bytes(file_bytes(&j["body"])),
            j["listenerTarget"].as_str().unwrap(),
            &k,
        ));
        assert_eq!(
            got,
            j["verdict"].as_str().unwrap(),
            "job vector {}",
            j["name"]
        );
    }
}

#[test]
fn every_result_vector() {
    let k = key();
    let v = vectors();
    for r in v["results"].as_array().unwrap() {
        let body = &r["body"];
        let got = verdict(accept::outcome(
            body["jobId"].as_str().unwrap(),
            FileRead::Bytes(file_bytes(body)),
            body["target"].as_str().unwrap(),
            &k,
        ));
        assert_eq!(
            got,
            r["verdict"].as_str().unwrap(),
            "result vector {}",
            r["name"]
        );
        // A single changed field is never accepted.
        let mut tampered = body.clone();
        tampered["exitCode"] = Value::from(0);
        tampered["ok"] = Value::from(true);
        let got = verdict(accept::outcome(
            body["jobId"].as_str().unwrap(),
            FileRead::Bytes(file_bytes(&tampered)),
            body["target"].as_str().unwrap(),
            &k,
        ));
        assert_eq!(got, "bad-signature", "tampered result vector {}", r["name"]);
    }
}
