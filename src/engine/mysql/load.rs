//! Loading rows into MariaDB/MySQL: LOAD DATA LOCAL INFILE with rows generated into the request's
//! packets (the protocol's bulk path: no file is written or read), declared `binary` with each
//! value written in its column's character set so that the server converts nothing (a character a
//! column cannot hold refused by name), warnings and short counts failing the load; and multi-row
//! INSERTs where the server refuses local loads (MySQL 8's default `local_infile=OFF`).

use super::wire::WireError;
use super::{MySession, classify, quote_mysql};
use crate::engine::{
    DbError, DbResult, ErrorClass, LoadProgress, RowSource, Session, Value, load_interrupted,
    push_row_literals,
};

/// Rows per multi-row INSERT (and per progress report), and rows per transaction.
const INSERT_ROWS: usize = 2000;
const COMMIT_ROWS: u64 = 100_000;
/// Bytes of rows per packet of a local load.
const PART_BYTES: usize = 1 << 20;
/// The server's refusals of LOAD DATA LOCAL: MySQL's ER_NOT_ALLOWED_COMMAND and
/// ER_CLIENT_LOCAL_FILES_DISABLED, MariaDB's ER_LOAD_INFILE_CAPABILITY_DISABLED.
const LOCAL_REFUSED: &[u16] = &[1148, 3948, 4166];

impl MySession {
    /// Load `rows` into `table` (emptied first when `replace`), in transactions of
    /// COMMIT_ROWS rows.
    pub(super) fn load_rows(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        replace: bool,
    ) -> DbResult<u64> {
        if replace {
            self.batch(&format!("TRUNCATE TABLE {table}"))?;
        }
        if self.local_load {
            match self.load_local(table, columns, rows, progress) {
                Ok(None) => self.local_load = false,
                done => return done.map(|n| n.unwrap_or(0)),
            }
        }
        self.load_inserts(table, columns, rows, progress)
    }

    /// LOAD DATA LOCAL INFILE, one statement per transaction; None when the server refuses it
    /// before any row is taken. Under LOCAL the server turns what would be errors (a duplicate
    /// key, a value cut short) into warnings and goes on: a statement with a warning, or that
    /// took fewer rows than it was sent, fails the load with the server's first warnings.
    fn load_local(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<Option<u64>> {
        let (charset, kinds) = self.file_charset(table, columns)?;
        let sql = format!(
            "LOAD DATA LOCAL INFILE 'dbduel-rows' INTO TABLE {table} CHARACTER SET {charset} ({})",
            columns.join(", ")
        );
        let (mut row, mut n, mut ended, mut interrupted) = (Vec::new(), 0u64, false, false);
        let mut unfit = None;
        let mut unreported = 0u64;
        while !ended && !interrupted {
            self.begin(true)?;
            let mut sent = 0u64;
            let mut fill = |part: &mut Vec<u8>| {
                while part.len() < PART_BYTES {
                    if sent == COMMIT_ROWS {
                        return false;
                    }
                    if !rows.next_row(&mut row) {
                        ended = true;
                        return false;
                    }
                    let start = part.len();
                    if let Err(e) = put_row(&row, &kinds, part) {
                        part.truncate(start);
                        unfit = Some(e);
                        return false;
                    }
                    sent += 1;
                    unreported += 1;
                    if unreported == INSERT_ROWS as u64 {
                        unreported = 0;
                        if !progress(INSERT_ROWS as u64) {
                            interrupted = true;
                            return false;
                        }
                    }
                }
                true
            };
            let loaded = self.conn.load_local(&sql, &mut fill);
            match loaded {
                Err(WireError::Server { code, .. })
                    if n == 0 && sent == 0 && LOCAL_REFUSED.contains(&code) =>
                {
                    let _ = self.rollback();
                    return Ok(None);
                }
                Err(e) => {
                    let _ = self.rollback();
                    return Err(classify(&e, false));
                }
                Ok((took, warnings)) if took != sent || warnings > 0 => {
                    let said = self.first_warnings();
                    let _ = self.rollback();
                    return Err(DbError::new(
                        ErrorClass::Other("load".into()),
                        format!(
                            "the server took {took} of {sent} rows with {warnings} warnings: {said}"
                        ),
                    ));
                }
                Ok(_) => n += sent,
            }
            if let Some((i, c)) = unfit {
                let _ = self.rollback();
                return Err(DbError::new(
                    ErrorClass::Other("load".into()),
                    format!(
                        "a value for column {} holds '{c}' (U+{:04X}), which the column's character set ({}) cannot hold: give the column a utf8mb4 character set",
                        columns.get(i).unwrap_or(&"?"),
                        c as u32,
                        kinds.get(i).map_or("?", |k| k.name())
                    ),
                ));
            }
            if interrupted {
                return Err(load_interrupted(self));
            }
            self.commit()?;
        }
        if unreported > 0 {
            progress(unreported);
        }
        Ok(Some(n))
    }

    /// The character set a local load declares, and what each column's text is written as.
    /// When every column's character set is one the client writes itself (the UTF-8s,
    /// latin1, ascii, binary), the file is declared `binary` and each value is sent in its
    /// column's bytes, which the server stores as they are: a declared character set other
    /// than the column's costs the server a conversion of every value, a fifth of a YCSB
    /// load's time. Otherwise the file is UTF-8, converted by the server.
    fn file_charset(
        &mut self,
        table: &str,
        columns: &[&str],
    ) -> DbResult<(&'static str, Vec<Text>)> {
        let rows = self.query_text(&format!(
            "SELECT COLUMN_NAME, COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{}'",
            table.replace('\'', "''")
        ))?;
        let kinds: Option<Vec<Text>> = columns
            .iter()
            .map(|c| {
                let row = rows
                    .iter()
                    .find(|r| r[0].to_string().eq_ignore_ascii_case(c))?;
                Text::of(&row[1].to_string())
            })
            .collect();
        Ok(match kinds {
            Some(kinds) => ("binary", kinds),
            None => ("utf8mb4", vec![Text::Utf8; columns.len()]),
        })
    }

    /// The server's first three warnings, one line.
    fn first_warnings(&mut self) -> String {
        match self.query_text("SHOW WARNINGS LIMIT 3") {
            Ok(rows) if !rows.is_empty() => rows
                .iter()
                .map(|r| {
                    let text = |i: usize| r.get(i).map(Value::to_string).unwrap_or_default();
                    format!("{} (error {})", text(2), text(1))
                })
                .collect::<Vec<_>>()
                .join("; "),
            _ => "no warning given (a duplicate key?)".into(),
        }
    }

    /// Multi-row INSERTs of INSERT_ROWS rows.
    fn load_inserts(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        let head = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
        let (mut row, mut n, mut in_stmt) = (Vec::new(), 0u64, 0usize);
        self.begin(true)?;
        self.sql.clear();
        while rows.next_row(&mut row) {
            self.sql.push_str(if in_stmt == 0 { &head } else { "," });
            self.sql.push('(');
            push_row_literals(&row, &mut self.sql, quote_mysql);
            self.sql.push(')');
            (n, in_stmt) = (n + 1, in_stmt + 1);
            if in_stmt == INSERT_ROWS {
                self.flush_insert()?;
                (in_stmt, self.sql) = (0, String::with_capacity(self.sql.capacity()));
                if n % COMMIT_ROWS == 0 {
                    self.commit()?;
                    self.begin(true)?;
                }
                if !progress(INSERT_ROWS as u64) {
                    return Err(load_interrupted(self));
                }
            }
        }
        if in_stmt > 0 {
            self.flush_insert()?;
            progress(in_stmt as u64);
        }
        self.commit()?;
        Ok(n)
    }

    fn flush_insert(&mut self) -> DbResult<()> {
        self.conn
            .query(&self.sql, None)
            .map(|_| ())
            .map_err(|e| classify(&e, false))
    }
}

/// How a column's text is written: in the bytes of the column's character set.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Text {
    /// UTF-8 as it is: utf8mb4, binary columns, columns without a character set (numbers,
    /// dates), and a file declared utf8mb4.
    Utf8,
    /// UTF-8 without four-byte characters (utf8mb3, MySQL's utf8).
    Utf8mb3,
    /// One byte per character: ASCII, and U+00A0 to U+00FF as latin1 holds them.
    Latin1,
    Ascii,
}

impl Text {
    /// The column's character set as information_schema names it ('' for none); None for one
    /// the client does not write itself.
    fn of(charset: &str) -> Option<Text> {
        match charset {
            "" | "utf8mb4" | "binary" => Some(Text::Utf8),
            "utf8mb3" | "utf8" => Some(Text::Utf8mb3),
            "latin1" => Some(Text::Latin1),
            "ascii" => Some(Text::Ascii),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Text::Utf8 => "utf8mb4",
            Text::Utf8mb3 => "utf8mb3",
            Text::Latin1 => "latin1",
            Text::Ascii => "ascii",
        }
    }
}

/// One row in LOAD DATA's default format: fields ended by a tab, the row by a newline, NULL
/// as `\N`, and a backslash before a backslash, tab, newline, carriage return or NUL; text in
/// its column's bytes (`kinds`). A character its column cannot hold: the column's index and
/// the character.
fn put_row(row: &[Value], kinds: &[Text], out: &mut Vec<u8>) -> Result<(), (usize, char)> {
    use std::io::Write;
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        match v {
            Value::Null => out.extend_from_slice(b"\\N"),
            Value::Int(x) => out.extend_from_slice(itoa::Buffer::new().format(*x).as_bytes()),
            Value::Float(x) => {
                let _ = write!(out, "{x:?}");
            }
            Value::Text(s) => {
                let bytes = s.as_bytes();
                let plain = !bytes
                    .iter()
                    .any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r' | 0) || *b >= 0x80);
                if plain {
                    out.extend_from_slice(bytes);
                    continue;
                }
                let kind = kinds.get(i).copied().unwrap_or(Text::Utf8);
                let mut utf8 = [0u8; 4];
                for c in s.chars() {
                    let byte = match c {
                        '\\' => b'\\',
                        '\t' => b't',
                        '\n' => b'n',
                        '\r' => b'r',
                        '\0' => b'0',
                        c if c.is_ascii() => {
                            out.push(c as u8);
                            continue;
                        }
                        c => {
                            match kind {
                                Text::Utf8 => {}
                                Text::Utf8mb3 if c.len_utf8() < 4 => {}
                                Text::Latin1 if ('\u{a0}'..='\u{ff}').contains(&c) => {
                                    out.push(c as u32 as u8);
                                    continue;
                                }
                                _ => return Err((i, c)),
                            }
                            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                            continue;
                        }
                    };
                    out.extend_from_slice(&[b'\\', byte]);
                }
            }
        }
    }
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_written_in_load_datas_default_format() {
        let mut out = Vec::new();
        let utf8 = [Text::Utf8; 6];
        put_row(
            &[
                Value::Int(-7),
                Value::Null,
                Value::Text("a\tb\nc\\d\re\0f".into()),
                Value::Text("\\N".into()),
                Value::Float(0.5),
                Value::Text(String::new()),
            ],
            &utf8,
            &mut out,
        )
        .unwrap();
        put_row(&[Value::Text("plain".into())], &utf8, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-7\t\\N\ta\\tb\\nc\\\\d\\re\\0f\t\\\\N\t0.5\t\nplain\n"
        );
    }

    #[test]
    fn text_is_written_in_its_columns_bytes() {
        let row = |s: &str, kind: Text| {
            let mut out = Vec::new();
            put_row(&[Value::Text(s.into())], &[kind], &mut out).map(|()| out)
        };
        assert_eq!(row("é\t€", Text::Utf8), Ok("é\\t€\n".as_bytes().to_vec()));
        assert_eq!(row("é\tü", Text::Latin1), Ok(b"\xe9\\t\xfc\n".to_vec()));
        assert_eq!(row("a€", Text::Latin1), Err((0, '€')));
        assert_eq!(row("é", Text::Ascii), Err((0, 'é')));
        assert_eq!(row("€", Text::Utf8mb3), Ok("€\n".as_bytes().to_vec()));
        assert_eq!(row("😀", Text::Utf8mb3), Err((0, '😀')));
        assert_eq!(Text::of("utf8mb4"), Some(Text::Utf8));
        assert_eq!(Text::of("cp1251"), None);
    }
}
