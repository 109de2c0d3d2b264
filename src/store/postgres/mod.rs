//! The shared backend: one PostgreSQL database for the daemons of many machines
//! (PROTOCOL-NOTES 12). Placeholder until the backend lands.

use super::{CommitNotes, ListenerSlot, Reader, Result, StoreError, StoreUrl, Writer};

/// The PostgreSQL store of one project.
pub struct PgStore {
    shown: String,
}

impl PgStore {
    /// Connects, migrates and starts listening for the other daemons' commits.
    pub fn open(
        url: &StoreUrl,
        project: &str,
        _daemon_id: &str,
        _listener: ListenerSlot,
    ) -> Result<PgStore> {
        Err(StoreError::Unavailable {
            store: format!("{url} (project {project})"),
            reason: "the PostgreSQL backend is not built yet".into(),
        })
    }

    /// The store for people.
    pub fn describe(&self) -> String {
        self.shown.clone()
    }

    /// One serialised write transaction.
    pub fn write<T, E>(
        &self,
        _f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
    ) -> Result<(T, CommitNotes), E>
    where
        E: From<StoreError>,
    {
        Err(self.unavailable().into())
    }

    /// One read transaction.
    pub fn read<T, E>(&self, _f: impl FnOnce(&Reader<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        Err(self.unavailable().into())
    }

    /// The schema version.
    pub fn schema_version(&self) -> Result<i64> {
        Err(self.unavailable())
    }

    fn unavailable(&self) -> StoreError {
        StoreError::Unavailable {
            store: self.shown.clone(),
            reason: "the PostgreSQL backend is not built yet".into(),
        }
    }
}
