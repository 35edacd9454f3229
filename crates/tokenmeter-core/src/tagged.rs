//! Reading the run document's internally tagged enums (`{"kind": "knee", ...}`)
//! through a flat *wire* struct instead of serde's derive.
//!
//! Why: serde derives an internally tagged enum's `Deserialize` by buffering the
//! whole object into its `Content` tree and deserializing every variant from it
//! again, one visitor per variant, which in the page's WebAssembly costs tens of
//! kilobytes per enum. A wire struct holds every field any variant has, each as an
//! `Option`, and is read in one pass; the enum's `TryFrom<Wire>` then picks the
//! variant by its tag and asks for the fields that variant needs. The format on
//! disk is unchanged (`Serialize` stays derived), and each enum has a test that
//! every variant reads back equal to what was written.
//!
//! The wire structs only work where a field name has one type in every variant;
//! the enums that use them are kept that way.

use std::fmt;

/// Why a tagged object could not be read: a field its variant needs was missing,
/// or its tag names no variant.
#[derive(Debug)]
pub enum WireError {
    Missing { tag: String, field: &'static str },
    UnknownTag { tag: String },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Missing { tag, field } => write!(f, "missing field `{field}` in `{tag}`"),
            WireError::UnknownTag { tag } => write!(f, "unknown variant `{tag}`"),
        }
    }
}

/// The value of `field`, which the variant `tag` needs.
pub(crate) fn need<T>(value: Option<T>, tag: &str, field: &'static str) -> Result<T, WireError> {
    value.ok_or_else(|| WireError::Missing {
        tag: tag.to_owned(),
        field,
    })
}
