//! Errors of the trust chain: each says which part failed and why, in one line.

/// Why a signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The key is not a point of its curve.
    #[error("the public key is not a valid point")]
    BadKey,
    /// Not canonical DER (secp256k1) or not 64 bytes (ed25519).
    #[error("the signature is not canonical")]
    NotCanonical,
    /// A canonical secp256k1 signature with the high `s` where the low one is required.
    #[error("the signature is not fully canonical (high S)")]
    HighS,
    /// Well formed but not made by this key over this message.
    #[error("the signature does not match the key and message")]
    Mismatch,
}

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
