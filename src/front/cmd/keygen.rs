//! `keygen`: create the fleet key file.

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::KeygenArgs;
use crate::front::config::Context;

/// Writes a new key; refuses to overwrite without `--force`, and refuses a
/// key path inside the dispatch root.
pub fn run(ctx: &Context, args: KeygenArgs) -> Result<u8> {
    let path = ctx.key_path()?;
    if let Ok(root) = ctx.root()
        && crate::store::layout::is_inside(&path, &root)
    {
        return Err(Error::config(format!(
            "key file {} would lie inside the dispatch root {}; it would sync",
            path.display(),
            root.display()
        )));
    }
    crate::trust::generate(&path, args.force)?;
    let key_id = crate::trust::Key::load(&path)?.key_id();
    super::emit(
        ctx,
        &json!({"keyFile": path.display().to_string(), "replaced": args.force, "fingerprint": key_id}),
        &format!(
            "wrote a new fleet key to {} (mode 600), fingerprint {key_id}\ncopy it to every machine of the fleet out of band (scp, a USB stick), never into the shared folder; `status` shows each machine's fingerprint, so a key that differs shows",
            path.display()
        ),
    );
    Ok(exit::SUCCESS)
}
