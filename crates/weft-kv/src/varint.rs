//! Unsigned LEB128 varints: seven bits per byte, low bits first, the high
//! bit set on every byte but the last. The one implementation of every
//! Weft format (this crate's blocks and index, and weft's updates,
//! snapshots and small messages).
//!
//! ```
//! let mut out = Vec::new();
//! weft_kv::varint::write(&mut out, 300);
//! assert_eq!(out, [0xAC, 0x02]);
//! let mut pos = 0;
//! assert_eq!(weft_kv::varint::read(&out, &mut pos), Some(300));
//! assert_eq!(pos, 2);
//! ```

/// Appends `v` as a varint.
pub fn write(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*pos`, advancing `*pos` past the bytes read; `None`
/// when the bytes end first or the value does not fit a `u64`.
pub fn read(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        let bits = u64::from(b & 0x7F);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_does_not_fit() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write(&mut out, v);
            let mut pos = 0;
            assert_eq!(read(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
        // Past 64 bits, and cut short.
        let mut pos = 0;
        assert_eq!(
            read(
                &[0xFF; 9].iter().copied().chain([2]).collect::<Vec<_>>(),
                &mut pos
            ),
            None
        );
        let mut pos = 0;
        assert_eq!(read(&[0x80, 0x80], &mut pos), None);
    }
}
