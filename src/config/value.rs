//! Config values that carry their own validation: a `provider/model` reference,
//! a fraction in (0, 1], a non-empty string.
//!
//! They check themselves while serde deserializes them, so a bad value is
//! reported with the file, line and key it came from. They never touch files.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

pub use crate::message::ModelRef;

/// A fraction of something, strictly above 0 and at most 1.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Fraction(f64);

impl Fraction {
    pub const ONE: Fraction = Fraction(1.0);

    pub fn new(value: f64) -> Result<Self, String> {
        if value > 0.0 && value <= 1.0 {
            Ok(Self(value))
        } else {
            Err(format!(
                "expected a number between 0 and 1 (0 excluded), got {value}"
            ))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl Serialize for Fraction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde's f64 also accepts integers, so `threshold = 1` works.
        let value = f64::deserialize(deserializer)?;
        Self::new(value).map_err(de::Error::custom)
    }
}

/// A string that must not be empty or blank (agent names, URLs, variable names).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct NonEmpty(String);

impl NonEmpty {
    pub fn new(text: impl Into<String>) -> Result<Self, String> {
        let text = text.into();
        if text.trim().is_empty() {
            Err("expected a non-empty string".to_owned())
        } else {
            Ok(Self(text))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NonEmpty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(de::Error::custom)
    }
}

/// `deserialize_with` for counts and durations where zero makes no sense
/// (a zero timeout would kill every command before it starts).
pub fn positive<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + PartialEq + Default,
{
    let value = T::deserialize(deserializer)?;
    if value == T::default() {
        Err(de::Error::custom("expected a number greater than 0, got 0"))
    } else {
        Ok(value)
    }
}

/// Parses a boolean written in an environment variable: `true/false`, `1/0`,
/// `yes/no`, `on/off` (any case).
pub fn parse_env_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!(
            "expected true/false (or 1/0, yes/no, on/off), got {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ref_splits_at_the_first_slash() {
        let parsed = ModelRef::parse("openrouter/qwen/qwen3-coder").expect("valid");
        assert_eq!(parsed.provider, "openrouter");
        assert_eq!(parsed.model, "qwen/qwen3-coder");
        assert_eq!(parsed.to_string(), "openrouter/qwen/qwen3-coder");
    }

    #[test]
    fn model_ref_rejects_missing_parts() {
        for bad in ["", "  ", "gpt-4o", "/gpt-4o", "openai/"] {
            assert!(ModelRef::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn fraction_bounds_are_open_at_zero_closed_at_one() {
        assert!(Fraction::new(0.0).is_err());
        assert!(Fraction::new(1.5).is_err());
        assert!(Fraction::new(f64::NAN).is_err());
        assert_eq!(Fraction::new(1.0).expect("1 is allowed").get(), 1.0);
        assert_eq!(Fraction::new(0.8).expect("0.8 is allowed").get(), 0.8);
    }

    #[test]
    fn env_bools() {
        assert_eq!(parse_env_bool("OFF"), Ok(false));
        assert_eq!(parse_env_bool("1"), Ok(true));
        assert!(parse_env_bool("maybe").is_err());
    }
}
