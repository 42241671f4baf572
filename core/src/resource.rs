//! Resource names and the Redis keys derived from them.
//!
//! A resource name is validated once, at the edge, so that every key the lock
//! builds from it is well-formed. Names may not contain `{` or `}`: the keys
//! wrap the name in a Redis Cluster hash tag (`lock:{name}`, `fence:{name}`)
//! so both keys of one resource always land in the same slot, which a Lua
//! script touching both requires. A brace inside the name would move the tag.

use std::fmt;
use std::sync::Arc;

use crate::error::InvalidInput;

/// Longest accepted resource name, in bytes. Redis keys may be far longer, but
/// a bound keeps keys, logs and the Postgres primary keys small and predictable.
pub const RESOURCE_NAME_LEN_MAX: usize = 200;

/// Longest accepted resource type, in bytes (it becomes a metric label).
pub const RESOURCE_TYPE_LEN_MAX: usize = 64;

/// Longest accepted key prefix, in bytes.
pub const KEY_PREFIX_LEN_MAX: usize = 64;

/// A validated resource name plus the resource *type* used for metric labels.
///
/// Metrics carry the type, never the name: names are unbounded in number and
/// would explode label cardinality.
///
/// Both parts are shared strings: a name is cloned into every lease and
/// label, and a clone should not allocate on the acquire path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceName {
    name: Arc<str>,
    resource_type: Arc<str>,
}

impl ResourceName {
    /// Validates `name`: non-empty, at most [`RESOURCE_NAME_LEN_MAX`] bytes,
    /// no `{`, `}` or control characters. The resource type defaults to
    /// `"default"`.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidInput> {
        let name = name.into();
        if name.is_empty() {
            return Err(InvalidInput::EmptyResourceName);
        }
        if name.len() > RESOURCE_NAME_LEN_MAX {
            return Err(InvalidInput::ResourceNameTooLong {
                len: name.len(),
                len_max: RESOURCE_NAME_LEN_MAX,
            });
        }
        if let Some(c) = name.chars().find(|c| *c == '{' || *c == '}') {
            return Err(InvalidInput::ResourceNameHashTag { found: c });
        }
        if let Some(c) = name.chars().find(|c| c.is_control()) {
            return Err(InvalidInput::ResourceNameControl {
                code_point: c as u32,
            });
        }
        Ok(Self {
            name: name.into(),
            resource_type: Arc::from("default"),
        })
    }

    /// Sets the resource type (metric label): 1..=64 bytes of `[a-z0-9_-]`.
    pub fn with_type(mut self, resource_type: impl Into<String>) -> Result<Self, InvalidInput> {
        let resource_type = resource_type.into();
        let valid_chars = resource_type
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if resource_type.is_empty() || resource_type.len() > RESOURCE_TYPE_LEN_MAX || !valid_chars {
            return Err(InvalidInput::ResourceType { resource_type });
        }
        self.resource_type = resource_type.into();
        Ok(self)
    }

    /// The validated name.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The resource type, safe to use as a metric label.
    pub fn resource_type(&self) -> &str {
        &self.resource_type
    }

    /// The resource type as a shared string, for metric labels without a copy.
    pub fn resource_type_shared(&self) -> Arc<str> {
        self.resource_type.clone()
    }

    /// A stable 64-bit FNV-1a hash of the name, in hex, for logs that must not
    /// carry the raw id. Stable across processes and versions, unlike
    /// `std`'s randomly seeded hasher, so log lines from two runs can be joined.
    pub fn id_hash(&self) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in self.name.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{hash:016x}")
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// How lock and fence keys are spelled: `{lock_prefix}:{{name}}` and
/// `{fence_prefix}:{{name}}`. Defaults: `lock` and `fence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyScheme {
    lock_prefix: String,
    fence_prefix: String,
}

impl Default for KeyScheme {
    fn default() -> Self {
        Self {
            lock_prefix: "lock".to_owned(),
            fence_prefix: "fence".to_owned(),
        }
    }
}

impl KeyScheme {
    /// A scheme with custom prefixes (for example `"app1:lock"`). Prefixes
    /// must be non-empty, bounded, distinct, and free of braces and control
    /// characters, for the same hash-slot reason as names.
    pub fn new(
        lock_prefix: impl Into<String>,
        fence_prefix: impl Into<String>,
    ) -> Result<Self, InvalidInput> {
        let lock_prefix = lock_prefix.into();
        let fence_prefix = fence_prefix.into();
        for prefix in [&lock_prefix, &fence_prefix] {
            let bad = prefix.is_empty()
                || prefix.len() > KEY_PREFIX_LEN_MAX
                || prefix
                    .chars()
                    .any(|c| c == '{' || c == '}' || c.is_control());
            if bad {
                return Err(InvalidInput::KeyPrefix {
                    prefix: prefix.clone(),
                });
            }
        }
        if lock_prefix == fence_prefix {
            return Err(InvalidInput::KeyPrefixesEqual {
                prefix: lock_prefix,
            });
        }
        Ok(Self {
            lock_prefix,
            fence_prefix,
        })
    }

    /// `lock:{name}`.
    pub fn lock_key(&self, resource: &ResourceName) -> String {
        tagged_key(&self.lock_prefix, resource)
    }

    /// `fence:{name}`.
    pub fn fence_key(&self, resource: &ResourceName) -> String {
        tagged_key(&self.fence_prefix, resource)
    }
}

impl KeyScheme {
    /// The lock key as a command argument, written straight into the
    /// command's buffer: every lock operation sends a key, and building it as
    /// a `String` first (with `format!`'s machinery and regrowth) was a
    /// visible share of a client's CPU per cycle in the core bench.
    pub(crate) fn lock_key_arg<'a>(&'a self, resource: &'a ResourceName) -> TaggedKey<'a> {
        TaggedKey {
            prefix: &self.lock_prefix,
            name: resource.as_str(),
        }
    }

    /// The fence key as a command argument; see [`KeyScheme::lock_key_arg`].
    pub(crate) fn fence_key_arg<'a>(&'a self, resource: &'a ResourceName) -> TaggedKey<'a> {
        TaggedKey {
            prefix: &self.fence_prefix,
            name: resource.as_str(),
        }
    }
}

/// `prefix:{name}`: the one place a key's shape is spelled out.
pub(crate) struct TaggedKey<'a> {
    prefix: &'a str,
    name: &'a str,
}

impl TaggedKey<'_> {
    fn parts(&self) -> [&str; 4] {
        [self.prefix, ":{", self.name, "}"]
    }

    fn len(&self) -> usize {
        self.parts().iter().map(|p| p.len()).sum()
    }
}

impl redis::ToRedisArgs for TaggedKey<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        use std::io::Write;
        let mut arg = out.writer_for_next_arg();
        for part in self.parts() {
            // Writing into the command's in-memory buffer cannot fail.
            arg.write_all(part.as_bytes())
                .expect("a command buffer accepts every byte");
        }
    }
}

impl redis::ToSingleRedisArg for TaggedKey<'_> {}

fn tagged_key(prefix: &str, resource: &ResourceName) -> String {
    let key = TaggedKey {
        prefix,
        name: resource.as_str(),
    };
    let mut text = String::with_capacity(key.len());
    for part in key.parts() {
        text.push_str(part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_arguments_are_the_keys() {
        use redis::ToRedisArgs;
        let r = ResourceName::new("invoice-42").unwrap();
        let keys = KeyScheme::new("app1:lock", "app1:fence").unwrap();
        assert_eq!(
            keys.lock_key_arg(&r).to_redis_args(),
            vec![b"app1:lock:{invoice-42}".to_vec()]
        );
        assert_eq!(
            keys.fence_key_arg(&r).to_redis_args(),
            vec![keys.fence_key(&r).into_bytes()]
        );
    }

    #[test]
    fn keys_share_one_hash_tag() {
        let r = ResourceName::new("invoice-42").unwrap();
        let keys = KeyScheme::default();
        assert_eq!(keys.lock_key(&r), "lock:{invoice-42}");
        assert_eq!(keys.fence_key(&r), "fence:{invoice-42}");
    }

    #[test]
    fn invalid_names_are_typed_errors() {
        assert_eq!(ResourceName::new(""), Err(InvalidInput::EmptyResourceName));
        assert_eq!(
            ResourceName::new("a{b"),
            Err(InvalidInput::ResourceNameHashTag { found: '{' })
        );
        assert_eq!(
            ResourceName::new("a}b"),
            Err(InvalidInput::ResourceNameHashTag { found: '}' })
        );
        assert_eq!(
            ResourceName::new("a\nb"),
            Err(InvalidInput::ResourceNameControl { code_point: 10 })
        );
        let long = "x".repeat(RESOURCE_NAME_LEN_MAX + 1);
        assert_eq!(
            ResourceName::new(long),
            Err(InvalidInput::ResourceNameTooLong {
                len: RESOURCE_NAME_LEN_MAX + 1,
                len_max: RESOURCE_NAME_LEN_MAX
            })
        );
        assert!(ResourceName::new("x".repeat(RESOURCE_NAME_LEN_MAX)).is_ok());
        assert!(ResourceName::new("ok")
            .unwrap()
            .with_type("Bad Type")
            .is_err());
        assert!(ResourceName::new("ok").unwrap().with_type("").is_err());
        assert!(KeyScheme::new("lock", "lock").is_err());
        assert!(KeyScheme::new("lo{ck", "fence").is_err());
        assert!(KeyScheme::new("", "fence").is_err());
    }

    #[test]
    fn id_hash_is_stable() {
        let r = ResourceName::new("invoice-42").unwrap();
        assert_eq!(r.id_hash(), r.clone().id_hash());
        assert_ne!(
            r.id_hash(),
            ResourceName::new("invoice-43").unwrap().id_hash()
        );
        assert_eq!(r.id_hash().len(), 16);
    }
}
