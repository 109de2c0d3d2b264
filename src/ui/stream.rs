//! The page's live stream (Server-Sent Events): the sections that changed, event batches,
//! gaps and the daemon's status, as one response body fed from a channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::{broadcast, mpsc};

use super::feed::{frame, Hub};
use super::snapshot::Sections;

/// A comment line every so often keeps idle connections (and proxies) from timing out and
/// tells the server quickly when the page is gone.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A response body that yields whatever the channel delivers, until the sender is dropped.
#[derive(Debug)]
pub struct ChannelBody {
    receiver: mpsc::Receiver<Bytes>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.receiver
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Opens a stream for one page: every section, the recent events and the daemon's status
/// first, then changes as they come. The feeding task ends when the page goes away.
pub fn open(hub: Arc<Hub>) -> ChannelBody {
    let (sender, receiver) = mpsc::channel(64);
    tokio::spawn(feed(hub, sender));
    ChannelBody { receiver }
}

async fn feed(hub: Arc<Hub>, sender: mpsc::Sender<Bytes>) {
    // Subscribe before reading what is there: a frame in between is sent twice at worst
    // (the page ignores events it has), never lost.
    let mut frames = hub.frames();
    let mut sections = hub.sections();
    let mut sent: Sections = Vec::new();
    let current = Arc::clone(&sections.borrow_and_update());
    let mut first = changed_frames(&mut sent, &current);
    // `history`, not `events`: the page shows these but does not apply them to the sections
    // it was just sent (they are older).
    first.push_str(&frame(
        "history",
        &serde_json::Value::Array(hub.recent()).to_string(),
    ));
    first.push_str(&hub.status_frame());
    if sender.send(Bytes::from(first)).await.is_err() {
        return;
    }
    loop {
        let chunk = tokio::select! {
            changed = sections.changed() => {
                if changed.is_err() {
                    return;
                }
                let current = Arc::clone(&sections.borrow_and_update());
                changed_frames(&mut sent, &current)
            }
            received = frames.recv() => match received {
                Ok(text) => text.to_string(),
                // Too slow for the stream: the page reloads its events from scratch.
                Err(broadcast::error::RecvError::Lagged(_)) => frame("lagged", "{}"),
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep(KEEP_ALIVE) => ": keep-alive\n\n".to_string(),
        };
        if !chunk.is_empty() && sender.send(Bytes::from(chunk)).await.is_err() {
            return;
        }
    }
}

/// Frames for the sections whose text differs from what this page was sent; remembers them.
fn changed_frames(sent: &mut Sections, current: &Sections) -> String {
    let mut out = String::new();
    for (name, text) in current {
        let known = sent.iter_mut().find(|(sent_name, _)| sent_name == name);
        match known {
            Some((_, old)) if old == text => {}
            Some((_, old)) => {
                out.push_str(&frame(name, text));
                old.clone_from(text);
            }
            None => {
                out.push_str(&frame(name, text));
                sent.push((name, text.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_sent_once_and_again_only_when_it_changed() {
        let mut sent = Vec::new();
        let first = vec![("locks", "[1]".to_owned()), ("sessions", "[]".to_owned())];
        assert_eq!(
            changed_frames(&mut sent, &first),
            "event: locks\ndata: [1]\n\nevent: sessions\ndata: []\n\n"
        );
        assert_eq!(changed_frames(&mut sent, &first), "");
        let second = vec![("locks", "[1,2]".to_owned()), ("sessions", "[]".to_owned())];
        assert_eq!(
            changed_frames(&mut sent, &second),
            "event: locks\ndata: [1,2]\n\n"
        );
    }
}
