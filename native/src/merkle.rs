//! RFC 9162 Merkle tree: leaf = H(0x00 || leaf), node = H(0x01 || l || r), odd node carried up.

use sha2::{Digest, Sha256};

pub const HASH_LEN: usize = 32;

#[inline]
pub fn leaf_hash(leaf: &[u8], out: &mut [u8]) {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    out.copy_from_slice(&h.finalize());
}

#[inline]
pub fn node_hash(l: &[u8], r: &[u8]) -> [u8; 32] {
    let mut buf = [0u8; 65];
    buf[0] = 1;
    buf[1..33].copy_from_slice(l);
    buf[33..65].copy_from_slice(r);
    Sha256::digest(buf).into()
}

/// Leaf hashes of `n` leaves laid out in `data` at `offsets` (n + 1 entries).
pub fn leaf_hashes(data: &[u8], offsets: &[u32]) -> Vec<u8> {
    let n = offsets.len().saturating_sub(1);
    let mut out = vec![0u8; n * HASH_LEN];
    for i in 0..n {
        let leaf = &data[offsets[i] as usize..offsets[i + 1] as usize];
        leaf_hash(leaf, &mut out[i * HASH_LEN..(i + 1) * HASH_LEN]);
    }
    out
}

pub fn empty_root() -> [u8; 32] {
    Sha256::digest([]).into()
}

/// Root over leaf hashes, computed in place (the buffer is overwritten).
pub fn root_in_place(level: &mut [u8], n: usize) -> [u8; 32] {
    if n == 0 {
        return empty_root();
    }
    let mut size = n;
    while size > 1 {
        let half = size / 2;
        for i in 0..half {
            let h = node_hash(&level[2 * i * HASH_LEN..(2 * i + 1) * HASH_LEN], &level[(2 * i + 1) * HASH_LEN..(2 * i + 2) * HASH_LEN]);
            level[i * HASH_LEN..(i + 1) * HASH_LEN].copy_from_slice(&h);
        }
        if size % 2 == 1 {
            level.copy_within((size - 1) * HASH_LEN..size * HASH_LEN, half * HASH_LEN);
        }
        size = half + size % 2;
    }
    let mut r = [0u8; 32];
    r.copy_from_slice(&level[..HASH_LEN]);
    r
}

/// Every level of a tree, back to back.
pub struct Tree {
    pub size: usize,
    pub nodes: Vec<u8>,
    pub offsets: Vec<usize>,
    pub sizes: Vec<usize>,
}

impl Tree {
    pub fn from_leaf_hashes(hashes: Vec<u8>, n: usize) -> Tree {
        let mut offsets = Vec::new();
        let mut sizes = Vec::new();
        let mut total = 0;
        let mut size = n;
        loop {
            offsets.push(total);
            sizes.push(size);
            total += size;
            if size <= 1 {
                break;
            }
            size = size / 2 + size % 2;
        }
        let mut nodes = hashes;
        nodes.resize(total * HASH_LEN, 0);
        for level in 1..sizes.len() {
            let prev = offsets[level - 1] * HASH_LEN;
            let prev_size = sizes[level - 1];
            let cur = offsets[level] * HASH_LEN;
            let half = prev_size / 2;
            for i in 0..half {
                let l = prev + 2 * i * HASH_LEN;
                let h = node_hash(&nodes[l..l + HASH_LEN], &nodes[l + HASH_LEN..l + 2 * HASH_LEN]);
                nodes[cur + i * HASH_LEN..cur + (i + 1) * HASH_LEN].copy_from_slice(&h);
            }
            if prev_size % 2 == 1 {
                let from = prev + (prev_size - 1) * HASH_LEN;
                nodes.copy_within(from..from + HASH_LEN, cur + half * HASH_LEN);
            }
        }
        Tree { size: n, nodes, offsets, sizes }
    }

    pub fn root(&self) -> [u8; 32] {
        if self.size == 0 {
            return empty_root();
        }
        let off = self.offsets[self.offsets.len() - 1] * HASH_LEN;
        let mut r = [0u8; 32];
        r.copy_from_slice(&self.nodes[off..off + HASH_LEN]);
        r
    }

    pub fn proof_len(&self, index: usize) -> usize {
        let mut len = 0;
        let mut i = index;
        for level in 0..self.sizes.len() - 1 {
            if (i ^ 1) < self.sizes[level] {
                len += 1;
            }
            i >>= 1;
        }
        len
    }

    pub fn proof_into(&self, index: usize, out: &mut Vec<u8>) {
        let mut i = index;
        for level in 0..self.sizes.len() - 1 {
            let sib = i ^ 1;
            if sib < self.sizes[level] {
                let at = (self.offsets[level] + sib) * HASH_LEN;
                out.extend_from_slice(&self.nodes[at..at + HASH_LEN]);
            }
            i >>= 1;
        }
    }
}
