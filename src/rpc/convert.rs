//! Domain records to wire records.

use crate::coord::{self, iso_millis};
use crate::protocol as wire;

/// A stored intent as the protocol shows it.
pub fn intent_record(intent: &coord::Intent) -> wire::IntentRecord {
    wire::IntentRecord {
        intent_id: intent.id.clone(),
        session_id: intent.session_id.clone(),
        description: intent.description.clone(),
        files: intent.files.clone(),
        symbols: intent.symbols.clone(),
        start_byte: intent.start_byte,
        end_byte: intent.end_byte,
        status: intent_status(intent.status),
        declared_at: intent.declared_at_ms,
        updated_at: intent.updated_at_ms,
        regions: intent
            .regions
            .as_ref()
            .map(|regions| regions.iter().map(line_region).collect())
            .unwrap_or_default(),
    }
}

/// A waiting lock request as `lock.waits` shows it.
pub fn lock_wait(wait: coord::LockWait) -> wire::LockWait {
    wire::LockWait {
        symbol_path: wait.symbol_path,
        session_id: wait.session_id,
        since: wait.since_ms,
        holder: wait.holder,
    }
}

/// A region of observed work as the protocol shows it.
pub fn line_region(region: &coord::LineRegion) -> wire::LineRegion {
    wire::LineRegion {
        start_line: region.start_line,
        end_line: region.end_line,
    }
}

fn intent_status(status: coord::IntentStatus) -> wire::IntentRecordStatus {
    match status {
        coord::IntentStatus::Declared => wire::IntentRecordStatus::Declared,
        coord::IntentStatus::Active => wire::IntentRecordStatus::Active,
        coord::IntentStatus::Resolved => wire::IntentRecordStatus::Resolved,
        coord::IntentStatus::Abandoned => wire::IntentRecordStatus::Abandoned,
    }
}

/// A stored contract as the protocol shows it.
pub fn contract_record(contract: &coord::Contract) -> wire::ContractRecord {
    wire::ContractRecord {
        contract_id: contract.id.clone(),
        proposer_session_id: contract.proposer_session_id.clone(),
        symbol_path: contract.symbol_path.clone(),
        signature: contract.signature.clone(),
        status: contract_status(contract.status),
        responder_session_id: contract.responder_session_id.clone(),
        proposed_at: contract.proposed_at_ms,
        responded_at: contract.responded_at_ms,
    }
}

fn contract_status(status: coord::ContractStatus) -> wire::ContractRecordStatus {
    match status {
        coord::ContractStatus::Proposed => wire::ContractRecordStatus::Proposed,
        coord::ContractStatus::Accepted => wire::ContractRecordStatus::Accepted,
        coord::ContractStatus::Rejected => wire::ContractRecordStatus::Rejected,
    }
}

/// A live lock as `lock.query` shows it.
pub fn lock_record(live: &coord::LiveLock) -> wire::LockRecord {
    wire::LockRecord {
        symbol_path: live.lock.symbol_path.clone(),
        session_id: live.lock.session_id.clone(),
        acquired_at: iso_millis(live.lock.acquired_at_ms),
        expires_at: iso_millis(live.lock.expires_at_ms),
        ttl_remaining_ms: live.ttl_remaining_ms,
        token: live.lock.token,
    }
}

/// A caller warning of `lock.acquire`.
pub fn caller_warning(warning: &coord::CallerWarning) -> wire::CallerWarning {
    wire::CallerWarning {
        locked_symbol: warning.locked_symbol.clone(),
        held_by: warning.held_by.clone(),
        chain: warning.chain.to_vec(),
    }
}

/// A conflict of `intent.declare`.
pub fn conflict_item(conflict: &coord::Conflict) -> wire::ConflictItem {
    match conflict {
        coord::Conflict::IntentOverlap {
            intent_id,
            session_id,
            description,
        } => wire::ConflictItem::IntentOverlap {
            overlapping_intent_id: intent_id.clone(),
            overlapping_session_id: session_id.clone(),
            description: description.clone(),
        },
        coord::Conflict::LockIntersection {
            symbol_path,
            held_by,
            expires_at_ms,
        } => wire::ConflictItem::LockIntersection {
            symbol_path: symbol_path.clone(),
            held_by: held_by.clone(),
            expires_at: iso_millis(*expires_at_ms),
        },
        coord::Conflict::DepChain {
            intent_symbol,
            locked_callee,
            held_by,
        } => wire::ConflictItem::DepChain {
            intent_symbol: intent_symbol.clone(),
            locked_callee: locked_callee.clone(),
            held_by: held_by.clone(),
        },
    }
}

/// One item of context of `edit.preflight` (docs/protocol.md 13.5).
pub fn related_item(related: &coord::Related) -> wire::RelatedItem {
    match related {
        coord::Related::SameSymbol {
            symbol_path,
            session_id,
            intent_id,
        } => wire::RelatedItem::SameSymbol {
            symbol_path: symbol_path.clone(),
            session_id: session_id.clone(),
            intent_id: intent_id.clone(),
        },
        coord::Related::Coupled {
            symbol_path,
            other_symbol,
            relation,
            session_id,
            intent_id,
        } => wire::RelatedItem::Coupled {
            symbol_path: symbol_path.clone(),
            other_symbol: other_symbol.clone(),
            relation: match relation {
                coord::Relation::Calls => wire::RelatedItemRelation::Calls,
                coord::Relation::CalledBy => wire::RelatedItemRelation::CalledBy,
            },
            session_id: session_id.clone(),
            intent_id: intent_id.clone(),
        },
    }
}

/// A contract violation of `check-contracts`.
pub fn violation(violation: coord::Violation) -> wire::Violation {
    wire::Violation {
        contract_id: violation.contract_id,
        symbol_path: violation.symbol_path,
        expected: violation.expected,
        actual: violation.actual,
    }
}
