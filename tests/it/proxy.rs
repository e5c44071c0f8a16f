//! A fault proxy for the suite: a TCP proxy on a loopback port in front of a real server, whose
//! connections can be made to stall (nothing forwarded, the sockets held open), slow down
//! (each chunk delayed), be cut (both sockets shut) or be garbled (bytes from the server
//! flipped) at a chosen moment, as Toxiproxy's toxics do. Every connection dbduel opens
//! through it, clients, observer, admin session and results store alike, meets the fault.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to the traffic from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Toxic {
    /// Forward everything as it comes.
    Pass = 0,
    /// Forward nothing, keep the sockets open: a server that stopped answering.
    Stall = 1,
    /// Forward each chunk 200 ms late: a slow network.
    Slow = 2,
    /// Shut every connection down, and every new one as it arrives: a cut link.
    Cut = 3,
    /// Flip bytes of what the server sends: a corrupted stream.
    Garble = 4,
}

impl Toxic {
    fn from(v: u8) -> Toxic {
        match v {
            1 => Toxic::Stall,
            2 => Toxic::Slow,
            3 => Toxic::Cut,
            4 => Toxic::Garble,
            _ => Toxic::Pass,
        }
    }
}

struct Shared {
    toxic: AtomicU8,
    /// Connections accepted so far.
    accepted: AtomicUsize,
    /// Both ends of every connection, to cut them.
    sockets: Mutex<Vec<TcpStream>>,
}

/// A proxy to `127.0.0.1:upstream`, on a port of its own, until dropped (its threads then end
/// with the test binary).
pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared {
            toxic: AtomicU8::new(Toxic::Pass as u8),
            accepted: AtomicUsize::new(0),
            sockets: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                s.accepted.fetch_add(1, Ordering::SeqCst);
                if s.toxic() == Toxic::Cut {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                {
                    let mut held = s.sockets.lock().unwrap();
                    held.extend(client.try_clone().ok());
                    held.extend(server.try_clone().ok());
                }
                pump(&s, &client, &server, false);
                pump(&s, &server, &client, true);
            }
        });
        Proxy { port, shared }
    }

    /// Apply `toxic` from now on (Cut also shuts every open connection at once).
    pub fn set(&self, toxic: Toxic) {
        self.shared.toxic.store(toxic as u8, Ordering::SeqCst);
        if toxic == Toxic::Cut {
            for s in self.shared.sockets.lock().unwrap().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// `dsn` with its port replaced by the proxy's (the first `:PORT/` after the host).
    pub fn dsn(&self, dsn: &str, upstream: u16) -> String {
        dsn.replacen(&format!(":{upstream}/"), &format!(":{}/", self.port), 1)
    }
}

impl Shared {
    fn toxic(&self) -> Toxic {
        Toxic::from(self.toxic.load(Ordering::SeqCst))
    }
}

/// Copy `from` to `to` on a thread, under the toxic of the moment.
fn pump(shared: &Arc<Shared>, from: &TcpStream, to: &TcpStream, from_server: bool) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let shared = shared.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        let mut flipped = 0u64;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // A stall holds what came until the toxic changes (or forever).
            while shared.toxic() == Toxic::Stall {
                std::thread::sleep(Duration::from_millis(20));
            }
            match shared.toxic() {
                Toxic::Cut => break,
                Toxic::Slow => std::thread::sleep(Duration::from_millis(200)),
                Toxic::Garble if from_server => {
                    for b in buf[..n].iter_mut().step_by(7) {
                        *b ^= 0x5a;
                        flipped += 1;
                    }
                }
                _ => {}
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = (flipped, to.shutdown(Shutdown::Both));
        let _ = from.shutdown(Shutdown::Both);
    });
}
