//! The SHA-512 compression function written once, for any vector type whose
//! 64-bit lanes each carry an independent message.
//!
//! `define_compress!` expands, inside a backend module, to a
//! `#[target_feature]` function `compress(state, w)` built from the lane-wise
//! helpers that module defines with the same target features: `add`, `splat`,
//! `bsig0` (Σ0), `bsig1` (Σ1), `ssig0` (σ0), `ssig1` (σ1), `ch` and `maj`.
//! (Function names in a `macro_rules!` body resolve at the expansion site.)

/// One round: `t1 = h + Σ1(e) + Ch(e,f,g) + K[t] + W[t]`,
/// `t2 = Σ0(a) + Maj(a,b,c)`, then `d += t1`, `h = t1 + t2`; the caller
/// rotates the variable names instead of moving values.
macro_rules! sha512_round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
     $k:ident, $w:ident, $j:literal) => {
        let t1 = add(
            add($h, add(splat($k[$j]), $w[$j])),
            add(bsig1($e), ch($e, $f, $g)),
        );
        let t2 = add(bsig0($a), maj($a, $b, $c));
        $d = add($d, t1);
        $h = add(t1, t2);
    };
}

/// Message schedule, in place in a 16-word ring:
/// `W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]`.
macro_rules! sha512_schedule {
    ($w:ident, $j:literal) => {
        $w[$j] = add(
            add($w[$j], ssig0($w[($j + 1) & 15])),
            add($w[($j + 9) & 15], ssig1($w[($j + 14) & 15])),
        );
    };
}

/// Defines `fn compress(state: &mut [$v; 8], w: &mut [$v; 16])`: one SHA-512
/// block compression per lane; `w` holds the block's sixteen big-endian words
/// (already byte-swapped) on entry and is used as the schedule ring.
macro_rules! define_compress {
    ($v:ty, $feat:literal) => {
        /// Compresses one 128-byte block in every lane (see `rounds.rs`).
        #[inline]
        #[target_feature(enable = $feat)]
        fn compress(state: &mut [$v; 8], w: &mut [$v; 16]) {
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
            for (chunk, k) in $crate::consts::K16.iter().enumerate() {
                if chunk > 0 {
                    sha512_schedule!(w, 0);
                    sha512_schedule!(w, 1);
                    sha512_schedule!(w, 2);
                    sha512_schedule!(w, 3);
                    sha512_schedule!(w, 4);
                    sha512_schedule!(w, 5);
                    sha512_schedule!(w, 6);
                    sha512_schedule!(w, 7);
                    sha512_schedule!(w, 8);
                    sha512_schedule!(w, 9);
                    sha512_schedule!(w, 10);
                    sha512_schedule!(w, 11);
                    sha512_schedule!(w, 12);
                    sha512_schedule!(w, 13);
                    sha512_schedule!(w, 14);
                    sha512_schedule!(w, 15);
                }
                sha512_round!(a, b, c, d, e, f, g, h, k, w, 0);
                sha512_round!(h, a, b, c, d, e, f, g, k, w, 1);
                sha512_round!(g, h, a, b, c, d, e, f, k, w, 2);
                sha512_round!(f, g, h, a, b, c, d, e, k, w, 3);
                sha512_round!(e, f, g, h, a, b, c, d, k, w, 4);
                sha512_round!(d, e, f, g, h, a, b, c, k, w, 5);
                sha512_round!(c, d, e, f, g, h, a, b, k, w, 6);
                sha512_round!(b, c, d, e, f, g, h, a, k, w, 7);
                sha512_round!(a, b, c, d, e, f, g, h, k, w, 8);
                sha512_round!(h, a, b, c, d, e, f, g, k, w, 9);
                sha512_round!(g, h, a, b, c, d, e, f, k, w, 10);
                sha512_round!(f, g, h, a, b, c, d, e, k, w, 11);
                sha512_round!(e, f, g, h, a, b, c, d, k, w, 12);
                sha512_round!(d, e, f, g, h, a, b, c, k, w, 13);
                sha512_round!(c, d, e, f, g, h, a, b, k, w, 14);
                sha512_round!(b, c, d, e, f, g, h, a, k, w, 15);
            }
            let out = [a, b, c, d, e, f, g, h];
            for (s, v) in state.iter_mut().zip(out) {
                *s = add(*s, v);
            }
        }
    };
}
