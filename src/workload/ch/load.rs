//! CH-benCHmark's three added tables (section 3 of the paper): REGION (5 rows), NATION (62: one per
//! character a c_state may begin with, 0-9, A-Z, a-z, keyed by its character code, as the
//! queries join a customer to its nation) and SUPPLIER (10,000, keyed 1 to 10,000, each in a
//! random nation), loaded through the engine's bulk path from `Tpcc::seeded`'s seed or the clock.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{Session, Value};
use crate::error::Error;
use crate::workload::Loader;
use crate::workload::rows::generated;
use crate::workload::tpcc::rand::{astring, decimal, nstring};

/// The regions, keyed 1 to 5 (the paper's table).
pub const REGIONS: [&str; 5] = ["Africa", "America", "Asia", "Australia", "Europe"];

/// The paper's 62 nations: (key, name, region key). The key is the character code of the
/// first letter of the customers' c_state that the queries take for their nation.
pub const NATIONS: [(i64, &str, i64); 62] = [
    (48, "Australia", 4),
    (49, "Belgium", 5),
    (50, "Cameroon", 1),
    (51, "Denmark", 5),
    (52, "Ecuador", 2),
    (53, "France", 5),
    (54, "Germany", 5),
    (55, "Hungary", 5),
    (56, "Italy", 5),
    (57, "Japan", 3),
    (65, "Kenya", 1),
    (66, "Lithuania", 5),
    (67, "Mexico", 2),
    (68, "Netherlands", 5),
    (69, "Oman", 1),
    (70, "Portugal", 5),
    (71, "Qatar", 1),
    (72, "Rwanda", 1),
    (73, "Serbia", 5),
    (74, "Togo", 1),
    (75, "United States", 2),
    (76, "Vietnam", 3),
    (77, "Singapore", 3),
    (78, "Cambodia", 3),
    (79, "Yemen", 1),
    (80, "Zimbabwe", 1),
    (81, "Argentina", 2),
    (82, "Bolivia", 2),
    (83, "Canada", 2),
    (84, "Dominican Republic", 2),
    (85, "Egypt", 1),
    (86, "Finnland", 5),
    (87, "Ghana", 1),
    (88, "Haiti", 2),
    (89, "India", 3),
    (90, "Jamaica", 4),
    (97, "Kazakhstan", 3),
    (98, "Luxembourg", 5),
    (99, "Morocco", 1),
    (100, "Norway", 5),
    (101, "Poland", 5),
    (102, "Peru", 2),
    (103, "Nicaragua", 2),
    (104, "Romania", 5),
    (105, "South Africa", 1),
    (106, "Thailand", 3),
    (107, "United Kingdom", 5),
    (108, "Venezuela", 2),
    (109, "Liechtenstein", 5),
    (110, "Austria", 5),
    (111, "Laos", 3),
    (112, "Zambia", 1),
    (113, "Switzerland", 5),
    (114, "China", 3),
    (115, "Papua New Guinea", 4),
    (116, "East Timor", 4),
    (117, "Bulgaria", 5),
    (118, "Brazil", 2),
    (119, "Albania", 5),
    (120, "Andorra", 5),
    (121, "Belize", 2),
    (122, "Botswana", 1),
];

/// SUPPLIER's rows: keys 1 to 10,000, as BenchBase and go-tpc load them (a stock row whose
/// mod(s_w_id * s_i_id, 10000) is 0 then has no supplier, in every kit).
pub const SUPPLIERS: i64 = 10_000;

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// Load REGION, NATION and SUPPLIER (created empty beforehand) from `seed`.
pub fn load(s: &mut dyn Session, loader: &Loader, seed: u64) -> Result<(), Error> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xC4_BE4C);
    let mut regions = generated(REGIONS.len() as i64, |i, r| {
        r.extend([
            Value::Int(i + 1),
            text(REGIONS[i as usize]),
            text(astring(&mut rng, 31, 115)),
        ])
    });
    loader.load(
        s,
        "region",
        &["r_regionkey", "r_name", "r_comment"],
        &mut regions,
    )?;
    let mut nations = generated(NATIONS.len() as i64, |i, r| {
        let (key, name, region) = NATIONS[i as usize];
        r.extend([
            Value::Int(key),
            text(name),
            Value::Int(region),
            text(astring(&mut rng, 31, 114)),
        ])
    });
    loader.load(
        s,
        "nation",
        &["n_nationkey", "n_name", "n_regionkey", "n_comment"],
        &mut nations,
    )?;
    let mut suppliers = generated(SUPPLIERS, |i, r| {
        let nation = NATIONS[rng.random_range(0..NATIONS.len())].0;
        r.extend([
            Value::Int(i + 1),
            Value::Int(nation),
            Value::Float(decimal(&mut rng, -999.99, 9999.99, 2)),
            text(format!("Supplier#{:09}", i + 1)),
            text(astring(&mut rng, 10, 40)),
            text(nstring(&mut rng, 15, 15)),
            text(astring(&mut rng, 25, 100)),
        ])
    });
    let columns = [
        "su_suppkey",
        "su_nationkey",
        "su_acctbal",
        "su_name",
        "su_address",
        "su_phone",
        "su_comment",
    ];
    loader.load(s, "supplier", &columns, &mut suppliers)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nation_is_a_character_a_state_may_begin_with_in_a_region() {
        let mut keys: Vec<i64> = NATIONS.iter().map(|n| n.0).collect();
        keys.sort_unstable();
        let characters: Vec<i64> = (b'0'..=b'9')
            .chain(b'A'..=b'Z')
            .chain(b'a'..=b'z')
            .map(i64::from)
            .collect();
        assert_eq!(keys, characters);
        assert!(NATIONS.iter().all(|n| (1..=5).contains(&n.2)));
        let names: std::collections::BTreeSet<&str> = NATIONS.iter().map(|n| n.1).collect();
        assert_eq!(names.len(), 62);
        // The nations the queries name are there, in the regions they take them from.
        let region = |name: &str| NATIONS.iter().find(|n| n.1 == name).map(|n| n.2);
        assert_eq!(region("Germany"), Some(5));
        assert_eq!(region("Cambodia"), Some(3));
    }
}
