//! pgbench's pseudo-random machinery, written from its documented behaviour: the xoroshiro128**
//! generator seeded through splitmix64 (PostgreSQL's pg_prng), the bounded draws, the
//! exponential, gaussian and zipfian distributions, the FNV-1a and MurmurHash2 hashes of one
//! 64-bit integer, the seeded pseudorandom permutation, and how it seeds its clients from one seed.

/// xoroshiro128** 1.0 (Blackman and Vigna), the generator behind pgbench's random functions.
#[derive(Debug, Clone)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut v = *state;
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

impl Prng {
    pub fn seed(seed: u64) -> Prng {
        let mut state = seed;
        let (s0, s1) = (splitmix64(&mut state), splitmix64(&mut state));
        if s0 == 0 && s1 == 0 {
            // An all-zero state is a fixed point; any non-zero state will do.
            return Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        Prng { s0, s1 }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// Uniform in [lo, hi] by bitmask rejection; `lo` when the range is empty.
    pub fn range_u64(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let range = hi - lo;
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return lo + v;
            }
        }
    }

    /// Uniform in [0, 1) with 52 bits of precision.
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// Standard normal by the Box-Muller transform, on uniforms in (0, 1].
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// pgbench `random(lo, hi)`: uniform, both bounds included; hi - lo + 1 must fit in i64.
    pub fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        lo.wrapping_add(self.range_u64(0, hi.wrapping_sub(lo) as u64) as i64)
    }

    /// pgbench `random_exponential(lo, hi, parameter)`, parameter > 0.
    pub fn exponential(&mut self, lo: i64, hi: i64, parameter: f64) -> i64 {
        let cut = (-parameter).exp();
        let uniform = 1.0 - self.double();
        let r = -(cut + (1.0 - cut) * uniform).ln() / parameter;
        lo.wrapping_add(((hi - lo + 1) as f64 * r) as i64)
    }

    /// pgbench `random_gaussian(lo, hi, parameter)`, parameter >= 2: a normal draw cut to
    /// [-parameter, parameter) and mapped onto the range.
    pub fn gaussian(&mut self, lo: i64, hi: i64, parameter: f64) -> i64 {
        let stdev = loop {
            let z = self.normal();
            if z >= -parameter && z < parameter {
                break z;
            }
        };
        let r = (stdev + parameter) / (parameter * 2.0);
        lo.wrapping_add(((hi - lo + 1) as f64 * r) as i64)
    }

    /// pgbench `random_zipfian(lo, hi, s)`, 1.001 <= s <= 1000: the rejection method of
    /// Devroye, "Non-Uniform Random Variate Generation" (1986), p. 550-551.
    pub fn zipfian(&mut self, lo: i64, hi: i64, s: f64) -> i64 {
        let n = hi - lo + 1;
        if n <= 1 {
            return lo;
        }
        let b = 2f64.powf(s - 1.0);
        let x = loop {
            let u = self.double();
            let v = self.double();
            let x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                break x;
            }
        };
        lo + (x as i64 - 1)
    }
}

/// The generators pgbench derives from its `--random-seed`, in its order: a base sequence
/// seeded with it gives each client's generator for its random functions (clients 0 to n-1,
/// one draw each), then `:default_seed`, then thread 0's script choice. The same seed and
/// clients therefore give pgbench's draws, client by client.
#[derive(Debug, Clone, Copy)]
pub struct Seeds {
    pub seed: u64,
    pub clients: u32,
}

impl Seeds {
    /// The base sequence's draw number `n` (from 0).
    fn draw(self, n: u64) -> u64 {
        let mut base = Prng::seed(self.seed);
        for _ in 0..n {
            base.next_u64();
        }
        base.next_u64()
    }

    /// Client `id`'s generator; a client beyond the run's count (a phase that adds clients)
    /// draws after everything pgbench draws for one thread.
    pub fn client(self, id: u32) -> Prng {
        let clients = u64::from(self.clients);
        let n = match u64::from(id) {
            id if id < clients => id,
            id => clients + 4 + (id - clients),
        };
        Prng::seed(self.draw(n))
    }

    /// `:default_seed`, the seed of `hash` and `permute` when none is given.
    pub fn default_seed(self) -> i64 {
        self.draw(u64::from(self.clients)) as i64
    }

    /// Client `id`'s script choice. pgbench's clients share their thread's generator, in the
    /// order they happen to run; dbduel gives each client its own, client 0 thread 0's, so one
    /// client chooses as pgbench's one client does.
    pub fn choose(self, id: u32) -> Prng {
        let thread0 = self.draw(u64::from(self.clients) + 1);
        Prng::seed(thread0.wrapping_add(u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    }
}

/// FNV-1a over the eight bytes of `val` (least significant first), offset basis xor seed.
pub fn hash_fnv1a(val: i64, seed: i64) -> i64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    let mut h = OFFSET_BASIS ^ seed as u64;
    for byte in (val as u64).to_le_bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(PRIME);
    }
    h as i64
}

/// MurmurHash2, 64-bit variant (Austin Appleby), of one 8-byte key.
pub fn hash_murmur2(val: i64, seed: i64) -> i64 {
    const MUL: u64 = 0xc6a4_a793_5bd1_e995;
    const ROT: u32 = 47;
    let mut h = seed as u64 ^ MUL.wrapping_mul(8);
    let mut k = (val as u64).wrapping_mul(MUL);
    k ^= k >> ROT;
    k = k.wrapping_mul(MUL);
    h ^= k;
    h = h.wrapping_mul(MUL);
    h ^= h >> ROT;
    h = h.wrapping_mul(MUL);
    h ^= h >> ROT;
    h as i64
}

/// pgbench `permute(i, size, seed)`: a seeded bijection of [0, size). Six rounds, each an
/// odd multiplication, xor and one-bit rotation modulo the largest power of two not above
/// size on the lower and on the upper part of the range, then a random offset modulo size.
pub fn permute(val: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut rng = Prng::seed(seed as u64);
    let size = size as u64;
    let mut v = (val as u64) % size;
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (bits - 1))
    };
    for _ in 0..6 {
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }
        let r = rng.range_u64(0, size - 1);
        v = ((v as u128 + r as u128) % size as u128) as u64;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from pgbench's own test suite (t/001_pgbench_with_server.pl).
    // pgbench 15 with --random-seed 5432 -c 3 -t 2 on `\\set r random(1, 1000000)`, its
    // random_exponential(1, 1000, 2.5), random_gaussian(1, 1000, 3.0) and
    // random_zipfian(1, 1000, 1.5), client by client, and its :default_seed.
    #[test]
    fn the_same_seed_gives_pgbenchs_draws() {
        let seeds = Seeds {
            seed: 5432,
            clients: 3,
        };
        let expected = [
            [[856256, 213, 349, 4], [187762, 401, 241, 1]],
            [[506940, 199, 634, 20], [891620, 342, 411, 7]],
            [[318233, 34, 557, 1], [649767, 465, 584, 1]],
        ];
        for (id, want) in expected.iter().enumerate() {
            let mut r = seeds.client(id as u32);
            for row in want {
                let got = [
                    r.uniform(1, 1_000_000),
                    r.exponential(1, 1000, 2.5),
                    r.gaussian(1, 1000, 3.0),
                    r.zipfian(1, 1000, 1.5),
                ];
                assert_eq!(&got, row, "client {id}");
            }
        }
        assert_eq!(seeds.default_seed(), -1082569615652803502);
        let one = Seeds {
            seed: 5432,
            clients: 1,
        };
        assert_eq!(one.default_seed(), 7590783070443337668);
        assert_eq!(one.client(0).uniform(1, 1_000_000), 856256);
    }

    #[test]
    fn hashes_match_pgbench() {
        assert_eq!(hash_murmur2(10, 5432), -5817877081768721676);
        assert_eq!(hash_fnv1a(10, 5432), -7793829335365542153);
    }

    #[test]
    fn permute_matches_pgbench_across_architectures() {
        let size = i64::MAX - 10;
        let expected = [
            520382784483822430,
            1143715004660802862,
            447293596416496998,
            916527772266572956,
            2763809008686028849,
            8648551549198294572,
            4542876852200565125,
        ];
        for (k, want) in expected.into_iter().enumerate() {
            assert_eq!(
                permute(size - 1 - k as i64, size, 5432),
                want,
                "size-{}",
                k + 1
            );
        }
        assert!(permute(0, 2, 5431) == 0 && permute(1, 2, 5431) == 1);
        assert!(permute(0, 2, 5433) == 1 && permute(1, 2, 5433) == 0);
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in [1i64, 2, 3, 4, 5, 16, 17, 1000] {
            let mut seen: Vec<i64> = (0..size).map(|i| permute(i, size, 42)).collect();
            seen.sort();
            assert_eq!(seen, (0..size).collect::<Vec<_>>(), "size {size}");
            assert_eq!(permute(3 + size, size, 42), permute(3 % size, size, 42));
        }
    }

    #[test]
    fn distributions_stay_in_range() {
        let mut r = Prng::seed(7);
        for _ in 0..10_000 {
            assert!((10..=19).contains(&r.uniform(10, 19)));
            assert!((100..=199).contains(&r.exponential(100, 199, 10.0)));
            assert!((1000..=1999).contains(&r.gaussian(1000, 1999, 10.0)));
            assert!((1..=9).contains(&r.zipfian(1, 9, 1.3)));
        }
        // Zipfian with s = 1.3 favours the low end: 1 is the most frequent value.
        let ones = (0..10_000).filter(|_| r.zipfian(1, 9, 1.3) == 1).count();
        assert!(ones > 3000, "{ones}");
    }
}
