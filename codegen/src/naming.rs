//! Rust names derived from wire names: `lock.acquire` -> `LockAcquire` / `lock_acquire`,
//! `check-contracts` -> `CheckContracts`, `sessionId` -> `session_id`.

/// Splits a wire name into lowercase words at `.`, `-`, `_` and lower-to-upper case changes.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower_or_digit = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower_or_digit = false;
            continue;
        }
        if c.is_uppercase() && prev_lower_or_digit && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower_or_digit = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// `lock.acquire` -> `LockAcquire`.
pub fn upper_camel(name: &str) -> String {
    words(name)
        .iter()
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// `lock.acquire` -> `lock_acquire`, `sessionId` -> `session_id`.
pub fn snake(name: &str) -> String {
    words(name).join("_")
}

/// The namespace of a method: the part before the first `.`, or `None` for top-level methods
/// such as `ping` and `check-contracts`.
pub fn namespace(method: &str) -> Option<&str> {
    method.split_once('.').map(|(ns, _)| ns)
}

/// The server trait of a namespace: `lock` -> `LockMethods`, top level -> `WitMethods`.
pub fn trait_name(namespace: Option<&str>) -> String {
    format!("{}Methods", upper_camel(namespace.unwrap_or("wit")))
}

/// The registration function of a namespace: `lock` -> `register_lock_methods`.
pub fn register_fn_name(namespace: Option<&str>) -> String {
    format!("register_{}_methods", snake(namespace.unwrap_or("wit")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_method_names() {
        assert_eq!(upper_camel("lock.acquire"), "LockAcquire");
        assert_eq!(upper_camel("check-contracts"), "CheckContracts");
        assert_eq!(upper_camel("ping"), "Ping");
        assert_eq!(snake("lock.acquire"), "lock_acquire");
        assert_eq!(snake("check-contracts"), "check_contracts");
        assert_eq!(snake("sessionId"), "session_id");
        assert_eq!(snake("ttlMs"), "ttl_ms");
    }

    #[test]
    fn names_traits_by_namespace() {
        assert_eq!(namespace("lock.acquire"), Some("lock"));
        assert_eq!(namespace("check-contracts"), None);
        assert_eq!(trait_name(Some("intent")), "IntentMethods");
        assert_eq!(trait_name(None), "WitMethods");
        assert_eq!(
            register_fn_name(Some("contract")),
            "register_contract_methods"
        );
        assert_eq!(register_fn_name(None), "register_wit_methods");
    }
}
