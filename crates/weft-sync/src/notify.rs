//! Servers sharing one PostgreSQL database tell each other of stored rows:
//! after each stored batch a server sends `NOTIFY weft_sync` naming itself
//! and the document; every other server listening marks that document's
//! room, which reads the new rows from the store and relays them.
//!
//! A notification is only a hint to look: a server whose listening
//! connection drops reconnects and has every loaded room look once, so a
//! lost notification delays an update, never loses it.

use std::sync::Weak;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::server::Inner;
use crate::{Error, Result};

/// The channel the servers share.
const CHANNEL: &str = "weft_sync";

/// Notifications waiting to be sent; more are dropped (the rooms of other
/// servers look again on the next one for the same document).
const QUEUE: usize = 4096;

/// The sending half, held by the server.
pub(crate) struct Notifier {
    tx: mpsc::Sender<String>,
}

impl Notifier {
    /// Starts the listening and sending task.
    pub(crate) fn start(config: &str, inner: Weak<Inner>) -> Result<Notifier> {
        let config: tokio_postgres::Config = config
            .parse()
            .map_err(|e| Error::Config(format!("PostgreSQL connection string: {e}")))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let me = format!("{:016x}", random_id());
        tokio::spawn(run(config, inner, rx, me));
        Ok(Notifier { tx })
    }

    /// Tells the other servers that rows of `doc` were stored.
    pub(crate) fn stored(&self, doc: &str) {
        let _ = self.tx.try_send(doc.to_owned());
    }
}

fn random_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ u64::from(std::process::id()).rotate_left(40)
}

async fn run(
    config: tokio_postgres::Config,
    inner: Weak<Inner>,
    mut rx: mpsc::Receiver<String>,
    me: String,
) {
    loop {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let (ntx, mut nrx) = mpsc::unbounded_channel::<String>();
            let driver = tokio::spawn(async move {
                let mut messages =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                while let Some(m) = messages.next().await {
                    match m {
                        Ok(AsyncMessage::Notification(n)) => {
                            if ntx.send(n.payload().to_owned()).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .is_ok()
            {
                // Rows stored while this server was not listening.
                match inner.upgrade() {
                    Some(i) => i.remote_rows(None),
                    None => return,
                }
                loop {
                    tokio::select! {
                        doc = rx.recv() => {
                            let Some(doc) = doc else {
                                driver.abort();
                                return;
                            };
                            let payload = format!("{me} {doc}");
                            if client
                                .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                                .await
                                .is_err()
                            {
                                break;
                            }
                        }
                        payload = nrx.recv() => {
                            let Some(payload) = payload else { break };
                            let Some((from, doc)) = payload.split_once(' ') else { continue };
                            if from == me {
                                continue;
                            }
                            match inner.upgrade() {
                                Some(i) => i.remote_rows(Some(doc)),
                                None => {
                                    driver.abort();
                                    return;
                                }
                            }
                        }
                    }
                }
            }
            driver.abort();
        }
        if inner.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
