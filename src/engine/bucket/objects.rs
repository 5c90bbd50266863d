//! The listener's writes on a bucket, each the object form of a folder
//! move (docs/object-store.md, "The protocol on objects"): an archive move
//! is a create-only copy, then the conditional delete of the source; a
//! refusal files the reason create-only in the first free slot of
//! `archive/rejected/`, then moves the input there the same way; a
//! replaced object (the heartbeat, what `running/` shows) is a PUT with
//! `If-Match` of the version this listener last wrote; a log is numbered
//! chunk objects written create-only as output arrives. Also the one bulk
//! read: a listing's new jobs, read by several threads.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use crate::base::error::Result;
use crate::base::read::FileRead;
use crate::places::rejected::{Kind, Reason};
use crate::protocol::accept::Rejection;
use crate::protocol::doc::{self, job};
use crate::store::layout::Place;
use crate::store::objstore::Answer;
use crate::store::port::Shelves;
use crate::store::port::bucket::{BucketTarget, failed};
use crate::trust::Key;

/// Moves `name` of place `from` (the version `etag` when the caller
/// listed it) to `to_name` in place `to`: a create-only copy (one already
/// there is kept: an earlier try made it), written from `held` (that
/// version's bytes) when the caller has them, else copied by the store;
/// then the source removed ([`remove_listed`]).
pub fn archive(
    t: &BucketTarget,
    (from, name, etag): (Place, &str, Option<&str>),
    held: Option<&[u8]>,
    (to, to_name): (Place, &str),
) -> Result<()> {
    let (src, dst) = (t.key(from, name), t.key(to, to_name));
    let client = t.bucket().client();
    let copied = match held {
        Some(bytes) => client.create_only(&dst, bytes),
        None => client.copy_create_only(&src, &dst),
    };
    match copied {
        Answer::Done(_) | Answer::Precondition | Answer::NotFound => {}
        a => return Err(failed("copy", t.bucket().root(), &src, &a)),
    }
    remove_listed(t, (from, name, etag))
}

/// Removes `name` of place `from`: the version `etag` when the caller
/// listed it, else (none known, or it was written again since) the
/// version there now. One already gone is no error.
pub fn remove_listed(
    t: &BucketTarget,
    (from, name, etag): (Place, &str, Option<&str>),
) -> Result<()> {
    let Some(etag) = etag else {
        return t.shelf(from).remove(name);
    };
    let src = t.key(from, name);
    match t.bucket().client().delete_if_match(&src, etag) {
        Answer::Done(_) | Answer::NotFound => Ok(()),
        // Written again since the listing: the version there now goes.
        Answer::Precondition => t.shelf(from).remove(name),
        a => Err(failed("remove", t.bucket().root(), &src, &a)),
    }
}

/// From this many jobs to read, a listing's reads are shared out among
/// threads: the store answers several at once, where one reader would
/// wait for each in turn.
const READ_APART_FROM: usize = 8;

/// The inbox objects `names` of `t`, read (up to [`job::MAX_BYTES`]) in
/// their order, by up to four threads when there are many.
pub fn read_all(t: &BucketTarget, names: Vec<&str>) -> Vec<FileRead> {
    let read = |n: &str| t.shelf(Place::Inbox).read(n, job::MAX_BYTES);
    if names.len() < READ_APART_FROM {
        return names.into_iter().map(read).collect();
    }
    let per = names.len().div_ceil(4);
    std::thread::scope(|s| {
        let parts: Vec<_> = names
            .chunks(per)
            .map(|part| {
                let h = std::thread::Builder::new()
                    .spawn_scoped(s, move || part.iter().map(|n| read(n)).collect::<Vec<_>>());
                (part, h)
            })
            .collect();
        let mut all = Vec::with_capacity(names.len());
        for (part, h) in parts {
            // A part whose thread could not start, or stopped, is read here.
            match h.ok().map(|h| h.join()) {
                Some(Ok(reads)) => all.extend(reads),
                _ => all.extend(part.iter().map(|n| read(n))),
            }
        }
        all
    })
}

/// The names of slot `n` for `name` in `archive/rejected/`: `<name>`
/// (`<name>.<n>` past the first) and its `.reason.json`, as on a folder.
fn slot(name: &str, n: u32) -> (String, String) {
    let stored = if n == 0 {
        name.to_string()
    } else {
        format!("{name}.{n}")
    };
    let reason = format!("{stored}.reason.json");
    (stored, reason)
}

/// Refuses the input `name` of `from` (a `kind`) for `r`: its reason is
/// placed create-only in the first free slot of `archive/rejected/`
/// (which takes the slot), then the input is moved there.
pub fn refuse(
    t: &BucketTarget,
    from: Place,
    name: &str,
    r: &Rejection,
    kind: Kind,
    key: &Key,
) -> Result<()> {
    let reason = Reason::new(r, kind, t.target().as_str()).judged_with(key);
    let body = doc::to_file_bytes(&reason);
    let rejected = t.shelf(Place::Rejected);
    for n in 0..1000 {
        let (stored, reason_name) = slot(name, n);
        if rejected.publish(&reason_name, &body)? {
            return archive(t, (from, name, None), None, (Place::Rejected, &stored));
        }
    }
    Err(crate::base::error::Error::new(
        crate::base::error::Code::Internal,
        format!(
            "cannot refuse {}: every slot in archive/rejected/ is taken",
            t.shelf(from).shown(name)
        ),
    ))
}

/// An object this listener replaces as it changes (its heartbeat, what
/// `running/` shows of a job): written with `If-Match` of the version it wrote last, or
/// created when it has none; a version someone else wrote meanwhile is
/// looked up and replaced once.
pub struct Replaced {
    key: String,
    etag: Option<String>,
}

impl Replaced {
    /// The object at `key`, whose version written last is `etag` (none
    /// when this listener has not written it).
    pub fn new(key: String, etag: Option<String>) -> Replaced {
        Replaced { key, etag }
    }

    /// Writes `bytes`.
    pub fn write(&mut self, t: &BucketTarget, bytes: &[u8]) -> Result<()> {
        let client = t.bucket().client();
        for _ in 0..2 {
            let a = match &self.etag {
                Some(e) => client.put_if_match(&self.key, bytes, e),
                None => client.create_only(&self.key, bytes),
            };
            match a {
                Answer::Done(r) => {
                    self.etag = r.etag;
                    return Ok(());
                }
                Answer::Precondition | Answer::NotFound => {
                    self.etag = match client.head(&self.key) {
                        Answer::Done(r) => r.etag,
                        _ => None,
                    };
                }
                a => return Err(failed("write", t.bucket().root(), &self.key, &a)),
            }
        }
        Err(failed(
            "write",
            t.bucket().root(),
            &self.key,
            &Answer::Precondition,
        ))
    }

    /// True once this listener has written it.
    pub fn written(&self) -> bool {
        self.etag.is_some()
    }

    /// Removes it: the version written last, else (none known, or it was
    /// written again) the version there now.
    pub fn remove(self, t: &BucketTarget) -> Result<()> {
        let client = t.bucket().client();
        if let Some(e) = &self.etag
            && let Answer::Done(_) | Answer::NotFound = client.delete_if_match(&self.key, e)
        {
            return Ok(());
        }
        let head = client.head(&self.key);
        let etag = match head {
            Answer::Done(r) => r.etag.unwrap_or_default(),
            Answer::NotFound => return Ok(()),
            a => return Err(failed("look up", t.bucket().root(), &self.key, &a)),
        };
        match client.delete_if_match(&self.key, &etag) {
            Answer::Done(_) | Answer::NotFound | Answer::Precondition => Ok(()),
            a => Err(failed("remove", t.bucket().root(), &self.key, &a)),
        }
    }
}

/// The most one chunk object holds: a log larger than this between two
/// looks is written as several.
const CHUNK_MAX: usize = 4 << 20;

/// The name of chunk `n` of `stream` of a job's log: `<id>.<stream>.<n>`.
pub fn chunk_name(id: &str, stream: &str, n: u64) -> String {
    format!("{id}.{stream}.{n}")
}

/// One stream's log on its way to the bucket: the local file the runner
/// writes, how much of it is placed, and the next chunk's number.
pub struct Chunks {
    file: PathBuf,
    id: String,
    stream: &'static str,
    placed: u64,
    next: u64,
}

impl Chunks {
    /// The log of `stream` of job `id`, written locally at `file`.
    pub fn new(file: PathBuf, id: &str, stream: &'static str) -> Chunks {
        Chunks {
            file,
            id: id.to_string(),
            stream,
            placed: 0,
            next: 0,
        }
    }

    /// Places what the local log gained since the last call as chunk
    /// objects. Nothing to place (or no log yet) places nothing.
    pub fn place(&mut self, t: &BucketTarget) -> Result<()> {
        let Ok(mut f) = std::fs::File::open(&self.file) else {
            return Ok(());
        };
        if f.seek(SeekFrom::Start(self.placed)).is_err() {
            return Ok(());
        }
        let mut buf = vec![0u8; CHUNK_MAX];
        loop {
            let mut got = 0;
            while got < buf.len() {
                match f.read(&mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if got == 0 {
                return Ok(());
            }
            let name = chunk_name(&self.id, self.stream, self.next);
            // Taken already: an earlier try placed it before its answer was
            // lost, or the chunk before a crash; its bytes are these.
            t.shelf(Place::Logs).publish(&name, &buf[..got])?;
            self.placed += got as u64;
            self.next += 1;
            if got < buf.len() {
                return Ok(());
            }
        }
    }

    /// Removes the local log, once placed.
    pub fn discard(self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
