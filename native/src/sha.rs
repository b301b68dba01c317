//! SHA-256 of independent messages two at a time.
//!
//! With the CPU's SHA extensions one message is a chain of dependent rounds; interleaving the
//! rounds of two messages keeps the SHA unit busy while either waits, for about a fifth more
//! throughput on the machines this runs on. A body's payloads and a batch's envelopes are such
//! independent messages. Without the extensions every message goes through the sha2 crate's
//! compression function on its own. Either way the digests are plain SHA-256 (FIPS 180-4); the
//! tests compare them with the sha2 crate.

use sha2::digest::generic_array::GenericArray;

pub type State = [u32; 8];

pub const IV: State = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const BLOCK: usize = 64;

/// A message from some state on: the whole blocks of its data, then one or two padded blocks.
struct Padded<'a> {
    blocks: &'a [[u8; BLOCK]],
    tail: [[u8; BLOCK]; 2],
    tail_len: usize,
}

impl<'a> Padded<'a> {
    /// `done` bytes of the message are already in the state (a whole number of blocks).
    fn new(done: u64, data: &'a [u8]) -> Padded<'a> {
        let (blocks, rest) = data.as_chunks::<BLOCK>();
        let mut tail = [[0u8; BLOCK]; 2];
        tail[0][..rest.len()].copy_from_slice(rest);
        tail[0][rest.len()] = 0x80;
        let tail_len = if rest.len() < BLOCK - 8 { 1 } else { 2 };
        let bits = (done + data.len() as u64) * 8;
        tail[tail_len - 1][BLOCK - 8..].copy_from_slice(&bits.to_be_bytes());
        Padded { blocks, tail, tail_len }
    }

    fn len(&self) -> usize {
        self.blocks.len() + self.tail_len
    }

    fn block(&self, i: usize) -> &[u8; BLOCK] {
        self.blocks.get(i).unwrap_or_else(|| &self.tail[i - self.blocks.len()])
    }
}

fn compress_one(state: &mut State, block: &[u8; BLOCK]) {
    sha2::compress256(state, std::slice::from_ref(GenericArray::from_slice(block)));
}

fn digest_of(state: &State) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

/// The state after the whole blocks of `data` (from `state`); the bytes left over are returned.
pub fn absorb<'a>(state: &mut State, data: &'a [u8]) -> &'a [u8] {
    let (blocks, rest) = data.as_chunks::<BLOCK>();
    for b in blocks {
        compress_one(state, b);
    }
    rest
}

/// SHA-256 of a message whose first `done` bytes (whole blocks) left `state`, and whose remaining
/// bytes are `data`.
pub fn finish(mut state: State, done: u64, data: &[u8]) -> [u8; 32] {
    let m = Padded::new(done, data);
    for i in 0..m.len() {
        compress_one(&mut state, m.block(i));
    }
    digest_of(&state)
}

/// `finish` of two messages at once.
pub fn finish_pair(a: (State, u64, &[u8]), b: (State, u64, &[u8])) -> ([u8; 32], [u8; 32]) {
    #[cfg(target_arch = "x86_64")]
    let interleave = shani::available();
    #[cfg(not(target_arch = "x86_64"))]
    let interleave = false;
    finish_pair_with(a, b, interleave)
}

fn finish_pair_with(a: (State, u64, &[u8]), b: (State, u64, &[u8]), interleave: bool) -> ([u8; 32], [u8; 32]) {
    let (mut sa, mut sb) = (a.0, b.0);
    let (ma, mb) = (Padded::new(a.1, a.2), Padded::new(b.1, b.2));
    let both = ma.len().min(mb.len());
    let mut i = 0;
    #[cfg(not(target_arch = "x86_64"))]
    let _ = interleave;
    #[cfg(target_arch = "x86_64")]
    if interleave {
        // Whole blocks straight from both messages, then the rest pair by pair.
        let run = ma.blocks.len().min(mb.blocks.len());
        // Safety: the CPU has the features shani::compress_pair is compiled for.
        unsafe { shani::compress_pair(&mut sa, &mut sb, &ma.blocks[..run], &mb.blocks[..run]) };
        i = run;
        while i < both {
            // Safety: as above.
            unsafe { shani::compress_pair(&mut sa, &mut sb, std::slice::from_ref(ma.block(i)), std::slice::from_ref(mb.block(i))) };
            i += 1;
        }
    }
    for k in i..ma.len() {
        compress_one(&mut sa, ma.block(k));
    }
    for k in i..mb.len() {
        compress_one(&mut sb, mb.block(k));
    }
    (digest_of(&sa), digest_of(&sb))
}

#[cfg(target_arch = "x86_64")]
mod shani {
    use std::arch::x86_64::*;

    use super::{State, BLOCK};

    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1") && std::arch::is_x86_feature_detected!("ssse3")
    }

    /// Round constants four at a time, in the lane order _mm_sha256rnds2_epu32 takes.
    static K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
        0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
        0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];

    #[inline(always)]
    unsafe fn schedule(w0: __m128i, w1: __m128i, w2: __m128i, w3: __m128i) -> __m128i {
        let t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8(w3, w2, 4));
        _mm_sha256msg2_epu32(t, w3)
    }

    /// The state as the two registers the SHA instructions work on (ABEF, CDGH).
    #[inline(always)]
    unsafe fn load(state: &State) -> (__m128i, __m128i) {
        let dcba = _mm_loadu_si128(state.as_ptr() as *const __m128i);
        let hgfe = _mm_loadu_si128(state.as_ptr().add(4) as *const __m128i);
        let cdab = _mm_shuffle_epi32(dcba, 0xB1);
        let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
        (_mm_alignr_epi8(cdab, efgh, 8), _mm_blend_epi16(efgh, cdab, 0xF0))
    }

    #[inline(always)]
    unsafe fn store(state: &mut State, abef: __m128i, cdgh: __m128i) {
        let feba = _mm_shuffle_epi32(abef, 0x1B);
        let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
        _mm_storeu_si128(state.as_mut_ptr() as *mut __m128i, _mm_blend_epi16(feba, dchg, 0xF0));
        _mm_storeu_si128(state.as_mut_ptr().add(4) as *mut __m128i, _mm_alignr_epi8(dchg, feba, 8));
    }

    #[inline(always)]
    unsafe fn words(block: &[u8; BLOCK]) -> [__m128i; 4] {
        let mask = _mm_set_epi64x(0x0C0D_0E0F_0809_0A0Bu64 as i64, 0x0405_0607_0001_0203u64 as i64);
        let p = block.as_ptr() as *const __m128i;
        [
            _mm_shuffle_epi8(_mm_loadu_si128(p), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(1)), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(2)), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(3)), mask),
        ]
    }

    /// Compresses `a` into `sa` and `b` into `sb` (as many blocks each), round by round together.
    ///
    /// # Safety
    /// The CPU must have SHA, SSSE3 and SSE4.1 (`available`).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress_pair(sa: &mut State, sb: &mut State, a: &[[u8; BLOCK]], b: &[[u8; BLOCK]]) {
        let (mut abef_a, mut cdgh_a) = load(sa);
        let (mut abef_b, mut cdgh_b) = load(sb);
        for (x, y) in a.iter().zip(b) {
            let (save_abef_a, save_cdgh_a, save_abef_b, save_cdgh_b) = (abef_a, cdgh_a, abef_b, cdgh_b);
            let mut wa = words(x);
            let mut wb = words(y);
            for i in 0..16 {
                if i >= 4 {
                    wa[i % 4] = schedule(wa[i % 4], wa[(i + 1) % 4], wa[(i + 2) % 4], wa[(i + 3) % 4]);
                    wb[i % 4] = schedule(wb[i % 4], wb[(i + 1) % 4], wb[(i + 2) % 4], wb[(i + 3) % 4]);
                }
                let k = _mm_loadu_si128(K.as_ptr().add(4 * i) as *const __m128i);
                let ta = _mm_add_epi32(wa[i % 4], k);
                let tb = _mm_add_epi32(wb[i % 4], k);
                cdgh_a = _mm_sha256rnds2_epu32(cdgh_a, abef_a, ta);
                cdgh_b = _mm_sha256rnds2_epu32(cdgh_b, abef_b, tb);
                abef_a = _mm_sha256rnds2_epu32(abef_a, cdgh_a, _mm_shuffle_epi32(ta, 0x0E));
                abef_b = _mm_sha256rnds2_epu32(abef_b, cdgh_b, _mm_shuffle_epi32(tb, 0x0E));
            }
            abef_a = _mm_add_epi32(abef_a, save_abef_a);
            cdgh_a = _mm_add_epi32(cdgh_a, save_cdgh_a);
            abef_b = _mm_add_epi32(abef_b, save_abef_b);
            cdgh_b = _mm_add_epi32(cdgh_b, save_cdgh_b);
        }
        store(sa, abef_a, cdgh_a);
        store(sb, abef_b, cdgh_b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn message(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn agrees_with_sha2() {
        let want = |m: &[u8]| -> [u8; 32] { Sha256::digest(m).into() };
        for len in 0..300 {
            let a = message(len, len as u32);
            assert_eq!(finish(IV, 0, &a), want(&a), "{len}");
            for other in [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, len / 2, len + 64, 1000] {
                let b = message(other, 7 + other as u32);
                assert_eq!(finish_pair((IV, 0, &a), (IV, 0, &b)), (want(&a), want(&b)), "{len} {other}");
                assert_eq!(finish_pair_with((IV, 0, &a), (IV, 0, &b), false), (want(&a), want(&b)), "{len} {other}");
                assert_eq!(finish_pair((IV, 0, &b), (IV, 0, &a)), (want(&b), want(&a)), "{other} {len}");
            }
            // From a state left by whole leading blocks.
            if len >= 128 {
                let mut state = IV;
                let rest = absorb(&mut state, &a[..128]);
                assert!(rest.is_empty());
                assert_eq!(finish(state, 128, &a[128..]), want(&a));
                assert_eq!(finish_pair((state, 128, &a[128..]), (IV, 0, &a)), (want(&a), want(&a)));
            }
        }
        assert_eq!(absorb(&mut IV.clone(), &[1u8; 70]).len(), 6);
    }
}
