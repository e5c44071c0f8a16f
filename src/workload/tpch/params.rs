//! The substitution parameters of the 22 queries as qgen draws them (TPC-H 3.0.1 clause 2.4,
//! each query's "Substitution Parameters"): the validation values of each query's "Query
//! Validation" clause for `check`, seeded random ones for a run's streams. Dates are computed
//! here, date arithmetic included, and rendered through the dialect's `date` section.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::workload::calendar::{civil_from_days, days_from_civil};

/// A parameter's value: text put into the query as it is, or a date rendered by the dialect.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Text(String),
    Date(Date),
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Param::Text(t) => f.write_str(t),
            Param::Date(d) => write!(f, "{d}"),
        }
    }
}

/// A calendar date (proleptic Gregorian), with the arithmetic the queries need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl Date {
    pub const fn new(year: i32, month: u32, day: u32) -> Date {
        Date { year, month, day }
    }

    /// Days since 1970-01-01.
    fn days(self) -> i64 {
        days_from_civil(self.year.into(), self.month.into(), self.day.into())
    }

    fn from_days(z: i64) -> Date {
        let (year, month, day) = civil_from_days(z);
        Date::new(year as i32, month as u32, day as u32)
    }

    pub fn plus_days(self, n: i64) -> Date {
        Date::from_days(self.days() + n)
    }

    /// The same day `n` months later (every date the queries move is a month's first day).
    pub fn plus_months(self, n: u32) -> Date {
        let months = self.month - 1 + n;
        Date::new(self.year + (months / 12) as i32, months % 12 + 1, self.day)
    }
}

pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// Clause 4.2.3's nations with their regions (indexes into REGIONS).
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const TYPE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const WORD_1: [&str; 4] = ["special", "pending", "unusual", "express"];
const WORD_2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];

/// The 92 words of P_NAME (clause 4.2.3), which Q9 and Q20 draw their colour from.
const COLORS: [&str; 92] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];

/// A query's parameters by name, as its SQL names them.
pub type Params = Vec<(&'static str, Param)>;

fn text(v: impl ToString) -> Param {
    Param::Text(v.to_string())
}

/// Where parameters come from: the validation values, or a stream's generator.
pub enum Source<'a> {
    Validation,
    Random(&'a mut SmallRng),
}

impl Source<'_> {
    /// The validation value, or a draw.
    fn pick<T>(&mut self, validation: T, draw: impl FnOnce(&mut SmallRng) -> T) -> T {
        match self {
            Source::Validation => validation,
            Source::Random(rng) => draw(rng),
        }
    }
}

/// The generator of one stream's parameters (qgen's seed per stream, clause 2.1.3.3).
pub fn stream_rng(seed: u64, stream: u32) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (u64::from(stream) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn one<'a>(rng: &mut SmallRng, list: &[&'a str]) -> &'a str {
    list[rng.random_range(0..list.len())]
}

/// A month's first day, `first` plus a random number of months in 0..=`span`.
fn month(rng: &mut SmallRng, first: Date, span: u32) -> Date {
    first.plus_months(rng.random_range(0..=span))
}

/// January 1st of a year from 1993 to 1997.
fn year(rng: &mut SmallRng) -> Date {
    Date::new(rng.random_range(1993..=1997), 1, 1)
}

/// `count` distinct values of `draw`.
fn distinct<T: PartialEq>(
    rng: &mut SmallRng,
    count: usize,
    draw: impl Fn(&mut SmallRng) -> T,
) -> Vec<T> {
    let mut out = Vec::new();
    while out.len() < count {
        let v = draw(rng);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn brand(rng: &mut SmallRng) -> String {
    format!(
        "Brand#{}{}",
        rng.random_range(1..=5),
        rng.random_range(1..=5)
    )
}

/// The parameters of query `q` (1..=22) at scale factor `sf`.
pub fn params(q: u8, sf: f64, mut src: Source) -> Params {
    match q {
        1..=6 => params_1_to_6(q, &mut src),
        7..=12 => params_7_to_12(q, sf, &mut src),
        13..=17 => params_13_to_17(q, &mut src),
        _ => params_18_to_22(q, &mut src),
    }
}

fn params_1_to_6(q: u8, src: &mut Source) -> Params {
    match q {
        // Clause 2.4.1.3: DELTA in [60, 120] days before 1998-12-01.
        1 => {
            let delta = src.pick(90, |r| r.random_range(60..=120));
            vec![(
                "SHIPDATE",
                Param::Date(Date::new(1998, 12, 1).plus_days(-delta)),
            )]
        }
        // Clause 2.4.2.3.
        2 => {
            let size = src.pick(15, |r| r.random_range(1..=50));
            let typ = src.pick("BRASS", |r| one(r, &TYPE_3));
            let region = src.pick("EUROPE", |r| one(r, &REGIONS));
            vec![
                ("SIZE", text(size)),
                ("TYPE", text(typ)),
                ("REGION", text(region)),
            ]
        }
        // Clause 2.4.3.3: a day of March 1995.
        3 => {
            let segment = src.pick("BUILDING", |r| one(r, &SEGMENTS));
            let date = src.pick(Date::new(1995, 3, 15), |r| {
                Date::new(1995, 3, r.random_range(1..=31))
            });
            vec![("SEGMENT", text(segment)), ("DATE", Param::Date(date))]
        }
        // Clause 2.4.4.3: a month's first day from January 1993 to October 1997.
        4 => {
            let date = src.pick(Date::new(1993, 7, 1), |r| {
                month(r, Date::new(1993, 1, 1), 57)
            });
            vec![
                ("DATE", Param::Date(date)),
                ("DATE_3MONTHS", Param::Date(date.plus_months(3))),
            ]
        }
        // Clause 2.4.5.3.
        5 => {
            let region = src.pick("ASIA", |r| one(r, &REGIONS));
            let date = src.pick(Date::new(1994, 1, 1), year);
            vec![
                ("REGION", text(region)),
                ("DATE", Param::Date(date)),
                ("DATE_1YEAR", Param::Date(date.plus_months(12))),
            ]
        }
        // Clause 2.4.6.3.
        _ => {
            let date = src.pick(Date::new(1994, 1, 1), year);
            let discount = src.pick(6, |r| r.random_range(2..=9));
            let quantity = src.pick(24, |r| r.random_range(24..=25));
            vec![
                ("DATE", Param::Date(date)),
                ("DATE_1YEAR", Param::Date(date.plus_months(12))),
                ("DISCOUNT_LO", text(format!("0.{:02}", discount - 1))),
                ("DISCOUNT_HI", text(format!("0.{:02}", discount + 1))),
                ("QUANTITY", text(quantity)),
            ]
        }
    }
}

/// Q7's and Q8's fixed period, 1995 and 1996.
fn two_years() -> [(&'static str, Param); 2] {
    [
        ("FROM", Param::Date(Date::new(1995, 1, 1))),
        ("TO", Param::Date(Date::new(1996, 12, 31))),
    ]
}

fn params_7_to_12(q: u8, sf: f64, src: &mut Source) -> Params {
    match q {
        // Clause 2.4.7.3: two different nations.
        7 => {
            let pair = src.pick(vec!["FRANCE", "GERMANY"], |r| {
                distinct(r, 2, |r| NATIONS[r.random_range(0..25)].0)
            });
            let mut out = vec![("NATION1", text(pair[0])), ("NATION2", text(pair[1]))];
            out.extend(two_years());
            out
        }
        // Clause 2.4.8.3: a nation, its region, and a full type.
        8 => {
            let nation = src.pick(2, |r| r.random_range(0..25));
            let typ = src.pick("ECONOMY ANODIZED STEEL".to_string(), |r| {
                format!(
                    "{} {} {}",
                    one(r, &TYPE_1),
                    one(r, &TYPE_2),
                    one(r, &TYPE_3)
                )
            });
            let (name, region) = NATIONS[nation];
            let mut out = vec![
                ("NATION", text(name)),
                ("REGION", text(REGIONS[region])),
                ("TYPE", text(typ)),
            ];
            out.extend(two_years());
            out
        }
        // Clause 2.4.9.3.
        9 => vec![("COLOR", text(src.pick("green", |r| one(r, &COLORS))))],
        // Clause 2.4.10.3: a month's first day from February 1993 to January 1995.
        10 => {
            let date = src.pick(Date::new(1993, 10, 1), |r| {
                month(r, Date::new(1993, 2, 1), 23)
            });
            vec![
                ("DATE", Param::Date(date)),
                ("DATE_3MONTHS", Param::Date(date.plus_months(3))),
            ]
        }
        // Clause 2.4.11.3: FRACTION is 0.0001 / SF; its validation value is 0.0001 at any SF
        // (the reference answers take it so).
        11 => {
            let nation = src.pick("GERMANY", |r| NATIONS[r.random_range(0..25)].0);
            let fraction = src.pick(0.0001, |_| 0.0001 / sf);
            vec![
                ("NATION", text(nation)),
                ("FRACTION", text(fraction_literal(fraction))),
            ]
        }
        // Clause 2.4.12.3.
        _ => {
            let modes = src.pick(vec!["MAIL", "SHIP"], |r| {
                distinct(r, 2, |r| one(r, &SHIP_MODES))
            });
            let date = src.pick(Date::new(1994, 1, 1), year);
            vec![
                ("SHIPMODE1", text(modes[0])),
                ("SHIPMODE2", text(modes[1])),
                ("DATE", Param::Date(date)),
                ("DATE_1YEAR", Param::Date(date.plus_months(12))),
            ]
        }
    }
}

/// Q11's FRACTION as a literal: an exact decimal of at most six places, a float past them
/// (Firebird's decimal arithmetic overflows on a product with more places).
fn fraction_literal(fraction: f64) -> String {
    let exact = format!("{fraction:.10}");
    let exact = exact.trim_end_matches('0');
    match exact.split_once('.') {
        Some((_, places)) if places.len() > 6 => format!("{fraction:e}"),
        _ => exact.to_string(),
    }
}

fn params_13_to_17(q: u8, src: &mut Source) -> Params {
    match q {
        // Clause 2.4.13.3.
        13 => {
            let w1 = src.pick("special", |r| one(r, &WORD_1));
            let w2 = src.pick("requests", |r| one(r, &WORD_2));
            vec![("WORD1", text(w1)), ("WORD2", text(w2))]
        }
        // Clause 2.4.14.3: a month's first day from 1993 to 1997.
        14 => {
            let date = src.pick(Date::new(1995, 9, 1), |r| {
                month(r, Date::new(1993, 1, 1), 59)
            });
            vec![
                ("DATE", Param::Date(date)),
                ("DATE_1MONTH", Param::Date(date.plus_months(1))),
            ]
        }
        // Clause 2.4.15.3: a month's first day from January 1993 to October 1997.
        15 => {
            let date = src.pick(Date::new(1996, 1, 1), |r| {
                month(r, Date::new(1993, 1, 1), 57)
            });
            vec![
                ("DATE", Param::Date(date)),
                ("DATE_3MONTHS", Param::Date(date.plus_months(3))),
            ]
        }
        // Clause 2.4.16.3: eight different sizes.
        16 => {
            let brand = src.pick("Brand#45".to_string(), brand);
            let typ = src.pick("MEDIUM POLISHED".to_string(), |r| {
                format!("{} {}", one(r, &TYPE_1), one(r, &TYPE_2))
            });
            let sizes = src.pick(vec![49, 14, 23, 45, 19, 3, 36, 9], |r| {
                distinct(r, 8, |r| r.random_range(1..=50))
            });
            let sizes: Vec<String> = sizes.iter().map(i32::to_string).collect();
            vec![
                ("BRAND", text(brand)),
                ("TYPE", text(typ)),
                ("SIZES", text(sizes.join(", "))),
            ]
        }
        // Clause 2.4.17.3.
        _ => {
            let brand = src.pick("Brand#23".to_string(), brand);
            let container = src.pick("MED BOX".to_string(), |r| {
                format!("{} {}", one(r, &CONTAINER_1), one(r, &CONTAINER_2))
            });
            vec![("BRAND", text(brand)), ("CONTAINER", text(container))]
        }
    }
}

fn params_18_to_22(q: u8, src: &mut Source) -> Params {
    match q {
        // Clause 2.4.18.3.
        18 => vec![(
            "QUANTITY",
            text(src.pick(300, |r| r.random_range(312..=315))),
        )],
        // Clause 2.4.19.3.
        19 => {
            let q = src.pick([1, 10, 20], |r| {
                [
                    r.random_range(1..=10),
                    r.random_range(10..=20),
                    r.random_range(20..=30),
                ]
            });
            let b = src.pick(
                [
                    "Brand#12".to_string(),
                    "Brand#23".to_string(),
                    "Brand#34".to_string(),
                ],
                |r| [brand(r), brand(r), brand(r)],
            );
            vec![
                ("QUANTITY1", text(q[0])),
                ("QUANTITY2", text(q[1])),
                ("QUANTITY3", text(q[2])),
                ("BRAND1", text(&b[0])),
                ("BRAND2", text(&b[1])),
                ("BRAND3", text(&b[2])),
            ]
        }
        // Clause 2.4.20.3.
        20 => {
            let color = src.pick("forest", |r| one(r, &COLORS));
            let date = src.pick(Date::new(1994, 1, 1), year);
            let nation = src.pick("CANADA", |r| NATIONS[r.random_range(0..25)].0);
            vec![
                ("COLOR", text(color)),
                ("DATE", Param::Date(date)),
                ("DATE_1YEAR", Param::Date(date.plus_months(12))),
                ("NATION", text(nation)),
            ]
        }
        // Clause 2.4.21.3.
        21 => vec![(
            "NATION",
            text(src.pick("SAUDI ARABIA", |r| NATIONS[r.random_range(0..25)].0)),
        )],
        // Clause 2.4.22.3: seven different country codes (a nation's key plus 10).
        _ => {
            let codes = src.pick(vec![13, 31, 23, 29, 30, 18, 17], |r| {
                distinct(r, 7, |r| r.random_range(10..=34))
            });
            let codes: Vec<String> = codes.iter().map(|c| format!("'{c}'")).collect();
            vec![("CODES", text(codes.join(", ")))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_move_by_days_and_months() {
        assert_eq!(
            Date::new(1998, 12, 1).plus_days(-90).to_string(),
            "1998-09-02"
        );
        assert_eq!(
            Date::new(1997, 10, 1).plus_months(3).to_string(),
            "1998-01-01"
        );
        assert_eq!(
            Date::new(1996, 3, 1).plus_days(-1).to_string(),
            "1996-02-29"
        );
    }

    #[test]
    fn fractions_are_short_decimals_or_floats() {
        assert_eq!(fraction_literal(0.0001 / 0.01), "0.01");
        assert_eq!(fraction_literal(0.0001), "0.0001");
        assert_eq!(fraction_literal(0.0001 / 3.0), "3.3333333333333335e-5");
    }

    #[test]
    fn random_draws_stay_in_their_ranges() {
        let mut rng = stream_rng(7, 1);
        for _ in 0..200 {
            let p = params(22, 1.0, Source::Random(&mut rng));
            let Param::Text(codes) = &p[0].1 else {
                panic!("codes")
            };
            assert_eq!(codes.split(", ").count(), 7);
            let p = params(4, 1.0, Source::Random(&mut rng));
            let Param::Date(d) = p[0].1 else {
                panic!("a date")
            };
            assert!(
                d >= Date::new(1993, 1, 1) && d <= Date::new(1997, 10, 1),
                "{d}"
            );
        }
    }
}
