//! The object store's own floor for the bucket rows of `bench/run`, and
//! the bench's way to place many objects at once, through the library's
//! S3 client (the store and credentials from the usual variables:
//! `FLEET_DISPATCH_S3_ENDPOINT`, `AWS_ACCESS_KEY_ID`, …).
//!
//! ```sh
//! s3_floor floor BUCKET PREFIX N BYTES   # N × (create-only PUT of BYTES, LIST, GET): seconds on stdout
//! s3_floor put BUCKET PREFIX DIR         # each file of DIR at PREFIX<name>, create-only (8 at a time)
//! s3_floor list BUCKET PREFIX            # one whole listing of PREFIX: seconds, then the count
//! ```

use std::time::Instant;

use fleet_dispatch::store::objstore::{Answer, Client, settings_from_env};

fn fail(what: &str) -> ! {
    eprintln!("s3_floor: {what}");
    std::process::exit(2)
}

fn client(bucket: &str) -> Client {
    let settings = settings_from_env().unwrap_or_else(|e| fail(&e.message));
    Client::new(&settings, bucket).unwrap_or_else(|e| fail(&e.message))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["floor", bucket, prefix, n, bytes] => {
            let c = client(bucket);
            let n: usize = n.parse().unwrap_or_else(|_| fail("N is a number"));
            let body = vec![b'x'; bytes.parse().unwrap_or_else(|_| fail("BYTES is a number"))];
            let start = Instant::now();
            for i in 0..n {
                let dir = format!("{prefix}{i}/");
                let key = format!("{dir}job.json");
                if !matches!(c.create_only(&key, &body), Answer::Done(_)) {
                    fail(&format!("PUT {key}"));
                }
                match c.list(&dir, None, 1000) {
                    Ok(keys) if keys.len() == 1 => {}
                    other => fail(&format!("LIST {dir}: {other:?}")),
                }
                match c.get(&key) {
                    Answer::Done(r) if r.body.len() == body.len() => {}
                    other => fail(&format!("GET {key}: {other:?}")),
                }
            }
            println!("{:.6}", start.elapsed().as_secs_f64());
        }
        ["put", bucket, prefix, dir] => {
            let entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
                .unwrap_or_else(|e| fail(&format!("{dir}: {e}")))
                .map(|e| e.unwrap_or_else(|e| fail(&e.to_string())).path())
                .collect();
            let per = entries.len().div_ceil(8).max(1);
            std::thread::scope(|s| {
                for part in entries.chunks(per) {
                    s.spawn(move || {
                        let c = client(bucket);
                        for path in part {
                            let name = path.file_name().unwrap().to_string_lossy();
                            let body = std::fs::read(path).unwrap_or_else(|e| fail(&e.to_string()));
                            let key = format!("{prefix}{name}");
                            if !matches!(c.create_only(&key, &body), Answer::Done(_)) {
                                fail(&format!("PUT {key}"));
                            }
                        }
                    });
                }
            });
            println!("{}", entries.len());
        }
        ["list", bucket, prefix] => {
            let c = client(bucket);
            let start = Instant::now();
            let keys = c
                .list(prefix, None, 1000)
                .unwrap_or_else(|a| fail(&format!("LIST {prefix}: {a:?}")));
            println!("{:.6} {}", start.elapsed().as_secs_f64(), keys.len());
        }
        _ => fail(
            "usage: s3_floor floor BUCKET PREFIX N BYTES | put BUCKET PREFIX DIR | list BUCKET PREFIX",
        ),
    }
}
