//! TLS for real: a throwaway CA and server certificate made at test time, a PostgreSQL that
//! takes TLS only (hostssl rules, one client-certificate user) and a MariaDB with
//! require_secure_transport. dbduel must connect and record TLS, refuse a wrong CA, a wrong
//! host name and a plain connection with a message naming the cause, log in with a client
//! certificate, and take its password from the places users keep it.

use std::path::{Path, PathBuf};

use dbduel::dsn::Dsn;
use dbduel::server::{self, Server, ServerKind};
use libtest_mimic::Trial;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::env::{dbduel, dbduel_env, ensure, expect_code, read_result, session, text};

pub fn trials() -> Vec<Trial> {
    vec![
        crate::env::trial("tls::postgres", || Ok(postgres()?)),
        crate::env::trial("tls::mariadb", || Ok(mariadb()?)),
    ]
}

/// The files of a throwaway PKI: a CA, a server certificate for "localhost" only (so that
/// 127.0.0.1 is the wrong host name), a client certificate for `certuser`, and a second CA
/// that signed none of them.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    wrong_ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn ca(name: &str) -> (CertificateParams, KeyPair, String) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let pem = params.self_signed(&key).expect("CA").pem();
    (params, key, pem)
}

fn pki(kind: &ServerKind) -> Pki {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write pem");
        path
    };
    let (ca_params, ca_key, ca_pem) = ca("dbduel test CA");
    let (_, _, wrong_pem) = ca("another CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>, cn: &str| {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(names).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    };
    let (server_pem, server_key) = leaf(vec!["localhost".into()], "localhost");
    let (client_pem, client_key) = leaf(vec![], "certuser");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let pki = Pki {
        ca: write("ca.pem", &ca_pem),
        wrong_ca: write("wrong-ca.pem", &wrong_pem),
        server_cert: write("server.pem", &server_pem),
        server_key: write("server.key", &server_key),
        client_cert: write("client.pem", &client_pem),
        client_key: write("client.key", &client_key),
        _dir: dir,
    };
    for f in [&pki.server_key, &pki.client_key] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    server::give_to_account(kind, &pki.server_key).expect("chown key");
    pki
}

fn start(kind: &'static ServerKind, settings: Vec<(String, String)>) -> Result<Server, String> {
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    server::start_for_tests(kind, &settings)
        .map_err(|e| format!("starting the TLS {} server: {e}", kind.product))
}

fn s(k: &str, v: impl AsRef<Path>) -> (String, String) {
    (k.to_string(), v.as_ref().display().to_string())
}

/// A run that must work and record TLS in its result: three clients on two threads, so that
/// TLS goes through the sockets that park a client among others (the sessions outside the run
/// use the same sockets blocking).
fn run_over_tls(dsn: &str, json: &Path, what: &str) -> Result<(), String> {
    let j = json.display().to_string();
    let out = dbduel(&[
        "run", "tpcb", "-S", "--dsn", dsn, "-c", "3", "-j", "2", "-T", "1", "--json", &j,
    ]);
    expect_code(&out, 0, what)?;
    let r = read_result(json)?;
    ensure(r["client_threads"]["threads"] == 2, || {
        format!("{what}: threads {}", r["client_threads"])
    })?;
    let t = &r["engine"]["transport"];
    ensure(t["tls"] == true, || format!("{what}: no TLS recorded: {t}"))?;
    ensure(
        t["tls_version"]
            .as_str()
            .is_some_and(|v| v.starts_with("TLSv1.")),
        || format!("{what}: TLS version: {t}"),
    )?;
    ensure(t["cipher"].as_str().is_some_and(|c| !c.is_empty()), || {
        format!("{what}: cipher: {t}")
    })?;
    ensure(text(&out).contains("connection: TLS (TLSv1."), || {
        format!("{what}: summary lacks the TLS line:\n{}", text(&out))
    })
}

/// A command that must be refused with exit 2 and `needle` in its message.
fn refused(args: &[&str], needle: &str, what: &str) -> Result<(), String> {
    let out = dbduel(args);
    expect_code(&out, 2, what)?;
    ensure(text(&out).contains(needle), || {
        format!("{what}: message lacks '{needle}':\n{}", text(&out))
    })
}

fn postgres() -> Result<(), String> {
    let pki = pki(&server::POSTGRES);
    let hba = pki._dir.path().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all all trust\n\
         hostssl all certuser 127.0.0.1/32 cert\n\
         hostssl all all 127.0.0.1/32 scram-sha-256\n",
    )
    .map_err(|e| e.to_string())?;
    let pg = start(
        &server::POSTGRES,
        vec![
            s("ssl", "on"),
            s("ssl_cert_file", &pki.server_cert),
            s("ssl_key_file", &pki.server_key),
            s("ssl_ca_file", &pki.ca),
            s("hba_file", &hba),
        ],
    )?;
    let port = pg.port;
    let password = Dsn::parse(&pg.dsn_text("postgres"))
        .map_err(|e| e.to_string())?
        .password()
        .unwrap_or_default()
        .to_string();
    session(&pg.dsn_text("postgres"))
        .batch("CREATE ROLE certuser LOGIN SUPERUSER")
        .map_err(|e| e.to_string())?;
    let ca = pki.ca.display().to_string();
    let url = |host: &str, user: &str, params: &str| {
        format!("postgres://{user}@{host}:{port}/postgres?{params}")
    };
    let with_pw = |host: &str, params: &str| {
        format!("postgres://dbduel:{password}@{host}:{port}/postgres?{params}")
    };
    let full = with_pw(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &full]),
        0,
        "prepare over verify-full",
    )?;
    let json = pki._dir.path().join("r.json");
    run_over_tls(&full, &json, "verify-full to localhost")?;
    run_over_tls(
        &with_pw("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
        &json,
        "verify-ca to 127.0.0.1",
    )?;
    run_over_tls(
        &with_pw("127.0.0.1", "sslmode=require&channel_binding=require"),
        &json,
        "require with channel binding",
    )?;
    refused(
        &[
            "check",
            "tpcb",
            "--dsn",
            &with_pw(
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
        ],
        "not issued for the host name",
        "verify-full to the wrong name",
    )?;
    let wrong = pki.wrong_ca.display().to_string();
    refused(
        &[
            "check",
            "tpcb",
            "--dsn",
            &with_pw(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={wrong}"),
            ),
        ],
        "not signed by a trusted CA",
        "verify-full with the wrong CA",
    )?;
    refused(
        &[
            "check",
            "tpcb",
            "--dsn",
            &with_pw("127.0.0.1", "sslmode=disable"),
        ],
        "no encryption",
        "sslmode=disable against hostssl rules",
    )?;
    // A client certificate instead of a password.
    let cert = format!(
        "sslmode=verify-full&sslrootcert={ca}&sslcert={}&sslkey={}",
        pki.client_cert.display(),
        pki.client_key.display()
    );
    run_over_tls(
        &url("localhost", "certuser", &cert),
        &json,
        "client certificate",
    )?;
    // The password from PGPASSWORD, from a password file, and from --password-file.
    let bare = url(
        "localhost",
        "dbduel",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let out = dbduel_env(
        &["check", "tpcb", "--dsn", &bare],
        &[("PGPASSWORD", &password)],
    );
    expect_code(&out, 0, "PGPASSWORD")?;
    let pgpass = pki._dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("localhost:{port}:postgres:dbduel:{password}\n"),
    )
    .map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())?;
    let pgpass_s = pgpass.display().to_string();
    let out = dbduel_env(
        &["check", "tpcb", "--dsn", &bare],
        &[("PGPASSFILE", &pgpass_s)],
    );
    expect_code(&out, 0, "PGPASSFILE")?;
    let pwfile = pki._dir.path().join("pw");
    std::fs::write(&pwfile, format!("{password}\n")).map_err(|e| e.to_string())?;
    let out = dbduel(&[
        "check",
        "tpcb",
        "--dsn",
        &bare,
        "--password-file",
        &pwfile.display().to_string(),
    ]);
    expect_code(&out, 0, "--password-file")?;
    ensure(!text(&out).contains(&password), || "password shown".into())?;
    // No password at all: the message names the method and where a password may come from.
    let out = dbduel_env(
        &["check", "tpcb", "--dsn", &bare],
        &[("PGPASSFILE", "/nonexistent")],
    );
    expect_code(&out, 2, "no password")?;
    ensure(
        text(&out).contains("scram-sha-256") && text(&out).contains("PGPASSWORD"),
        || format!("no password: {}", text(&out)),
    )
}

fn mariadb() -> Result<(), String> {
    let pki = pki(&server::MARIADB);
    let maria = start(
        &server::MARIADB,
        vec![
            s("ssl_cert", &pki.server_cert),
            s("ssl_key", &pki.server_key),
            s("ssl_ca", &pki.ca),
            s("require_secure_transport", "ON"),
        ],
    )?;
    let port = maria.port;
    let password = Dsn::parse(&maria.dsn_text(""))
        .map_err(|e| e.to_string())?
        .password()
        .unwrap_or_default()
        .to_string();
    let mut admin = session(&maria.dsn_text(""));
    for sql in [
        "CREATE DATABASE bench",
        "CREATE USER certuser@'%' REQUIRE X509",
        "GRANT ALL ON bench.* TO certuser@'%'",
        "INSTALL SONAME 'auth_ed25519'",
        "CREATE USER eduser@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed-secret')",
        "GRANT ALL ON bench.* TO eduser@'%'",
    ] {
        admin.batch(sql).map_err(|e| format!("{sql}: {e}"))?;
    }
    let ca = pki.ca.display().to_string();
    let dsn = |host: &str, params: &str| {
        format!("mysql://dbduel:{password}@{host}:{port}/bench?{params}")
    };
    let identity = dsn(
        "localhost",
        &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    );
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &identity]),
        0,
        "prepare over VERIFY_IDENTITY",
    )?;
    let json = pki._dir.path().join("r.json");
    run_over_tls(&identity, &json, "VERIFY_IDENTITY to localhost")?;
    run_over_tls(&dsn("127.0.0.1", ""), &json, "PREFERRED, the default")?;
    let wrong = pki.wrong_ca.display().to_string();
    refused(
        &[
            "check",
            "tpcb",
            "--dsn",
            &dsn("localhost", &format!("ssl-mode=VERIFY_CA&ssl-ca={wrong}")),
        ],
        "not signed by a trusted CA",
        "VERIFY_CA with the wrong CA",
    )?;
    refused(
        &[
            "check",
            "tpcb",
            "--dsn",
            &dsn(
                "127.0.0.1",
                &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
            ),
        ],
        "not issued for the host name",
        "VERIFY_IDENTITY to the wrong name",
    )?;
    refused(
        // MariaDB 10.11 answers "Access denied" to a plain login here; dbduel adds how it came.
        &[
            "check",
            "tpcb",
            "--dsn",
            &dsn("127.0.0.1", "ssl-mode=DISABLED"),
        ],
        "over TCP without TLS",
        "DISABLED against require_secure_transport",
    )?;
    let cert = format!(
        "mysql://certuser@localhost:{port}/bench?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}&ssl-cert={}&ssl-key={}",
        pki.client_cert.display(),
        pki.client_key.display()
    );
    run_over_tls(&cert, &json, "client certificate")?;
    let ed = format!("mysql://eduser@127.0.0.1:{port}/bench?ssl-mode=REQUIRED");
    let out = dbduel_env(
        &["check", "tpcb", "--dsn", &ed],
        &[("MYSQL_PWD", "ed-secret")],
    );
    expect_code(&out, 0, "client_ed25519 with MYSQL_PWD")?;
    let out = dbduel_env(&["check", "tpcb", "--dsn", &ed], &[("MYSQL_PWD", "wrong")]);
    expect_code(&out, 2, "client_ed25519, wrong password")?;
    ensure(text(&out).contains("client_ed25519"), || {
        format!("the refusal names no plugin: {}", text(&out))
    })
}
