//! One module per language: its table ([`super::language::Syntax`]) and registry entry; its
//! queries live next to it in `languages/<lang>/*.scm`.

pub(crate) mod go;
pub(crate) mod java;
pub(crate) mod python;
pub(crate) mod rust;
pub(crate) mod typescript;
