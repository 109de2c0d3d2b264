//! `lock.acquire` (with its optional wait), `lock.release`, `lock.query`, `lock.waits`.

use std::time::Duration;

use super::convert;
use super::services::App;
use super::waiting::{OneshotReply, WaitTicket};
use crate::coord::{iso_millis, Acquire, AcquiredLock, WaitOutcome, MAX_WAIT_MS};
use crate::protocol::server::LockMethods;
use crate::protocol::{
    LockAcquireParams, LockAcquireResult, LockQueryParams, LockQueryResult, LockReleaseParams,
    LockReleaseResult, LockWaitsParams, LockWaitsResult, ProtocolError,
};

impl LockMethods for App {
    async fn lock_acquire(
        &self,
        params: LockAcquireParams,
    ) -> Result<LockAcquireResult, ProtocolError> {
        // The decoder has checked the range (0..=600000) from the spec's schema.
        let wait_ms = params.wait_ms.unwrap_or(0).clamp(0, MAX_WAIT_MS);
        let symbol_path = params.symbol_path.clone();
        let at = self.vantage(Some(&params.session_id));
        let (reply, rx) = if wait_ms > 0 && self.accepts_waits() {
            let (reply, rx) = OneshotReply::channel();
            (Some(reply), Some(rx))
        } else {
            (None, None)
        };
        let LockAcquireParams {
            symbol_path: path,
            session_id,
            ttl_ms,
            ..
        } = params;
        let outcome = self
            .inline_when_quick(
                |coord| coord.acquire_is_quick(&symbol_path),
                move |coord| coord.acquire_or_wait(&at, &path, ttl_ms, reply),
            )
            .await?;
        let acquired = match (outcome, rx) {
            (Acquire::Acquired(acquired), _) => acquired,
            (Acquire::Queued { id, symbol_path }, Some(rx)) => {
                // The earliest expiry among waited-for locks may be this holder's now.
                self.nudge_pulse();
                let ticket = WaitTicket::new(self.coord(), id, symbol_path, session_id, rx);
                let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0));
                match ticket
                    .wait(wait)
                    .await
                    .map_err(super::errors::to_protocol)?
                {
                    WaitOutcome::Granted(acquired) => acquired,
                    WaitOutcome::Refused(error) => return Err(super::errors::to_protocol(error)),
                }
            }
            (Acquire::Queued { .. }, None) => {
                return Err(ProtocolError::internal(
                    "a request without a wait was queued",
                ))
            }
        };
        Ok(acquire_result(&acquired))
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

    async fn lock_waits(&self, _params: LockWaitsParams) -> Result<LockWaitsResult, ProtocolError> {
        let waits = self.now(|coord| coord.lock_waits())?;
        Ok(waits.into_iter().map(convert::lock_wait).collect())
    }
}

/// The wire result of a successful acquire (at once or after a wait).
fn acquire_result(acquired: &AcquiredLock) -> LockAcquireResult {
    LockAcquireResult {
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
    }
}
