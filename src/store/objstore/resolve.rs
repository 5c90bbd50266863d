//! The endpoint's address, looked up at most once a minute. `ureq` looks a
//! host up before each request, even one that reuses a pooled connection,
//! and with a timeout set it does so in a thread of its own: a thread
//! started and ended per request, a listener's largest cost after the
//! store's answers. A client talks to one endpoint, so one answer is kept.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long an answer is used: a store behind DNS that moves is followed
/// within this (a pooled connection is kept meanwhile anyway).
const KEPT_FOR: Duration = Duration::from_secs(60);

/// A resolver (ureq's own by default) whose last answer is kept for
/// [`KEPT_FOR`].
#[derive(Debug, Default)]
pub struct Kept<R = DefaultResolver> {
    inner: R,
    last: Mutex<Option<(String, Instant, ResolvedSocketAddrs)>>,
}

impl<R: Resolver> Resolver for Kept<R> {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.authority().map(|a| a.as_str().to_string());
        let scheme = uri.scheme_str().unwrap_or_default();
        let key = host.map(|h| format!("{scheme}://{h}"));
        {
            let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if let (Some(key), Some((k, at, addrs))) = (&key, last.as_ref())
                && k == key
                && at.elapsed() < KEPT_FOR
            {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        if let Some(key) = key {
            *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((key, Instant::now(), addrs.clone()));
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Answers `127.0.0.1` and the URI's port, counting the look-ups.
    #[derive(Debug, Default)]
    struct Counting(AtomicUsize);

    impl Resolver for Counting {
        fn resolve(
            &self,
            uri: &Uri,
            _: &Config,
            _: NextTimeout,
        ) -> Result<ResolvedSocketAddrs, ureq::Error> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let mut v = self.empty();
            let port = uri.port_u16().unwrap_or(80);
            v.push(SocketAddr::from(([127, 0, 0, 1], port)));
            Ok(v)
        }
    }

    fn ask(r: &Kept<Counting>, uri: &str) -> u16 {
        let timeout = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::Exact(Duration::from_secs(5)),
            ..NextTimeout::default()
        };
        let uri: Uri = uri.parse().unwrap();
        r.resolve(&uri, &Config::default(), timeout).unwrap()[0].port()
    }

    #[test]
    fn an_endpoint_is_looked_up_once_and_another_one_again() {
        let r = Kept::<Counting>::default();
        assert_eq!(ask(&r, "http://store.example:9000/a"), 9000);
        assert_eq!(ask(&r, "http://store.example:9000/b?x=1"), 9000);
        assert_eq!(r.inner.0.load(Ordering::SeqCst), 1, "the answer was kept");
        assert_eq!(ask(&r, "http://store.example:9001/a"), 9001);
        assert_eq!(r.inner.0.load(Ordering::SeqCst), 2, "another endpoint");
    }
}
