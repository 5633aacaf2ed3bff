//! The text form of a fingerprint: 16 hexadecimal digits, most significant
//! first. Output is lower case; input takes either case.

/// Why a literal is not a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The literal has no characters at all.
    Empty,
    /// The literal is not 16 bytes long.
    Length(usize),
    /// The byte at this 0-based position is not a hexadecimal digit.
    Digit(usize),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Empty => write!(f, "A simhash64 value is 16 hexadecimal digits; got an empty string."),
            ParseError::Length(n) => write!(f, "A simhash64 value is 16 hexadecimal digits; got {n} bytes."),
            ParseError::Digit(at) => write!(
                f,
                "A simhash64 value is 16 hexadecimal digits; the character at position {} is not one.",
                at + 1
            ),
        }
    }
}

/// Parses exactly 16 hexadecimal digits (either case). No sign, prefix or
/// white space is accepted: a fingerprint literal has one spelling.
pub fn parse(literal: &[u8]) -> Result<u64, ParseError> {
    if literal.is_empty() {
        return Err(ParseError::Empty);
    }
    if literal.len() != 16 {
        // A non-digit in a short literal is still worth naming first.
        if let Some(at) = literal.iter().position(|b| !b.is_ascii_hexdigit()) {
            return Err(ParseError::Digit(at));
        }
        return Err(ParseError::Length(literal.len()));
    }
    let mut value = 0u64;
    for (at, &b) in literal.iter().enumerate() {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(ParseError::Digit(at)),
        };
        value = value << 4 | u64::from(digit);
    }
    Ok(value)
}

/// 16 lower-case hexadecimal digits.
pub fn format(value: u64) -> String {
    format!("{value:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for v in [0, 1, u64::MAX, 0x0123_4567_89ab_cdef, 1 << 63] {
            assert_eq!(parse(format(v).as_bytes()), Ok(v));
        }
        assert_eq!(format(0x0123_4567_89ab_cdef), "0123456789abcdef");
        assert_eq!(format(1), "0000000000000001");
    }

    #[test]
    fn takes_either_case() {
        assert_eq!(parse(b"ABCDEF0123456789"), parse(b"abcdef0123456789"));
        assert_eq!(parse(b"FfFfFfFfFfFfFfFf"), Ok(u64::MAX));
    }

    #[test]
    fn rejects_every_malformed_shape() {
        assert_eq!(parse(b""), Err(ParseError::Empty));
        assert_eq!(parse(b"0123"), Err(ParseError::Length(4)));
        assert_eq!(parse(b"0123456789abcdef0"), Err(ParseError::Length(17)));
        assert_eq!(parse(b"0123456789abcdeg"), Err(ParseError::Digit(15)));
        assert_eq!(parse(b"01234567 9abcdef"), Err(ParseError::Digit(8)));
        assert_eq!(parse(b" 0123456789abcdef"), Err(ParseError::Digit(0)));
        assert_eq!(parse(b"0x23456789abcdef"), Err(ParseError::Digit(1)));
        assert_eq!(parse(b"-123456789abcdef"), Err(ParseError::Digit(0)));
        assert_eq!(
            parse("０１２３456789abcdef".as_bytes()),
            Err(ParseError::Digit(0))
        );
    }
}
