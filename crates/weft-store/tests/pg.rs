//! A real PostgreSQL server for the tests: `initdb` into a temporary
//! directory, `pg_ctl start` listening on a unix socket only (no TCP
//! port to collide with), stopped when the last test using it is done;
//! and the tests of what only the PostgreSQL backend does.
//!
//! The binaries come from `WEFT_PG_BIN`, else the directory of `initdb`
//! on `PATH`, else `/usr/lib/postgresql/*/bin`; `.ci/run` installs them.
//! As root, the server runs as the `postgres` user (initdb refuses root).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use weft_store::{Store, StoreOptions};

use crate::common::{Db, TempDir, Typist};

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("WEFT_PG_BIN") {
        return dir.into();
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").exists() && dir.join("pg_ctl").exists() {
                // /usr/local/bin may hold symlinks into the real bin dir.
                return std::fs::canonicalize(dir.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(dir);
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().expect(
        "PostgreSQL binaries (initdb, pg_ctl) not found: install them (.ci/run does) or set WEFT_PG_BIN",
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A command run as the server's user.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A running server in a temporary directory.
pub struct PgServer {
    dir: TempDir,
    bin: PathBuf,
}

static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

impl PgServer {
    /// The server shared by the tests running now (started if none).
    pub fn shared() -> Arc<PgServer> {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = shared.upgrade() {
            return s;
        }
        let s = Arc::new(PgServer::start());
        *shared = Arc::downgrade(&s);
        s
    }

    /// A server of its own (for tests that stop it).
    pub fn start() -> PgServer {
        let bin = bin_dir();
        let dir = TempDir::new("pg");
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["-R", "postgres:postgres"]).arg(dir.path());
                    c
                },
                "chown the server directory",
            );
        }
        let mut initdb = as_server_user(&bin.join("initdb"));
        initdb.arg("-D").arg(dir.path().join("data")).args([
            "-A",
            "trust",
            "-U",
            "weft",
            "--no-sync",
            "-E",
            "UTF8",
        ]);
        run(initdb, "initdb");
        let server = PgServer { dir, bin };
        server.start_again();
        server
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let mut c = as_server_user(&self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(args);
        c
    }

    /// Starts the server (after [`PgServer::stop_immediate`]).
    pub fn start_again(&self) {
        let options = format!(
            "-c listen_addresses='' -k {} -p 5432 -c fsync=on -c synchronous_commit=on -c max_connections=200",
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log");
        let mut c = self.pg_ctl(&["-w", "-t", "60", "-o", &options, "-l"]);
        c.arg(&log).arg("start");
        let out = c.output().expect("run pg_ctl start");
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "pg_ctl start failed: {}{}\nserver log (last lines first):\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                tail.join("\n")
            );
        }
    }

    /// `pg_ctl stop -m immediate`: the server quits without a checkpoint,
    /// as in a crash; its next start recovers from the WAL.
    pub fn stop_immediate(&self) {
        run(
            self.pg_ctl(&["-w", "stop", "-m", "immediate"]),
            "pg_ctl stop -m immediate",
        );
    }

    /// The connection string of database `db`.
    pub fn config(&self, db: &str) -> String {
        format!(
            "host={} port=5432 user=weft dbname={db}",
            self.dir.path().display()
        )
    }

    /// A new empty database.
    pub fn new_database(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = postgres::Client::connect(&self.config("postgres"), postgres::NoTls)
            .expect("connect to the test server");
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create a database");
        name
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // Fast shutdown; the directory goes with `dir`.
        let _ = self.pg_ctl(&["-w", "stop", "-m", "fast"]).output();
    }
}

/// A database of its own on the shared server.
pub struct PgDb {
    server: Arc<PgServer>,
    name: String,
}

impl PgDb {
    pub fn new() -> PgDb {
        let server = PgServer::shared();
        let name = server.new_database();
        PgDb { server, name }
    }

    pub fn config(&self) -> String {
        self.server.config(&self.name)
    }
}

impl Db for PgDb {
    fn open(&self, options: StoreOptions) -> Store {
        Store::connect_postgres(&self.config(), options).expect("connect a PostgreSQL store")
    }

    fn fail_inserts_of(&self, bytes: &[u8]) {
        let sum = xxhash_rust::xxh3::xxh3_64(bytes) as i64;
        let n = sum.unsigned_abs();
        postgres::Client::connect(&self.config(), postgres::NoTls)
            .unwrap()
            .batch_execute(&format!(
                "CREATE FUNCTION fail_{n}() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN IF NEW.checksum = {sum} THEN RAISE EXCEPTION 'injected failure'; END IF;
                 RETURN NEW; END $$;
                 CREATE TRIGGER fail_{n} BEFORE INSERT ON weft_updates
                 FOR EACH ROW EXECUTE FUNCTION fail_{n}();"
            ))
            .unwrap();
    }
}

/// A full load starts its scan of the update rows after the ones
/// compaction deleted (`covered_through`: their dead index entries stay
/// until the table is vacuumed), which is sound only if no live row sits
/// at or below it. Checked across compactions and appends, with every
/// row still loaded.
#[test]
fn loads_skip_the_rows_compaction_deleted() {
    let db = PgDb::new();
    let store = db.open(StoreOptions::new().compaction_ratio(None));
    store.create("doc").unwrap();
    let mut client = postgres::Client::connect(&db.config(), postgres::NoTls).unwrap();
    let floor = |client: &mut postgres::Client| -> (i64, i64) {
        let row = client
            .query_one(
                "SELECT d.covered_through,
                        (SELECT count(*) FROM weft_updates u
                         WHERE u.doc = d.key AND u.seq <= d.covered_through)
                 FROM weft_documents d WHERE d.id = 'doc'",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    let mut typist = Typist::new(9);
    let mut appended = 0;
    for (round, rows) in [300, 7, 40].into_iter().enumerate() {
        for _ in 0..rows {
            store.append("doc", &typist.type_at(0, "x")).unwrap();
            appended += 1;
        }
        let c = store.compact("doc").unwrap().expect("rows to compact");
        assert_eq!(c.generation, round as u64 + 1);
        assert_eq!(floor(&mut client), (appended, 0), "round {round}");
    }
    for _ in 0..5 {
        store.append("doc", &typist.type_at(0, "y")).unwrap();
    }
    assert_eq!(floor(&mut client), (appended, 0));
    let fresh = db.open(StoreOptions::new().compaction_ratio(None));
    let doc = fresh.load("doc").unwrap();
    doc.assert_invariants();
    assert_eq!(crate::common::text_of_doc(&doc), typist.text());
}
