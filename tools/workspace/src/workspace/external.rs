//! Changes made by a program that writes the files itself (an agent the host runs over ACP,
//! whose own tools write to disk): the host looks at the files before the program's step and
//! after it, and records what changed exactly as a change it made — the bytes on both sides
//! kept, the write listeners told under the path lock — so the step's card shows the diff and
//! revert undoes it like any other call's change.

use super::*;

impl Workspace {
    /// The bytes of a file on disk now (`None` when it does not exist), never an editor's
    /// unsaved text: what another program's step found or left. Records no observation.
    pub async fn disk_bytes(&self, input: &str) -> Result<Option<Vec<u8>>, FsError> {
        if let Some((world, target)) = self.resolve_in_world(input, Op::Read).await? {
            return self.world_bytes(world.as_ref(), &target, Op::Read, WORLD_READ_MAX_BYTES).await;
        }
        let owned = input.to_owned();
        self.blocking(Op::Read, input, move |ws| {
            let target = ws.resolve_blocking(&owned, Op::Read)?;
            ws.peek_blocking(target)
        })
        .await
    }

    /// As [`Workspace::disk_bytes`], refusing (`FS_TOO_LARGE`) a file over `limit` bytes
    /// before reading it.
    pub async fn disk_bytes_within(
        &self,
        input: &str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, FsError> {
        if let Some((world, target)) = self.resolve_in_world(input, Op::Read).await? {
            return self.world_bytes(world.as_ref(), &target, Op::Read, limit).await;
        }
        let owned = input.to_owned();
        self.blocking(Op::Read, input, move |ws| {
            let target = ws.resolve_blocking(&owned, Op::Read)?;
            ws.peek_within_blocking(target, limit)
        })
        .await
    }

    /// Records that the file went from `before` to the bytes it holds now (`None` on either
    /// side: absent), changed by someone else on behalf of this view's call. Write listeners
    /// hear it as a change of the call (the session log keeps both sides); the session's
    /// observation of the file is invalidated, as after a restore, since no model read the new
    /// bytes through toolhost. Returns the bytes found now; nothing is recorded when they equal
    /// `before`.
    pub async fn record_external_change(
        &self,
        input: &str,
        before: Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>, FsError> {
        let target = self.resolve_for(input, Op::Read).await?;
        let _lock = self.shared.locks.lock(&target.key()).await;
        let in_world = match self.world_of(&target) {
            Some(world) => Some(
                self.world_bytes(world.as_ref(), &target, Op::Read, WORLD_READ_MAX_BYTES).await?,
            ),
            None => None,
        };
        self.blocking(Op::Read, input, move |ws| {
            let now = match in_world {
                Some(bytes) => bytes,
                None => ws.peek_blocking(target.clone())?,
            };
            if now == before {
                return Ok(now);
            }
            let operation = match (&before, &now) {
                (None, _) => WriteOperation::Create,
                (Some(_), None) => WriteOperation::Remove,
                (Some(_), Some(_)) => WriteOperation::Update,
            };
            let prior = before.map(|bytes| Prior {
                metadata: None,
                version: content_version(&bytes),
                basis: Some(bytes),
            });
            ws.finish_restore(&target, operation, prior, now.as_deref());
            Ok(now)
        })
        .await
    }
}
