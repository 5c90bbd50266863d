//! The S3 engine the object-store tests run against (`ci/engine-s3`
//! starts SeaweedFS on loopback and says where through
//! `FLEET_DISPATCH_TEST_S3_ENDPOINT`, `…_BUCKET`, `…_ACCESS_KEY` and
//! `…_SECRET_KEY`), and running the binary on a fresh prefix of its bucket.

use std::collections::HashMap;

use fleet_dispatch::store::objstore::{Answer, Client, Settings};

use super::*;

/// The engine's settings, bucket and a fresh prefix; panics (fails the
/// test) when ci/engine-s3 did not say where the engine is.
pub struct Engine {
    pub vars: HashMap<String, String>,
    pub bucket: String,
    pub prefix: String,
}

impl Engine {
    pub fn new() -> Engine {
        let need = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| {
                panic!("{k} is not set: these tests need an S3 engine, run ci/engine-s3")
            })
        };
        let mut vars = HashMap::new();
        vars.insert(
            "FLEET_DISPATCH_S3_ENDPOINT".to_string(),
            need("FLEET_DISPATCH_TEST_S3_ENDPOINT"),
        );
        vars.insert(
            "AWS_ACCESS_KEY_ID".to_string(),
            need("FLEET_DISPATCH_TEST_S3_ACCESS_KEY"),
        );
        vars.insert(
            "AWS_SECRET_ACCESS_KEY".to_string(),
            need("FLEET_DISPATCH_TEST_S3_SECRET_KEY"),
        );
        let mut id = [0u8; 6];
        fleet_dispatch::base::random::fill(&mut id);
        Engine {
            vars,
            bucket: need("FLEET_DISPATCH_TEST_S3_BUCKET"),
            prefix: format!("t{}/", hex(&id)),
        }
    }

    pub fn client(&self) -> Client {
        let settings = Settings::resolve(&|k| self.vars.get(k).cloned(), &|_| None).unwrap();
        Client::new(&settings, &self.bucket).unwrap()
    }

    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `fleet-dispatch` on the engine's bucket under a fresh prefix, as
/// machine `me`, with `PC` a fleet member.
pub fn lane_cmd(e: &Engine, w: &World) -> std::process::Command {
    let mut c = w.bg_cmd_as("me");
    c.env("FLEET_DISPATCH_ROOT", lane_root(e))
        .env("FLEET_DISPATCH_FLEET", "PC");
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c
}

pub fn lane_root(e: &Engine) -> String {
    format!("s3://{}/{}", e.bucket, e.prefix)
}

pub fn lane_run(e: &Engine, w: &World, args: &[&str]) -> (i32, String, String) {
    output(&mut assert_cmd::Command::from_std({
        let mut c = lane_cmd(e, w);
        c.args(args);
        c
    }))
}

/// The object at `name` under the prefix: its bytes, or `None`.
pub fn lane_object(e: &Engine, name: &str) -> Option<Vec<u8>> {
    match e.client().get(&e.key(name)) {
        Answer::Done(r) => Some(r.body),
        Answer::NotFound => None,
        other => panic!("GET {name}: {other:?}"),
    }
}

pub fn lane_json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

pub fn lane_id(tag: &str) -> String {
    let mut b = [0u8; 4];
    fleet_dispatch::base::random::fill(&mut b);
    format!("{tag}-{}", hex(&b))
}

/// Waits up to `limit` for `f`, polling every 100 ms (a store's round
/// trips are slower than a folder's); fails naming `what`.
pub fn until(limit: std::time::Duration, what: &str, f: impl FnMut() -> bool) {
    poll_until(limit, std::time::Duration::from_millis(100), what, f);
}
