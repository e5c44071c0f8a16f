//! YCSB 0.17's number generators (package site.ycsb.generator) and its key hash
//! (site.ycsb.Utils.fnvhash64), written again in Rust with their quirks: FNV hash and key names,
//! zipfian, scrambled zipfian, skewed latest, hotspot, exponential, sequential (the key choosers of
//! CoreWorkload), and the acknowledged-insert counter the clients of a run share.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use rand::RngExt;
use rand::rngs::SmallRng;

/// Utils.fnvhash64: FNV-1 over the eight bytes of the value, least significant first, then
/// Math.abs (which leaves Long.MIN_VALUE as it is).
pub fn fnvhash64(mut val: i64) -> i64 {
    const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
    const FNV_PRIME_64: i64 = 1_099_511_628_211;
    let mut hash = FNV_OFFSET_BASIS_64 as i64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    hash.wrapping_abs()
}

/// CoreWorkload.buildKeyName: "user", zeros up to `zeropadding` digits, then the number
/// (hashed unless the inserts are ordered).
pub fn key_name(keynum: i64, zeropadding: usize, ordered: bool) -> String {
    let n = if ordered { keynum } else { fnvhash64(keynum) };
    let digits = n.to_string();
    let fill = zeropadding.saturating_sub(digits.len());
    format!("user{}{digits}", "0".repeat(fill))
}

/// Java's `Random.nextDouble`'s range: [0, 1).
fn unit(rng: &mut SmallRng) -> f64 {
    rng.random::<f64>()
}

/// ZipfianGenerator.zetastatic(st, n, theta, initialsum).
fn zeta(start: i64, n: i64, theta: f64, initial: f64) -> f64 {
    (start..n).fold(initial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// ZipfianGenerator (Gray et al., "Quickly Generating Billion-Record Synthetic Databases"):
/// popular items first, from `base` on. The item count may grow (zeta is then extended, and
/// eta recomputed with the original item count, as YCSB does); it never shrinks.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: i64,
}

/// ZipfianGenerator.ZIPFIAN_CONSTANT.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

impl Zipfian {
    /// ZipfianGenerator(min, max): zeta computed over max - min + 1 items.
    pub fn new(min: i64, max: i64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(
            min,
            max,
            ZIPFIAN_CONSTANT,
            zeta(0, items, ZIPFIAN_CONSTANT, 0.0),
        )
    }

    /// ZipfianGenerator(min, max, zipfianconstant, zetan).
    pub fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            count_for_zeta: items,
        }
    }

    /// nextValue: over the item count the generator was made with.
    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        self.next_long(self.items, rng)
    }

    /// nextLong(itemcount).
    pub fn next_long(&mut self, itemcount: i64, rng: &mut SmallRng) -> i64 {
        if itemcount > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, itemcount, self.theta, self.zetan);
            self.count_for_zeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = unit(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }
}

/// ScrambledZipfianGenerator: a zipfian draw over ten billion items (its zeta precomputed
/// for the constant 0.99), hashed and folded onto [min, max], so that the popular items are
/// spread over the key space rather than bunched at its start.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: i64,
    item_count: i64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// ScrambledZipfianGenerator.ZETAN and ITEM_COUNT.
    const ZETAN: f64 = 26.469_028_201_783_02;
    const ITEM_COUNT: i64 = 10_000_000_000;

    pub fn new(min: i64, max: i64) -> ScrambledZipfian {
        ScrambledZipfian {
            min,
            item_count: max - min + 1,
            zipf: Zipfian::with_zetan(0, Self::ITEM_COUNT, ZIPFIAN_CONSTANT, Self::ZETAN),
        }
    }

    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        self.min + fnvhash64(self.zipf.next(rng)) % self.item_count
    }
}

/// SkewedLatestGenerator: the newest acknowledged key most often, older ones less (a zipfian
/// distance back from the counter's last value).
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `last` is the counter's last value when the generator is made (ZipfianGenerator(items)
    /// is over 0 to items - 1).
    pub fn new(last: i64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(0, last - 1),
        }
    }

    pub fn next(&mut self, last: i64, rng: &mut SmallRng) -> i64 {
        last - self.zipfian.next_long(last, rng)
    }
}

/// HotspotIntegerGenerator: `hot_opn` of the draws fall uniformly in the first `hot_data` of
/// [lower, upper], the others uniformly in the rest.
#[derive(Debug, Clone)]
pub struct Hotspot {
    lower: i64,
    hot: i64,
    cold: i64,
    hot_opn: f64,
}

impl Hotspot {
    pub fn new(lower: i64, upper: i64, hot_data: f64, hot_opn: f64) -> Hotspot {
        let interval = upper - lower + 1;
        let hot = (interval as f64 * hot_data) as i64;
        Hotspot {
            lower,
            hot,
            cold: interval - hot,
            hot_opn,
        }
    }

    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        // Math.abs(random.nextLong()) % interval; an empty set sends every draw to the other
        // (YCSB divides by zero there).
        let hot = (unit(rng) < self.hot_opn && self.hot > 0) || self.cold == 0;
        let draw =
            |n: i64, rng: &mut SmallRng| rng.random::<i64>().wrapping_abs().rem_euclid(n.max(1));
        if hot {
            self.lower + draw(self.hot, rng)
        } else {
            self.lower + self.hot + draw(self.cold, rng)
        }
    }
}

/// ExponentialGenerator(percentile, range): `percentile` percent of the draws are below
/// `range`; CoreWorkload counts them back from the last inserted key.
#[derive(Debug, Clone)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    pub fn new(percentile: f64, range: f64) -> Exponential {
        Exponential {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        }
    }

    /// nextValue().intValue(): Java's double-to-int conversion saturates.
    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        let value = -unit(rng).ln() / self.gamma;
        value.min(i32::MAX as f64) as i64
    }
}

/// SequentialGenerator: start, start + 1, ..., end, and around again; one counter shared by
/// the clients, as YCSB's one generator is shared by its threads.
#[derive(Debug)]
pub struct Sequential {
    start: i64,
    interval: i64,
    counter: AtomicI64,
}

impl Sequential {
    pub fn new(start: i64, end: i64) -> Sequential {
        Sequential {
            start,
            interval: end - start + 1,
            counter: AtomicI64::new(0),
        }
    }

    pub fn next(&self) -> i64 {
        self.start + self.counter.fetch_add(1, Ordering::Relaxed) % self.interval
    }
}

/// AcknowledgedCounterGenerator: hands out insert key numbers; `last` is the highest number
/// below which every number handed out has been acknowledged (inserted, or failed), so that
/// readers never ask for a key whose insert is still under way. Shared by all clients.
pub struct AcknowledgedCounter {
    counter: AtomicI64,
    limit: AtomicI64,
    window: Vec<AtomicBool>,
    lock: Mutex<()>,
}

impl AcknowledgedCounter {
    /// AcknowledgedCounterGenerator.WINDOW_SIZE: 2^20 keys may be unacknowledged at once.
    const WINDOW: usize = 1 << 20;

    pub fn new(start: i64) -> AcknowledgedCounter {
        AcknowledgedCounter {
            counter: AtomicI64::new(start),
            limit: AtomicI64::new(start - 1),
            window: (0..Self::WINDOW).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
        }
    }

    /// CounterGenerator.nextValue: the next key number to insert.
    pub fn next(&self) -> i64 {
        self.counter.fetch_add(1, Ordering::SeqCst)
    }

    /// lastValue: every key number up to it has been acknowledged.
    pub fn last(&self) -> i64 {
        self.limit.load(Ordering::SeqCst)
    }

    /// acknowledge(value): mark it done and, when no other client is doing it, move the limit
    /// over the run of acknowledged numbers that follows it.
    pub fn acknowledge(&self, value: i64) -> Result<(), String> {
        let mask = Self::WINDOW as i64 - 1;
        if self.window[(value & mask) as usize].swap(true, Ordering::SeqCst) {
            return Err("too many unacknowledged insertion keys".into());
        }
        if let Ok(_held) = self.lock.try_lock() {
            let mut index = self.limit.load(Ordering::SeqCst) + 1;
            for _ in 0..Self::WINDOW {
                let slot = &self.window[(index & mask) as usize];
                if !slot.swap(false, Ordering::SeqCst) {
                    break;
                }
                index += 1;
            }
            self.limit.store(index - 1, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> SmallRng {
        SmallRng::seed_from_u64(7)
    }

    #[test]
    fn fnv_hash_matches_ycsb() {
        // Values printed by YCSB 0.17's Utils.fnvhash64 under a JVM.
        let known = [
            (0, 6284781860667377211),
            (1, 8517097267634966620),
            (2, 1820151046732198393),
            (999, 2071219101098386137),
            (1000, 5952875239596136740),
            (123456789, 2350796791908741607),
        ];
        for (value, hash) in known {
            assert_eq!(fnvhash64(value), hash, "fnvhash64({value})");
        }
        assert_eq!(key_name(0, 1, false), "user6284781860667377211");
        assert_eq!(key_name(42, 1, true), "user42");
        assert_eq!(key_name(42, 5, true), "user00042");
    }

    #[test]
    fn zipfian_favours_the_first_items() {
        let (mut z, mut r) = (Zipfian::new(0, 999), rng());
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            let v = z.next(&mut r);
            assert!((0..1000).contains(&v), "{v} out of range");
            counts[v as usize] += 1;
        }
        // With theta 0.99 over 1000 items, item 0 takes about 1/zeta(1000) = 13% of the draws,
        // item 1 half as many; the last half of the items about 10% together.
        let share = |c: u32| f64::from(c) / 100_000.0;
        assert!((0.11..0.16).contains(&share(counts[0])), "{}", counts[0]);
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[900]);
        let tail: u32 = counts[500..].iter().sum();
        assert!(share(tail) < 0.15, "tail {tail}");
    }

    #[test]
    fn scrambled_zipfian_spreads_the_popular_keys() {
        let (mut z, mut r) = (ScrambledZipfian::new(0, 9_999), rng());
        let mut counts = vec![0u32; 10_000];
        for _ in 0..200_000 {
            counts[z.next(&mut r) as usize] += 1;
        }
        // Skewed: the most popular key is drawn far more than the mean of 20...
        let top = counts.iter().copied().max().unwrap_or(0);
        assert!(top > 1000, "top {top}");
        // ...but not at the start of the key space: each tenth of it gets a fair share.
        for tenth in counts.chunks(1000) {
            let n: u32 = tenth.iter().sum();
            assert!(n > 5_000, "a tenth of the keys got {n} of 200000 draws");
        }
    }

    #[test]
    fn hotspot_sends_its_fraction_to_the_hot_set() {
        let (mut h, mut r) = (Hotspot::new(100, 1099, 0.2, 0.8), rng());
        let hot = (0..100_000)
            .map(|_| h.next(&mut r))
            .inspect(|v| assert!((100..1100).contains(v)))
            .filter(|v| *v < 300)
            .count();
        assert!((78_000..82_000).contains(&hot), "{hot} hot of 100000");
    }

    #[test]
    fn skewed_latest_reads_near_the_last_key() {
        let (mut l, mut r) = (SkewedLatest::new(999), rng());
        let draws: Vec<i64> = (0..10_000).map(|_| l.next(1999, &mut r)).collect();
        assert!(draws.iter().all(|v| (0..=1999).contains(v)));
        let recent = draws.iter().filter(|v| **v > 1989).count();
        assert!(
            recent > 2_500,
            "{recent} of 10000 within 10 of the last key"
        );
    }

    #[test]
    fn exponential_keeps_its_percentile_under_the_range() {
        let (mut e, mut r) = (Exponential::new(95.0, 1000.0), rng());
        let under = (0..100_000).filter(|_| e.next(&mut r) < 1000).count();
        assert!((94_000..96_000).contains(&under), "{under}");
    }

    #[test]
    fn sequential_wraps_around() {
        let s = Sequential::new(5, 7);
        let got: Vec<i64> = (0..5).map(|_| s.next()).collect();
        assert_eq!(got, [5, 6, 7, 5, 6]);
    }

    #[test]
    fn acknowledged_counter_waits_for_the_gap() {
        let c = AcknowledgedCounter::new(1000);
        assert_eq!(c.last(), 999);
        let (a, b) = (c.next(), c.next());
        c.acknowledge(b).unwrap();
        assert_eq!(c.last(), 999, "1001 acknowledged, 1000 not yet");
        c.acknowledge(a).unwrap();
        assert_eq!(c.last(), 1001);
    }
}
