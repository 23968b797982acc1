//! The BLAKE3 compression function written once, for any vector type whose
//! 32-bit lanes each carry an independent message.
//!
//! `define_compress!` expands, inside a backend module, to a
//! `#[target_feature]` function `compress(cv, m, block_len, flags)` built
//! from the lane-wise helpers that module defines with the same target
//! features: `add`, `xor`, `splat`, `zero` and the four rotations `rot16`,
//! `rot12`, `rot8`, `rot7` (right rotations). Function names in a
//! `macro_rules!` body resolve at the expansion site.

/// `G` on state words `a, b, c, d` with message words `mx, my`.
macro_rules! blake3_g {
    ($v:ident, $a:literal, $b:literal, $c:literal, $d:literal, $mx:expr, $my:expr) => {
        $v[$a] = add(add($v[$a], $v[$b]), $mx);
        $v[$d] = rot16(xor($v[$d], $v[$a]));
        $v[$c] = add($v[$c], $v[$d]);
        $v[$b] = rot12(xor($v[$b], $v[$c]));
        $v[$a] = add(add($v[$a], $v[$b]), $my);
        $v[$d] = rot8(xor($v[$d], $v[$a]));
        $v[$c] = add($v[$c], $v[$d]);
        $v[$b] = rot7(xor($v[$b], $v[$c]));
    };
}

/// Round `r`: `G` on the four columns, then on the four diagonals, with the
/// message words of round `r` (see `SCHEDULE`; constant indices).
macro_rules! blake3_round {
    ($v:ident, $m:ident, $r:literal) => {
        blake3_g!($v, 0, 4, 8, 12, $m[SCHEDULE[$r][0]], $m[SCHEDULE[$r][1]]);
        blake3_g!($v, 1, 5, 9, 13, $m[SCHEDULE[$r][2]], $m[SCHEDULE[$r][3]]);
        blake3_g!($v, 2, 6, 10, 14, $m[SCHEDULE[$r][4]], $m[SCHEDULE[$r][5]]);
        blake3_g!($v, 3, 7, 11, 15, $m[SCHEDULE[$r][6]], $m[SCHEDULE[$r][7]]);
        blake3_g!($v, 0, 5, 10, 15, $m[SCHEDULE[$r][8]], $m[SCHEDULE[$r][9]]);
        blake3_g!($v, 1, 6, 11, 12, $m[SCHEDULE[$r][10]], $m[SCHEDULE[$r][11]]);
        blake3_g!($v, 2, 7, 8, 13, $m[SCHEDULE[$r][12]], $m[SCHEDULE[$r][13]]);
        blake3_g!($v, 3, 4, 9, 14, $m[SCHEDULE[$r][14]], $m[SCHEDULE[$r][15]]);
    };
}

/// Defines `fn compress(cv: &mut [$v; 8], m: &[$v; 16], block_len: $v,
/// flags: $v)`: one BLAKE3 compression per lane of a block of chunk 0
/// (counter 0), `m` holding the block's sixteen little-endian words; `cv`
/// becomes the new chaining value (`v[i] ^ v[i + 8]`).
macro_rules! define_compress {
    ($v:ty, $features:literal) => {
        #[inline]
        #[target_feature(enable = $features)]
        fn compress(cv: &mut [$v; 8], m: &[$v; 16], block_len: $v, flags: $v) {
            use $crate::consts::{IV, SCHEDULE};
            let mut v = [
                cv[0],
                cv[1],
                cv[2],
                cv[3],
                cv[4],
                cv[5],
                cv[6],
                cv[7],
                splat(IV[0]),
                splat(IV[1]),
                splat(IV[2]),
                splat(IV[3]),
                zero(),
                zero(),
                block_len,
                flags,
            ];
            blake3_round!(v, m, 0);
            blake3_round!(v, m, 1);
            blake3_round!(v, m, 2);
            blake3_round!(v, m, 3);
            blake3_round!(v, m, 4);
            blake3_round!(v, m, 5);
            blake3_round!(v, m, 6);
            for i in 0..8 {
                cv[i] = xor(v[i], v[i + 8]);
            }
        }
    };
}
