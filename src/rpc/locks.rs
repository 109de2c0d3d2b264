//! `lock.acquire`, `lock.release`, `lock.query`.

use super::convert;
use super::services::App;
use crate::coord::iso_millis;
use crate::protocol::server::LockMethods;
use crate::protocol::{
    LockAcquireParams, LockAcquireResult, LockQueryParams, LockQueryResult, LockReleaseParams,
    LockReleaseResult, ProtocolError,
};

impl LockMethods for App {
    async fn lock_acquire(
        &self,
        params: LockAcquireParams,
    ) -> Result<LockAcquireResult, ProtocolError> {
        let symbol_path = params.symbol_path.clone();
        let acquired = self
            .inline_when_quick(
                |coord| coord.acquire_is_quick(&symbol_path),
                move |coord| {
                    coord.acquire_lock(&params.symbol_path, &params.session_id, params.ttl_ms)
                },
            )
            .await?;
        Ok(LockAcquireResult {
            symbol_path: acquired.lock.symbol_path.clone(),
            session_id: acquired.lock.session_id.clone(),
            acquired_at: iso_millis(acquired.lock.acquired_at_ms),
            expires_at: iso_millis(acquired.lock.expires_at_ms),
            token: acquired.lock.token,
            warnings: acquired
                .warnings
                .iter()
                .map(convert::caller_warning)
                .collect(),
        })
    }

    async fn lock_release(
        &self,
        params: LockReleaseParams,
    ) -> Result<LockReleaseResult, ProtocolError> {
        self.now(|coord| coord.release_lock(&params.symbol_path, &params.session_id))?;
        Ok(LockReleaseResult { released: true })
    }

    async fn lock_query(&self, params: LockQueryParams) -> Result<LockQueryResult, ProtocolError> {
        let locks = self.now(|coord| coord.query_locks(params.session_id.as_deref()))?;
        Ok(locks.iter().map(convert::lock_record).collect())
    }
}
