//! What the accept loop does when `accept` fails: a connection that was aborted before we took
//! it is skipped at once, but running out of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
//! ENOMEM) lasts until connections close, and the listener stays readable all along, so
//! retrying at once would spin a core: the loop sleeps instead, 10 ms doubling to 100 ms, and
//! starts again from 10 ms after the next connection it accepts.

use std::time::Duration;

/// The first pause after a resource error.
pub const FIRST: Duration = Duration::from_millis(10);
/// The longest pause.
pub const LONGEST: Duration = Duration::from_millis(100);

/// The pause the next resource error of `accept` waits.
#[derive(Debug, Clone)]
pub struct AcceptBackoff {
    next: Duration,
}

impl Default for AcceptBackoff {
    fn default() -> Self {
        Self { next: FIRST }
    }
}

impl AcceptBackoff {
    /// How long to wait after `error` before accepting again (`None`: at once), doubling the
    /// next pause when it is a resource error.
    pub fn after(&mut self, error: &std::io::Error) -> Option<Duration> {
        if !is_resource_exhaustion(error) {
            return None;
        }
        let pause = self.next;
        self.next = (self.next * 2).min(LONGEST);
        Some(pause)
    }

    /// A connection was accepted: the next resource error waits [`FIRST`] again.
    pub fn reset(&mut self) {
        self.next = FIRST;
    }
}

/// Whether `error` says the process or the system ran out of descriptors, buffers or memory.
pub fn is_resource_exhaustion(error: &std::io::Error) -> bool {
    use rustix::io::Errno;
    error.raw_os_error().is_some_and(|code| {
        [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
            .iter()
            .any(|errno| errno.raw_os_error() == code)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Error;

    #[test]
    fn resource_errors_wait_doubling_up_to_the_longest_and_others_do_not() {
        let mut backoff = AcceptBackoff::default();
        let emfile = Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error());
        let waits: Vec<_> = (0..6).filter_map(|_| backoff.after(&emfile)).collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [10, 20, 40, 80, 100, 100]);
        backoff.reset();
        assert_eq!(backoff.after(&emfile), Some(FIRST));
        for errno in [
            rustix::io::Errno::NFILE,
            rustix::io::Errno::NOBUFS,
            rustix::io::Errno::NOMEM,
        ] {
            assert!(is_resource_exhaustion(&Error::from_raw_os_error(
                errno.raw_os_error()
            )));
        }
        let aborted = Error::from_raw_os_error(rustix::io::Errno::CONNABORTED.raw_os_error());
        assert_eq!(backoff.after(&aborted), None);
        assert_eq!(backoff.after(&Error::other("x")), None);
    }
}
