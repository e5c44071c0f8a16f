//! Named SQL sections: a workload's `sql/<workload>/generic.sql` (PostgreSQL's SQL, which has no
//! file of its own) is overridden section by section by `sql/<workload>/<dialect>.sql`, so a
//! dialect without a file takes the generic SQL. The files are compiled in from the table that
//! `build.rs` writes of every `sql/*/*.sql` (`sql::files`). A section starts with
//! `-- name: <name>`; its statements end with `;` at the end of a line; `{var}` is replaced by the
//! caller's values.

// `FILES`: (workload, dialect or "generic", text) for every `sql/<workload>/<dialect>.sql`,
// listed by build.rs.
include!(concat!(env!("OUT_DIR"), "/sql_files.rs"));

/// A workload's SQL files, `sql/<dir>/*.sql`, as (dialect or "generic", text): the files found
/// there when dbduel was built. A dialect without a file takes the generic SQL.
pub fn files(dir: &str) -> Vec<(&'static str, &'static str)> {
    FILES
        .iter()
        .filter(|(workload, _, _)| *workload == dir)
        .map(|&(_, dialect, text)| (dialect, text))
        .collect()
}

pub struct SqlSet {
    sections: Vec<(String, String)>,
}

impl SqlSet {
    /// `files` pairs a dialect (or "generic") with the file's text; `dialect` picks the overrides.
    pub fn load(files: &[(&str, &str)], dialect: &str) -> SqlSet {
        let mut set = SqlSet {
            sections: Vec::new(),
        };
        for (_, text) in files.iter().filter(|(d, _)| *d == "generic") {
            set.merge(text);
        }
        for (_, text) in files.iter().filter(|(d, _)| *d == dialect) {
            set.merge(text);
        }
        set
    }

    fn merge(&mut self, text: &str) {
        for (name, body) in parse(text) {
            match self.sections.iter_mut().find(|(n, _)| *n == name) {
                Some(section) => section.1 = body,
                None => self.sections.push((name, body)),
            }
        }
    }

    /// The text of one section. A missing section is a bug in the workload's SQL files.
    pub fn get(&self, name: &str) -> &str {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_str())
            .unwrap_or_else(|| panic!("SQL section '{name}' is missing"))
    }

    /// Whether the files have a section of this name (an empty one included).
    pub fn has(&self, name: &str) -> bool {
        self.sections.iter().any(|(n, _)| n == name)
    }

    /// The statements of a section, with `{var}` replaced.
    pub fn statements(&self, name: &str, vars: &[(&str, &str)]) -> Vec<String> {
        let mut text = self.get(name).to_string();
        for (k, v) in vars {
            text = text.replace(&format!("{{{k}}}"), v);
        }
        let mut out = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            current.push_str(line);
            current.push('\n');
            if line.trim_end().ends_with(';') {
                push_statement(&mut out, &current);
                current.clear();
            }
        }
        push_statement(&mut out, &current);
        out
    }
}

fn push_statement(out: &mut Vec<String>, text: &str) {
    let stmt = text.trim().trim_end_matches(';').trim();
    if !stmt.is_empty() {
        out.push(stmt.to_string());
    }
}

fn parse(text: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name:") {
            sections.push((name.trim().to_string(), String::new()));
        } else if line.trim_start().starts_with("--") {
            continue;
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (_, body) in &mut sections {
        *body = body.trim().to_string();
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_overrides_generic() {
        let generic = "-- name: a\nSELECT 1;\n-- name: b\nCREATE TABLE t (x int){opts};\nCREATE INDEX i ON t (x);\n";
        let mysql = "-- comment\n-- name: b\nCREATE TABLE t (x int primary key){opts};\n";
        let set = SqlSet::load(&[("generic", generic), ("mysql", mysql)], "mysql");
        assert_eq!(set.get("a"), "SELECT 1;");
        assert_eq!(
            set.statements("b", &[("opts", " ENGINE=Aria")]),
            vec!["CREATE TABLE t (x int primary key) ENGINE=Aria"]
        );
        let set = SqlSet::load(&[("generic", generic), ("mysql", mysql)], "postgres");
        assert_eq!(set.statements("b", &[("opts", "")]).len(), 2);
    }

    #[test]
    fn every_workload_has_generic_sql_and_a_dialect_without_a_file_takes_it() {
        assert!(FILES.iter().any(|f| f.0 == "tpcb" && f.1 == "sqlite"));
        for &(dir, _, _) in FILES {
            let files = files(dir);
            let generic = files.iter().find(|(d, _)| *d == "generic");
            let generic = generic.unwrap_or_else(|| panic!("sql/{dir}/generic.sql"));
            let set = SqlSet::load(&files, "no-such-dialect");
            let alone = SqlSet::load(&[*generic], "generic");
            assert_eq!(set.sections, alone.sections, "{dir}");
        }
    }
}
