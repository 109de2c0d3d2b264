//! The one reader of git objects: many blobs through one `git cat-file --batch`, as bytes.

use std::path::Path;

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
        let size = header
            .rsplit(|b| *b == b' ')
            .next()
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|_| !header.ends_with(b" missing") && !header.ends_with(b" ambiguous"));
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
}
