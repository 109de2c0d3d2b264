//! Every question wit asks the operating system about processes and the host, behind one
//! module: whether a pid runs and since when, its parent and command name, its resident memory,
//! whether a stopped daemon has exited, and which host (and boot) the pids mean something on.
//! Nothing outside this module reads `/proc` or asks the kernel such things itself.
//!
//! How each platform is asked:
//! - **Linux**: the module reads procfs itself ([`procfs`]), one small file per question. The
//!   `sysinfo` crate falls short here in two ways. Its start time is wall-clock seconds, made
//!   from field 22 of `/proc/<pid>/stat` (clock ticks since boot) plus a boot time it reads
//!   again from `/proc/stat` each time; that boot time moves whenever the clock is stepped (NTP,
//!   a VM or WSL resumed after the host slept), and every stored session would then look like
//!   a reused pid and be reaped. Ticks since boot are what wit has always stored, so stored
//!   values stay valid as they are. And `sysinfo` reads `/proc/<pid>/status` and `/proc/uptime`
//!   besides `stat` for each pid, where the harness walk of a hook needs one `stat` read per
//!   ancestor (a hook's start cost must not grow). It has no boot id either (the host identity
//!   needs `/proc/sys/kernel/random/boot_id` and the pid namespace).
//! - **Elsewhere** (macOS, Windows, the BSDs): the `sysinfo` crate ([`sysinfo_table`]), which
//!   asks `proc_pidinfo` on macOS and the process snapshot calls on Windows, refreshing only the
//!   one pid asked about. Its start time there is the one the kernel recorded at the process's
//!   creation (seconds since the epoch), which no clock step moves; such stamps also differ
//!   across reboots, so the host identity needs no boot id there.
//!
//! Liveness is three-state ([`process::Liveness`]): a pid whose state cannot be read (a
//! platform `sysinfo` does not support, a process table that refuses) is `Unknown`, never
//! `Dead`; the reaper reaps only `Dead`. `WIT_TEST_PROCESS_TABLE=unknown` (tests only) makes the
//! table answer `Unknown` for every pid.
//!
//! `wit-bench`'s measurements (CPU to the nanosecond, peak memory, inotify watches) are Linux
//! procfs reads too, and live here as well ([`measure`]). So does the daemon's word with glibc's
//! allocator ([`heap`]: its options at start, freed memory handed back), the start-up of a
//! `wit` process on Linux ([`start`]: `SIGPIPE` ignored, the standard streams kept open);
//! these two hold the crate's only `unsafe`. And the one rule for whether a file read from
//! disk was at rest or may still be being written ([`at_rest`]), and how a small file is
//! replaced atomically without ext4's flush on rename ([`replace`]).

pub mod at_rest;
pub mod heap;
pub mod host;
#[cfg(target_os = "linux")]
pub mod measure;
pub mod process;
#[cfg(target_os = "linux")]
pub mod procfs;
pub mod replace;
#[cfg(target_os = "linux")]
pub mod start;
pub mod sysinfo_table;
