//! Problem shapes: parsing `MxNxK` and `B,H,S,D,full|causal`, the default suites, FLOP counts.

use std::fmt;
use std::str::FromStr;

/// Largest dimension accepted: cuBLAS takes dimensions and leading dimensions as 32-bit ints.
pub const MAX_DIM: usize = i32::MAX as usize;

/// A shape that could not be parsed or is out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("`{text}`: expected {expected}")]
    Format { text: String, expected: &'static str },
    #[error("`{text}`: `{field}` is not a positive integer")]
    NotAPositiveInteger { text: String, field: String },
    #[error("`{text}`: {value} is larger than the largest dimension, {max}")]
    TooLarge { text: String, value: usize, max: usize },
    #[error("`{text}`: the mask must be `full` or `causal`, not `{found}`")]
    Mask { text: String, found: String },
    #[error("no shapes given")]
    Empty,
}

fn dimension(text: &str, field: &str) -> Result<usize, ShapeError> {
    let field = field.trim();
    let value: usize = field
        .parse()
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| ShapeError::NotAPositiveInteger { text: text.to_string(), field: field.to_string() })?;
    if value > MAX_DIM {
        return Err(ShapeError::TooLarge { text: text.to_string(), value, max: MAX_DIM });
    }
    Ok(value)
}

/// The GEMM problem shape is the launch API's ([`crate::types::GemmShape`]); the benchmark adds its text form.
pub use crate::types::GemmShape;

impl fmt::Display for GemmShape {
    /// `MxNxK`, the spelling torch_reference.py uses, so rows from both line up.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

impl FromStr for GemmShape {
    type Err = ShapeError;

    /// `MxNxK`; `X` and `×` are accepted for `x`, spaces around numbers are ignored.
    fn from_str(text: &str) -> Result<GemmShape, ShapeError> {
        let fields: Vec<&str> = text.trim().split(['x', 'X', '×']).collect();
        if fields.len() != 3 {
            return Err(ShapeError::Format { text: text.to_string(), expected: "MxNxK, e.g. 4096x4096x4096" });
        }
        Ok(GemmShape { m: dimension(text, fields[0])?, n: dimension(text, fields[1])?, k: dimension(text, fields[2])? })
    }
}

/// A comma-separated list of `MxNxK` shapes.
pub fn parse_gemm_list(list: &str) -> Result<Vec<GemmShape>, ShapeError> {
    let shapes = list.split(',').filter(|s| !s.trim().is_empty()).map(str::parse).collect::<Result<Vec<_>, _>>()?;
    if shapes.is_empty() { Err(ShapeError::Empty) } else { Ok(shapes) }
}

/// The default GEMM suite: the same shapes, in the same order, as torch_reference.py's `GEMM_SUITE`.
pub const GEMM_SUITE: [GemmShape; 8] = [
    GemmShape::new(2048, 2048, 2048),
    GemmShape::new(4096, 4096, 4096),
    GemmShape::new(8192, 8192, 8192),
    GemmShape::new(16384, 16384, 16384),
    GemmShape::new(4096, 14336, 4096),
    GemmShape::new(8192, 4096, 14336),
    GemmShape::new(128, 8192, 8192),
    GemmShape::new(1024, 1024, 1024),
];

/// Attention forward: q, k, v are [B, H, S, D].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnShape {
    pub batch: usize,
    pub heads: usize,
    pub seq: usize,
    pub head_dim: usize,
    pub causal: bool,
}

impl AttnShape {
    /// 4·B·H·S²·D (two matrix products of 2·S²·D each per head), halved when causal: torch_reference.py's count.
    pub fn flops(&self) -> f64 {
        let full = 4.0 * self.batch as f64 * self.heads as f64 * (self.seq as f64).powi(2) * self.head_dim as f64;
        if self.causal { full / 2.0 } else { full }
    }
}

impl fmt::Display for AttnShape {
    /// `B,H,S,D,full|causal`, torch_reference.py's spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mask = if self.causal { "causal" } else { "full" };
        write!(f, "{},{},{},{},{mask}", self.batch, self.heads, self.seq, self.head_dim)
    }
}

impl FromStr for AttnShape {
    type Err = ShapeError;

    fn from_str(text: &str) -> Result<AttnShape, ShapeError> {
        let fields: Vec<&str> = text.trim().split(',').collect();
        if fields.len() != 5 {
            return Err(ShapeError::Format {
                text: text.to_string(),
                expected: "B,H,S,D,full|causal, e.g. 4,16,8192,128,causal",
            });
        }
        let causal = match fields[4].trim() {
            "full" => false,
            "causal" => true,
            other => return Err(ShapeError::Mask { text: text.to_string(), found: other.to_string() }),
        };
        Ok(AttnShape {
            batch: dimension(text, fields[0])?,
            heads: dimension(text, fields[1])?,
            seq: dimension(text, fields[2])?,
            head_dim: dimension(text, fields[3])?,
            causal,
        })
    }
}

/// The default attention suite, as torch_reference.py's `ATTN_SUITE`: B·S = 32k tokens; D = 128 with H = 16 at six
/// sequence lengths, D = 64 with H = 32 at three, each full and causal.
pub fn attn_suite() -> Vec<AttnShape> {
    let mut suite = Vec::new();
    for (heads, head_dim, seqs) in
        [(16, 128, &[512, 1024, 2048, 4096, 8192, 16384][..]), (32, 64, &[512, 2048, 8192][..])]
    {
        for &seq in seqs {
            for causal in [false, true] {
                suite.push(AttnShape { batch: 16384 / seq * 2, heads, seq, head_dim, causal });
            }
        }
    }
    suite
}

/// A buffer size for the memory-bound benchmark: `256` (MiB), or with a unit, `256MiB`, `1GiB`, `64KiB`.
pub fn parse_size(text: &str) -> Result<usize, ShapeError> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => t.split_at(at),
        None => (t, "MiB"),
    };
    let scale = match unit.trim() {
        "" | "MiB" | "M" => 1 << 20,
        "KiB" | "K" => 1 << 10,
        "GiB" | "G" => 1 << 30,
        _ => return Err(ShapeError::Format { text: text.to_string(), expected: "a size such as 256, 256MiB or 1GiB" }),
    };
    let value: usize = number
        .parse()
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| ShapeError::NotAPositiveInteger { text: text.to_string(), field: number.to_string() })?;
    value.checked_mul(scale).ok_or(ShapeError::TooLarge { text: text.to_string(), value, max: usize::MAX / scale })
}

/// `268435456` → `256MiB`: how buffer sizes are spelt in rows.
pub fn size_name(bytes: usize) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}MiB", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_shapes_parse_and_print_alike() {
        let shape: GemmShape = "4096x14336x4096".parse().unwrap();
        assert_eq!(shape, GemmShape::new(4096, 14336, 4096));
        assert_eq!(shape.to_string(), "4096x14336x4096");
        assert_eq!(" 128 X 8192×64 ".parse::<GemmShape>().unwrap(), GemmShape::new(128, 8192, 64));
        for shape in GEMM_SUITE {
            assert_eq!(shape.to_string().parse::<GemmShape>().unwrap(), shape);
        }
    }

    #[test]
    fn bad_gemm_shapes_are_typed_errors() {
        assert!(matches!("4096x4096".parse::<GemmShape>(), Err(ShapeError::Format { .. })));
        assert!(matches!("1x2x3x4".parse::<GemmShape>(), Err(ShapeError::Format { .. })));
        assert!(matches!("0x2x3".parse::<GemmShape>(), Err(ShapeError::NotAPositiveInteger { .. })));
        assert!(matches!("ax2x3".parse::<GemmShape>(), Err(ShapeError::NotAPositiveInteger { .. })));
        assert!(matches!("-1x2x3".parse::<GemmShape>(), Err(ShapeError::NotAPositiveInteger { .. })));
        assert!(matches!("4294967296x2x3".parse::<GemmShape>(), Err(ShapeError::TooLarge { .. })));
        let message = "12x0x3".parse::<GemmShape>().unwrap_err().to_string();
        assert!(message.contains("12x0x3") && message.contains("`0`"), "{message}");
    }

    #[test]
    fn gemm_lists() {
        assert_eq!(parse_gemm_list("1x2x3, 4x5x6,").unwrap(), vec![GemmShape::new(1, 2, 3), GemmShape::new(4, 5, 6)]);
        assert_eq!(parse_gemm_list(" , "), Err(ShapeError::Empty));
        assert!(parse_gemm_list("1x2x3,1x2").is_err());
    }

    #[test]
    fn flop_counts() {
        assert_eq!(GemmShape::new(2, 3, 4).flops(), 48.0);
        assert_eq!(GemmShape::new(16384, 16384, 16384).flops(), 2.0 * 16384f64.powi(3));
        let full: AttnShape = "4,16,8192,128,full".parse().unwrap();
        assert_eq!(full.flops(), 4.0 * 4.0 * 16.0 * 8192.0 * 8192.0 * 128.0);
        let causal = AttnShape { causal: true, ..full };
        assert_eq!(causal.flops(), full.flops() / 2.0);
    }

    #[test]
    fn attention_shapes_and_suite_match_torch_reference() {
        let shape: AttnShape = "4,16,8192,128,causal".parse().unwrap();
        assert_eq!(shape, AttnShape { batch: 4, heads: 16, seq: 8192, head_dim: 128, causal: true });
        assert_eq!(shape.to_string(), "4,16,8192,128,causal");
        assert!(matches!("4,16,8192,128,sliding".parse::<AttnShape>(), Err(ShapeError::Mask { .. })));
        assert!(matches!("4,16,8192,causal".parse::<AttnShape>(), Err(ShapeError::Format { .. })));
        let suite: Vec<String> = attn_suite().iter().map(ToString::to_string).collect();
        assert_eq!(suite.len(), 18);
        assert_eq!(suite[0], "64,16,512,128,full");
        assert_eq!(suite[1], "64,16,512,128,causal");
        assert_eq!(suite[11], "2,16,16384,128,causal");
        assert_eq!(suite[12], "64,32,512,64,full");
        assert_eq!(suite[17], "4,32,8192,64,causal");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256").unwrap(), 256 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(size_name(256 << 20), "256MiB");
        assert_eq!(size_name(2 << 30), "2GiB");
        assert_eq!(size_name(1000), "1000B");
    }
}
