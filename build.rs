//! Compiles the workloads' SQL files in: every `sql/<workload>/<dialect>.sql` becomes a row of
//! `sql::FILES`, so that a dialect without a file of its own takes the generic SQL and adding
//! an engine's dialect file needs no list to be edited.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    paths.sort();
    paths
}

fn main() {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("sql");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::from("pub static FILES: &[(&str, &str, &str)] = &[\n");
    for dir in sorted(&root).into_iter().filter(|p| p.is_dir()) {
        let workload = dir
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        for file in sorted(&dir) {
            if file.extension().is_some_and(|e| e == "sql") {
                let dialect = file.file_stem().expect("a name").to_string_lossy();
                let path = file.display().to_string();
                out.push_str(&format!(
                    "    ({workload:?}, {dialect:?}, include_str!({path:?})),\n"
                ));
            }
        }
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("set by cargo")).join("sql_files.rs");
    fs::write(&dest, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}
