//! The one reader of git objects: many blobs through one `git cat-file --batch`, as bytes,
//! either a process per call ([`blobs_at`]) or one kept running ([`BatchReader`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout};

use super::{Git, GitError};

/// The bytes of the objects `names` (`<commit>:<path>`, or object ids), in order, through
/// one `git cat-file --batch` in `repo` (`None`: missing there, or over `limit` bytes).
pub fn blobs_at(
    repo: &Path,
    names: &[String],
    limit: usize,
) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let request: String = names.iter().map(|n| format!("{n}\n")).collect();
    let output = Git::new(repo).run_with_input(&["cat-file", "--batch"], request.as_bytes())?;
    Ok(batch_blobs(&output, names.len(), limit))
}

/// The objects of a `git cat-file --batch` answer (`<oid> <type> <size>\n<content>\n`, or
/// `<name> missing\n`), `count` of them; one over `limit` bytes is none.
fn batch_blobs(mut output: &[u8], count: usize, limit: usize) -> Vec<Option<Vec<u8>>> {
    let mut blobs = Vec::with_capacity(count);
    while blobs.len() < count {
        let Some(end) = output.iter().position(|b| *b == b'\n') else {
            break;
        };
        let header = &output[..end];
        output = &output[end + 1..];
        let size = match Header::of(header) {
            Header::Object { size, .. } => Some(size),
            Header::Missing | Header::Unreadable => None,
        };
        match size {
            Some(size) if output.len() > size => {
                blobs.push((size <= limit).then(|| output[..size].to_vec()));
                output = &output[size + 1..];
            }
            _ => blobs.push(None),
        }
    }
    blobs.resize(count, None);
    blobs
}

/// The header line of one answer of `git cat-file --batch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header<'a> {
    /// `<oid> <type> <size>`: the object's bytes and a line break follow.
    Object {
        id: &'a str,
        kind: &'a str,
        size: usize,
    },
    /// `<name> missing` or `<name> ambiguous` (a name may hold spaces): nothing follows.
    Missing,
    /// Anything else.
    Unreadable,
}

impl<'a> Header<'a> {
    fn of(line: &'a [u8]) -> Header<'a> {
        if line.ends_with(b" missing") || line.ends_with(b" ambiguous") {
            return Header::Missing;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return Header::Unreadable;
        };
        let fields: Vec<&str> = text.split(' ').collect();
        match fields[..] {
            [id, kind, size] => size
                .parse()
                .map_or(Header::Unreadable, |size| Header::Object { id, kind, size }),
            _ => Header::Unreadable,
        }
    }
}

/// One object as `git cat-file --batch` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Its id, in hex.
    pub id: String,
    /// `blob`, `tree`, `commit`, `tag`.
    pub kind: String,
    /// Its bytes, never decoded.
    pub bytes: Vec<u8>,
}

/// A `git cat-file --batch` kept running in one repository (or worktree: names such as
/// `HEAD:path` are resolved in it), so that a reader of many small batches (the daemon's work
/// snapshots, after every observer pass) starts no process per batch. Names are asked one at a
/// time (each answer read before the next name is written), so neither pipe ever fills up.
/// The process is killed when the reader is dropped.
#[derive(Debug)]
pub struct BatchReader {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl BatchReader {
    /// Starts `git cat-file --batch` in `repo`.
    pub fn start(repo: &Path) -> Result<BatchReader, GitError> {
        let mut child = Git::new(repo).spawn_piped(&["cat-file", "--batch"])?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::new("cat-file --batch", "no pipes".into()));
        };
        Ok(BatchReader {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
        })
    }

    /// The process id of the running `git cat-file` (what its CPU is measured by).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The object `name` (`<commit>:<path>`, `HEAD`, an id); `None` when missing (a name
    /// holding a line break cannot be asked and is missing too). An error means the process
    /// failed: the reader is then of no further use.
    pub fn object(&mut self, name: &str) -> Result<Option<Object>, GitError> {
        let Some((id, kind, size)) = self.ask(name)? else {
            return Ok(None);
        };
        let bytes = self.read_body(size)?;
        Ok(Some(Object { id, kind, bytes }))
    }

    /// The bytes of the object `name`; `None` when missing or over `limit` bytes (what
    /// [`blobs_at`] answers, without a process per call). An error means the process failed.
    pub fn blob_within(&mut self, name: &str, limit: usize) -> Result<Option<Vec<u8>>, GitError> {
        let Some((_, _, size)) = self.ask(name)? else {
            return Ok(None);
        };
        if size > limit {
            let skipped = std::io::copy(
                &mut (&mut self.stdout).take(size as u64 + 1),
                &mut std::io::sink(),
            )
            .map_err(|e| GitError::new("cat-file --batch", e.to_string()))?;
            if skipped != size as u64 + 1 {
                return Err(GitError::new(
                    "cat-file --batch",
                    "the process ended".into(),
                ));
            }
            return Ok(None);
        }
        self.read_body(size).map(Some)
    }

    /// Asks for `name` and reads its header: id, kind and size, or `None` when missing.
    fn ask(&mut self, name: &str) -> Result<Option<(String, String, usize)>, GitError> {
        if name.contains('\n') {
            return Ok(None);
        }
        let failed = |e: std::io::Error| GitError::new("cat-file --batch", e.to_string());
        self.stdin
            .write_all(format!("{name}\n").as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(failed)?;
        let mut header = Vec::new();
        self.stdout.read_until(b'\n', &mut header).map_err(failed)?;
        if header.pop() != Some(b'\n') {
            return Err(GitError::new(
                "cat-file --batch",
                "the process ended".into(),
            ));
        }
        match Header::of(&header) {
            Header::Object { id, kind, size } => Ok(Some((id.to_owned(), kind.to_owned(), size))),
            Header::Missing => Ok(None),
            Header::Unreadable => Err(GitError::new(
                "cat-file --batch",
                "an unreadable answer".into(),
            )),
        }
    }

    /// The `size` bytes of the object whose header was just read (and the line break after).
    fn read_body(&mut self, size: usize) -> Result<Vec<u8>, GitError> {
        let mut bytes = vec![0; size + 1];
        self.stdout
            .read_exact(&mut bytes)
            .map_err(|e| GitError::new("cat-file --batch", e.to_string()))?;
        bytes.pop();
        Ok(bytes)
    }

    /// The bytes of each of `names`, in order ([`BatchReader::blob_within`]'s: `None` when
    /// missing or over `limit` bytes).
    pub fn blobs(
        &mut self,
        names: &[String],
        limit: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, GitError> {
        names
            .iter()
            .map(|name| self.blob_within(name, limit))
            .collect()
    }
}

impl Drop for BatchReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_cat_file_batch_gives_blobs_in_order_and_none_for_missing() {
        let output = b"abc blob 3\nhi\n\nc1:gone missing\ndef blob 2\n\xff\xfe\n";
        assert_eq!(
            batch_blobs(output, 4, 1024),
            [
                Some(b"hi\n".to_vec()),
                None,
                Some(b"\xff\xfe".to_vec()),
                None
            ]
        );
        assert_eq!(batch_blobs(output, 1, 2), [None], "over the limit");
    }

    #[test]
    fn blobs_come_back_byte_exact_from_a_repository() {
        let (dir, id) = super::super::repository_with(b"a\r\n\xff\n");
        let names = [
            id.clone(),
            "0000000000000000000000000000000000000001".to_owned(),
        ];
        assert_eq!(
            blobs_at(dir.path(), &names, 1024).unwrap(),
            [Some(b"a\r\n\xff\n".to_vec()), None]
        );
        assert_eq!(blobs_at(dir.path(), &names[..1], 3).unwrap(), [None]);
    }

    #[test]
    fn a_running_reader_answers_batch_after_batch_and_sees_new_objects() {
        let (dir, id) = super::super::repository_with(b"a\r\n\xff\n");
        let mut reader = BatchReader::start(dir.path()).unwrap();
        let object = reader.object(&id).unwrap().unwrap();
        assert_eq!(
            (object.kind.as_str(), object.bytes.as_slice()),
            ("blob", &b"a\r\n\xff\n"[..])
        );
        assert_eq!(object.id, id);
        assert_eq!(
            reader
                .object("0000000000000000000000000000000000000001")
                .unwrap(),
            None
        );
        assert_eq!(
            reader.object("HEAD\nHEAD").unwrap(),
            None,
            "a name with a line break"
        );
        assert_eq!(
            reader.object("HEAD:a b").unwrap(),
            None,
            "a missing name with spaces"
        );
        let later = Git::new(dir.path())
            .run_with_input(&["hash-object", "-w", "--stdin"], b"")
            .unwrap();
        let later = String::from_utf8(later).unwrap().trim().to_owned();
        assert_eq!(
            reader.blobs(&[later, id], usize::MAX).unwrap(),
            [Some(Vec::new()), Some(b"a\r\n\xff\n".to_vec())]
        );
    }
}
