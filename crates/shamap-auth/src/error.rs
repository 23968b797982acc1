//! Errors of the trust chain: each says which part failed and why, in one line.

use crate::keys::SignatureError;

/// Why a key, manifest, list, validation or XPOP was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A key could not be read.
    #[error("{text:?} is not a node public key: {why}")]
    Key {
        /// The text given.
        text: String,
        /// Why.
        why: String,
    },
    /// Bytes or JSON that are not the object they should be.
    #[error("{what}: {why}")]
    Malformed {
        /// What was being read.
        what: String,
        /// What is wrong.
        why: String,
    },
    /// A signature that does not verify.
    #[error("{what}: {why}")]
    Signature {
        /// Whose signature, over what.
        what: String,
        /// Why it was refused.
        why: SignatureError,
    },
    /// Well-formed, correctly signed, but not what it must be (a wrong key,
    /// an expired list, a leaf off its path, a quorum short).
    #[error("{0}")]
    Invalid(String),
}

impl From<shamap::xrpl::fields::FieldError> for AuthError {
    fn from(e: shamap::xrpl::fields::FieldError) -> AuthError {
        AuthError::Malformed {
            what: e.what,
            why: e.why,
        }
    }
}

impl AuthError {
    pub(crate) fn key(text: &str, why: &str) -> AuthError {
        AuthError::Key {
            text: text.to_string(),
            why: why.to_string(),
        }
    }

    pub(crate) fn malformed(what: &str, why: &str) -> AuthError {
        AuthError::Malformed {
            what: what.to_string(),
            why: why.to_string(),
        }
    }

    pub(crate) fn signature(what: &str, why: SignatureError) -> AuthError {
        AuthError::Signature {
            what: what.to_string(),
            why,
        }
    }

    pub(crate) fn invalid(why: impl Into<String>) -> AuthError {
        AuthError::Invalid(why.into())
    }
}
