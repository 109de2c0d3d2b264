//! The identity of the host a pid means something on (docs/protocol.md 12.3).

/// This host's identity: its name with a digest of what makes its pids its own. On Linux the
/// kernel's boot id and this process's pid namespace (two containers of one machine, or one
/// machine before and after a reboot, are different hosts: their pids are different
/// processes, and start stamps there count from the boot). Elsewhere the machine's hardware
/// id where `sysinfo` reads one (macOS): start stamps there are seconds since the epoch,
/// which already differ across reboots. `WIT_HOST_ID` overrides it (tests run "two hosts" on
/// one machine).
pub fn host_id() -> String {
    if let Ok(id) = std::env::var("WIT_HOST_ID") {
        let id = id.trim();
        if !id.is_empty() {
            return id.to_owned();
        }
    }
    let name = super::sysinfo_table::host_name()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    #[cfg(target_os = "linux")]
    let (first, second) = super::procfs::boot_and_namespace();
    #[cfg(not(target_os = "linux"))]
    let (first, second) = (
        super::sysinfo_table::machine_id().unwrap_or_default(),
        String::new(),
    );
    format!(
        "{name}-{:08x}",
        fnv1a(&[first.as_bytes(), second.as_bytes()])
    )
}

/// 32-bit FNV-1a over the parts (with a separator byte between them).
fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for part in parts {
        for &byte in part.iter().chain(std::iter::once(&0u8)) {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_id_is_stable_and_names_the_host() {
        if std::env::var_os("WIT_HOST_ID").is_some() {
            return;
        }
        let id = host_id();
        assert_eq!(host_id(), id);
        let name = super::super::sysinfo_table::host_name().unwrap_or_default();
        assert!(id.starts_with(name.trim()), "{id}");
        assert_ne!(fnv1a(&[b"a", b"b"]), fnv1a(&[b"ab"]));
    }

    /// Host ids already stored were made from `/proc/sys/kernel/hostname`, the boot id and
    /// the pid namespace: the same facts give the same id.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_linux_host_id_is_the_one_stored_before() {
        if std::env::var_os("WIT_HOST_ID").is_some() {
            return;
        }
        let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_owned());
        let name = read("/proc/sys/kernel/hostname").unwrap_or_default();
        let boot = read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let namespace = std::fs::read_link("/proc/self/ns/pid")
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let before = format!(
            "{name}-{:08x}",
            fnv1a(&[boot.as_bytes(), namespace.as_bytes()])
        );
        assert_eq!(host_id(), before);
    }
}
