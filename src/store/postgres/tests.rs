//! Tests of the PostgreSQL backend.
