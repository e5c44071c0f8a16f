//! YCSB's properties: the six core workload files built in (workloads/workloada..f of YCSB 0.17), a
//! property file read from disk (`-P FILE`, Java's format), the overrides (`-p name=value`), and
//! the validated `Props` with CoreWorkload's names and defaults (CoreWorkload.init), each bad one
//! named.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Error;

/// The core workloads as YCSB 0.17 ships them (workloads/workloada..workloadf), comments left out.
pub const BUILT_IN: [(&str, &str); 6] = [
    (
        "workloada",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
    ),
    (
        "workloadb",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0.95\nupdateproportion=0.05\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
    ),
    (
        "workloadc",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=1\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
    ),
    (
        "workloadd",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0.95\nupdateproportion=0\nscanproportion=0\ninsertproportion=0.05\nrequestdistribution=latest",
    ),
    (
        "workloade",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\nrequestdistribution=zipfian\nmaxscanlength=100\nscanlengthdistribution=uniform",
    ),
    (
        "workloadf",
        "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0.5\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian",
    ),
];

/// The one workload class there is: CoreWorkload.
const CORE_WORKLOAD: &str = "site.ycsb.workloads.CoreWorkload";
/// The names YCSB's own files give the core workload (older releases, the short name).
const CORE_NAMES: &[&str] = &[
    CORE_WORKLOAD,
    "com.yahoo.ycsb.workloads.CoreWorkload",
    "CoreWorkload",
];
/// Properties of YCSB's own files that shape its client or its output, not the operations:
/// accepted, and each named in a note as not applying (dbduel's own flags say the same).
const CLIENT_ONLY: &[(&str, &str)] = &[
    ("maxexecutiontime", "the run's time is -T"),
    (
        "measurementtype",
        "dbduel keeps an HDR histogram and per-second windows",
    ),
    (
        "histogram.buckets",
        "dbduel's histograms cover every latency",
    ),
    (
        "timeseries.granularity",
        "per-second windows are -P and --json",
    ),
    (
        "measurement.interval",
        "latencies are measured per operation",
    ),
    ("measurement.raw.output_file", "raw samples are not written"),
    ("measurement.trackjvm", "there is no JVM"),
    ("status.interval", "progress lines are -P"),
    ("reportlatencyforeacherror", "errors are counted by kind"),
    ("latencytrackederrors", "errors are counted by kind"),
    ("exporter", "results are --json"),
    ("exportfile", "results are --json"),
    ("db", "the database is --dsn"),
    ("columnfamily", "SQL tables have no column family"),
    (
        "core_workload_insertion_retry_limit",
        "failed transactions are retried by --max-tries",
    ),
    (
        "core_workload_insertion_retry_interval",
        "failed transactions are retried by --max-tries",
    ),
];

/// The option that names the property file (`-P`, a plan's `[options] workload`).
pub const FILE_OPTION: &str = "workload";

/// Every property taken, with CoreWorkload's (or Client's) default.
const KNOWN: &[(&str, &str)] = &[
    ("recordcount", "0"),
    ("operationcount", "0"),
    ("table", "usertable"),
    ("fieldcount", "10"),
    ("fieldlength", "100"),
    ("minfieldlength", "1"),
    ("fieldlengthdistribution", "constant"),
    ("readallfields", "true"),
    ("writeallfields", "false"),
    ("readproportion", "0.95"),
    ("updateproportion", "0.05"),
    ("insertproportion", "0.0"),
    ("scanproportion", "0.0"),
    ("readmodifywriteproportion", "0.0"),
    ("requestdistribution", "uniform"),
    ("zeropadding", "1"),
    ("minscanlength", "1"),
    ("maxscanlength", "1000"),
    ("scanlengthdistribution", "uniform"),
    ("insertorder", "hashed"),
    ("insertstart", "0"),
    ("insertcount", ""),
    ("hotspotdatafraction", "0.2"),
    ("hotspotopnfraction", "0.8"),
    ("exponential.percentile", "95"),
    ("exponential.frac", "0.8571428571"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    Sequential,
    Exponential,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    Constant,
    Uniform,
    Zipfian,
}

/// The validated properties of a run or a load.
#[derive(Debug, Clone)]
pub struct Props {
    /// The built-in workload the properties started from; for a property file, the core
    /// workload whose mix it has, else its mix (`mix_name`).
    pub base: &'static str,
    /// The property file's name, when one was read.
    pub file: Option<String>,
    /// Properties of YCSB's client or output that were given and do not apply here.
    pub notes: Vec<String>,
    pub recordcount: i64,
    pub operationcount: u64,
    pub table: String,
    pub fieldcount: usize,
    pub fieldlength: i64,
    pub minfieldlength: i64,
    pub lengths: Lengths,
    pub readallfields: bool,
    pub writeallfields: bool,
    /// READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE.
    pub proportions: [f64; 5],
    pub distribution: Distribution,
    pub zeropadding: usize,
    pub minscanlength: i64,
    pub maxscanlength: i64,
    pub scan_zipfian: bool,
    pub ordered: bool,
    pub insertstart: i64,
    pub insertcount: i64,
    pub hotspotdatafraction: f64,
    pub hotspotopnfraction: f64,
    pub exponential_percentile: f64,
    pub exponential_frac: f64,
}

fn bad(name: &str, value: &str, want: &str) -> Error {
    Error::Usage(format!("YCSB property {name}={value}: {want}"))
}

/// The properties of a file in Java's properties format: `name=value` or `name: value`, `#`
/// and `!` comments.
pub fn parse_file(text: &str, origin: &str) -> Result<Pairs, Error> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some(cut) = line.find(['=', ':']) else {
            return Err(Error::Usage(format!(
                "{origin}:{}: not a property (name=value): {line}",
                i + 1
            )));
        };
        out.push((
            line[..cut].trim().to_string(),
            line[cut + 1..].trim().to_string(),
        ));
    }
    Ok(out)
}

/// The base properties: a built-in workload by name, else a file read from disk.
/// Properties as `name`, `value` pairs, in the order written.
type Pairs = Vec<(String, String)>;

fn base(name: &str) -> Result<(&'static str, Pairs), Error> {
    if let Some((builtin, text)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
        return Ok((builtin, parse_file(text, builtin)?));
    }
    let text = std::fs::read_to_string(name).map_err(|e| {
        Error::Usage(format!(
            "YCSB property file {name}: {e} (built in: {})",
            BUILT_IN.map(|(n, _)| n).join(", ")
        ))
    })?;
    Ok(("file", parse_file(&text, name)?))
}

/// The properties in effect: the file (`workload` option), else the built-in variant, else
/// workloada, then every other option as a `-p` override.
pub fn resolve(variant: Option<&str>, options: &BTreeMap<String, String>) -> Result<Props, Error> {
    let file = options
        .get(FILE_OPTION)
        .filter(|v| !CORE_NAMES.contains(&v.as_str()))
        .map(String::as_str);
    // The file named wins over the variant: a sweep point without a `variant` key is given
    // the entry's first one, and its `[options] workload` is what the plan asks for.
    let (name, mut pairs) = base(file.or(variant).unwrap_or("workloada"))?;
    pairs.extend(
        options
            .iter()
            .filter(|(k, _)| *k != FILE_OPTION)
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let mut set: BTreeMap<&str, String> = KNOWN.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let mut notes = Vec::new();
    for (k, v) in &pairs {
        if k == FILE_OPTION {
            if !CORE_NAMES.contains(&v.as_str()) {
                return Err(bad(k, v, &format!("only {CORE_WORKLOAD} is supported")));
            }
            continue;
        }
        // Taken as -c and -R before the workload is made (`RunInput::ycsb_names`).
        if k == "threadcount" || k == "target" {
            continue;
        }
        if let Some((_, instead)) = CLIENT_ONLY.iter().find(|(n, _)| n == k) {
            notes.push(format!("{k}={v} ({instead})"));
            continue;
        }
        let Some((known, _)) = KNOWN.iter().find(|(n, _)| n == k) else {
            return Err(Error::Usage(format!(
                "unknown YCSB property '{k}' (known: {})",
                KNOWN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )));
        };
        set.insert(known, v.clone());
    }
    let mut props = Props::from_set(name, &set)?;
    if !notes.is_empty() {
        props.notes = vec![format!(
            "YCSB properties that shape YCSB's own client and do not apply here: {}",
            notes.join("; ")
        )];
    }
    if let Some(path) = file {
        props.file = Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        props.base = mix_name(&props);
    }
    Ok(props)
}

/// The property file's `threadcount` and `target` (YCSB's -c and -R), when the options name
/// a file that gives them.
pub fn client_properties(options: &BTreeMap<String, String>) -> Result<Pairs, Error> {
    let Some(path) = options
        .get(FILE_OPTION)
        .filter(|v| !CORE_NAMES.contains(&v.as_str()) && !BUILT_IN.iter().any(|(n, _)| n == v))
    else {
        return Ok(Vec::new());
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        // `resolve` names the file that cannot be read.
        return Ok(Vec::new());
    };
    Ok(parse_file(&text, path)?
        .into_iter()
        .filter(|(k, _)| k == "threadcount" || k == "target")
        .collect())
}

/// The variant a property file runs: the core workload whose mix (operation proportions and
/// request distribution) it has, else its mix itself ("mix r50/u50/i0/s0/rmw0 zipfian"), so
/// that runs of different mixes are never taken for the same workload.
fn mix_name(props: &Props) -> &'static str {
    let same = |(builtin, _): &&(&'static str, &str)| {
        resolve(Some(builtin), &BTreeMap::new()).is_ok_and(|b| {
            b.proportions == props.proportions && b.distribution == props.distribution
        })
    };
    if let Some((builtin, _)) = BUILT_IN.iter().find(same) {
        return builtin;
    }
    let p = props
        .proportions
        .map(|x| format!("{}", (x * 100.0).round() / 1.0));
    intern(format!(
        "mix r{}/u{}/i{}/s{}/rmw{} {}",
        p[0],
        p[1],
        p[2],
        p[3],
        p[4],
        format!("{:?}", props.distribution).to_lowercase()
    ))
}

/// A variant name made at run time, kept for the process (a handful at most).
fn intern(name: String) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().expect("variant names");
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    leaked
}

struct Reader<'a>(&'a BTreeMap<&'static str, String>);

impl Reader<'_> {
    fn text(&self, name: &str) -> &str {
        self.0.get(name).map(String::as_str).unwrap_or_default()
    }
    fn int(&self, name: &str, least: i64) -> Result<i64, Error> {
        let v = self.text(name);
        match v.parse::<i64>() {
            Ok(n) if n >= least => Ok(n),
            _ => Err(bad(
                name,
                v,
                &format!("give a whole number of at least {least}"),
            )),
        }
    }
    fn fraction(&self, name: &str) -> Result<f64, Error> {
        let v = self.text(name);
        match v.parse::<f64>() {
            Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
            _ => Err(bad(name, v, "give a number from 0 to 1")),
        }
    }
    /// A number strictly between 0 and `max` (YCSB reads it as a double): at either end the
    /// generator's rate is zero or infinite.
    fn open_range(&self, name: &str, max: f64) -> Result<f64, Error> {
        let v = self.text(name);
        match v.parse::<f64>() {
            Ok(f) if f > 0.0 && f < max => Ok(f),
            _ => Err(bad(
                name,
                v,
                &format!("give a number above 0 and below {max}"),
            )),
        }
    }
    fn flag(&self, name: &str) -> Result<bool, Error> {
        // Java's Boolean.parseBoolean takes anything, and anything but "true" is false; a
        // typo is refused here instead.
        match self.text(name).to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(bad(name, v, "give true or false")),
        }
    }
    fn choice<T: Copy>(&self, name: &str, choices: &[(&str, T)]) -> Result<T, Error> {
        let v = self.text(name);
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        choices
            .iter()
            .find(|(n, _)| *n == v)
            .map(|(_, t)| *t)
            .ok_or_else(|| bad(name, v, &format!("use one of {}", names.join(", "))))
    }
}

impl Props {
    fn from_set(base: &'static str, set: &BTreeMap<&'static str, String>) -> Result<Props, Error> {
        let r = Reader(set);
        // CoreWorkload.init: a record count of 0 means Integer.MAX_VALUE; here it means the
        // data's own count, read from the database by `run`, and a load needs one.
        let recordcount = r.int("recordcount", 0)?;
        let insertstart = r.int("insertstart", 0)?;
        let insertcount = match r.text("insertcount") {
            "" => recordcount - insertstart,
            _ => r.int("insertcount", 0)?,
        };
        if recordcount > 0 && recordcount < insertstart + insertcount {
            return Err(bad(
                "insertcount",
                &insertcount.to_string(),
                "insertstart + insertcount must not pass recordcount",
            ));
        }
        let table = r.text("table").to_string();
        if table.is_empty() || !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("table", &table, "give a name of letters, digits and _"));
        }
        let zeropadding = r.int("zeropadding", 1)?;
        if zeropadding > 200 {
            return Err(bad("zeropadding", &zeropadding.to_string(), "at most 200"));
        }
        let props = Props {
            base,
            file: None,
            notes: Vec::new(),
            recordcount,
            operationcount: r.int("operationcount", 0)? as u64,
            table,
            fieldcount: r.int("fieldcount", 1)? as usize,
            fieldlength: r.int("fieldlength", 1)?,
            minfieldlength: r.int("minfieldlength", 1)?,
            lengths: r.choice(
                "fieldlengthdistribution",
                &[
                    ("constant", Lengths::Constant),
                    ("uniform", Lengths::Uniform),
                    ("zipfian", Lengths::Zipfian),
                ],
            )?,
            readallfields: r.flag("readallfields")?,
            writeallfields: r.flag("writeallfields")?,
            proportions: [
                r.fraction("readproportion")?,
                r.fraction("updateproportion")?,
                r.fraction("insertproportion")?,
                r.fraction("scanproportion")?,
                r.fraction("readmodifywriteproportion")?,
            ],
            distribution: r.choice(
                "requestdistribution",
                &[
                    ("uniform", Distribution::Uniform),
                    ("zipfian", Distribution::Zipfian),
                    ("latest", Distribution::Latest),
                    ("hotspot", Distribution::Hotspot),
                    ("sequential", Distribution::Sequential),
                    ("exponential", Distribution::Exponential),
                ],
            )?,
            zeropadding: zeropadding as usize,
            minscanlength: r.int("minscanlength", 1)?,
            maxscanlength: r.int("maxscanlength", 1)?,
            scan_zipfian: r.choice(
                "scanlengthdistribution",
                &[("uniform", false), ("zipfian", true)],
            )?,
            ordered: r.choice("insertorder", &[("hashed", false), ("ordered", true)])?,
            insertstart,
            insertcount,
            hotspotdatafraction: r.fraction("hotspotdatafraction")?,
            hotspotopnfraction: r.fraction("hotspotopnfraction")?,
            exponential_percentile: r.open_range("exponential.percentile", 100.0)?,
            exponential_frac: r.fraction("exponential.frac")?,
        };
        props.validate()
    }

    fn validate(self) -> Result<Props, Error> {
        if self.minfieldlength > self.fieldlength {
            return Err(bad(
                "minfieldlength",
                &self.minfieldlength.to_string(),
                "at most fieldlength",
            ));
        }
        if self.minscanlength > self.maxscanlength {
            return Err(bad(
                "minscanlength",
                &self.minscanlength.to_string(),
                "at most maxscanlength",
            ));
        }
        if self.proportions.iter().sum::<f64>() <= 0.0 {
            return Err(bad(
                "readproportion",
                "0",
                "the five proportions add up to nothing: give one above 0",
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn built_in_workloads_and_overrides() {
        let e = resolve(Some("workloade"), &options(&[("maxscanlength", "7")])).unwrap();
        assert_eq!(e.base, "workloade");
        assert_eq!((e.maxscanlength, e.recordcount), (7, 1000));
        assert_eq!(e.proportions, [0.0, 0.0, 0.05, 0.95, 0.0]);
        let a = resolve(None, &BTreeMap::new()).unwrap();
        assert_eq!(
            (a.base, a.distribution),
            ("workloada", Distribution::Zipfian)
        );
        assert_eq!((a.fieldcount, a.fieldlength, a.ordered), (10, 100, false));
        // A sweep point gives the first variant; the plan's file wins over it.
        let c = resolve(Some("workloada"), &options(&[("workload", "workloadc")])).unwrap();
        assert_eq!((c.base, c.proportions[0]), ("workloadc", 1.0));
    }

    #[test]
    fn errors_name_the_property() {
        for (k, v) in [
            ("recordcount", "many"),
            ("requestdistribution", "gaussian"),
            ("readproportion", "2"),
            ("insertorder", "random"),
            ("readallfields", "yes"),
            ("exponential.percentile", "0"),
            ("exponential.percentile", "100"),
            ("exponential.percentile", "101"),
            ("exponential.percentile", "NaN"),
        ] {
            let e = resolve(None, &options(&[(k, v)])).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
        let p = resolve(None, &options(&[("exponential.percentile", "99.5")])).unwrap();
        assert_eq!(p.exponential_percentile, 99.5);
        let e = resolve(None, &options(&[("recordcuont", "5")])).unwrap_err();
        assert!(e.to_string().contains("recordcuont"), "{e}");
    }
}
