//! How a request names the jobs its `after` list waits for, on a folder
//! root: as every command names a job (`last`, a unique prefix, or a whole
//! id), each target's folders listed at most once per command.

use std::collections::BTreeMap;
use std::path::Path;

use crate::base::error::Result;
use crate::base::names::{JobId, Machine};
use crate::front::config::Context;
use crate::store::layout::TargetDirs;
use crate::trust::Key;

/// How [`Request::spec_by`](super::request::Request::spec_by) finds the job a text names on a target.
pub type Resolve<'a> = dyn FnMut(&Machine, &JobId) -> Result<(Machine, JobId)> + 'a;

/// Names the jobs `after` lists as every command names a job
/// ([`crate::places::jobref::Names`]): each target's folders listed at most once
/// per command, and each `TARGET:TEXT` resolved once, so a batch of many
/// lines, each after another, costs one listing, not one per line.
pub struct Resolver<'a> {
    ctx: &'a Context,
    root: &'a Path,
    names: crate::places::jobref::Names<'a>,
    /// Target folders by the name given, without case.
    targets: BTreeMap<String, TargetDirs>,
    seen: BTreeMap<(String, String), (Machine, JobId)>,
}

impl<'a> Resolver<'a> {
    /// A resolver for one command, over the target folders under `root`.
    pub fn new(ctx: &'a Context, root: &'a Path, key: &'a Key) -> Resolver<'a> {
        Resolver {
            ctx,
            root,
            names: crate::places::jobref::Names::new(key, ctx.state_dir(root).ok()),
            targets: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// Counts `id`, which this command sends to `target`, as a job known
    /// there: a line of a batch may wait for another line's job.
    pub fn add_own(&mut self, target: &Machine, id: &JobId) {
        self.names.add_own(target, id);
    }

    /// The target folder `on` names (`NOT_FOUND` when none does) and the
    /// job `text` names there.
    pub(super) fn resolve(&mut self, on: &Machine, text: &JobId) -> Result<(Machine, JobId)> {
        let target = on.as_str().to_ascii_lowercase();
        let key = (target.clone(), text.to_string());
        if let Some(found) = self.seen.get(&key) {
            return Ok(found.clone());
        }
        let dirs = match self.targets.get(&target) {
            Some(d) => d.clone(),
            None => {
                let d = self.ctx.target(self.root, on.as_str())?;
                self.targets.insert(target, d.clone());
                d
            }
        };
        let id = self.names.resolve(&dirs, text.as_str())?;
        let found = (dirs.target().clone(), id);
        self.seen.insert(key, found.clone());
        Ok(found)
    }
}
