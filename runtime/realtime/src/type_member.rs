//! The value of an event's `type` member, read in the one pass that finds it: the string, or
//! nothing for any other value. What a non-string value holds is read as `R` says: skipped
//! ([`Skip`], for routing an event) or read in full with duplicate keys refused (the browser
//! guard's strict reader).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// How the array or object in place of a `type` string is read.
pub(super) trait Rest {
    /// Reads the array's elements.
    fn seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<(), A::Error>;
    /// Reads the object's members.
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<(), A::Error>;
}

/// Skips what is there without checking it.
pub(super) struct Skip;

impl Rest for Skip {
    fn seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// A `type` member's value: `Some` string, or `None` for any other value.
pub(super) struct TypeValue<'a, R>(pub(super) Option<Cow<'a, str>>, PhantomData<R>);

impl<'a, R> TypeValue<'a, R> {
    fn of(kind: Option<Cow<'a, str>>) -> TypeValue<'a, R> {
        TypeValue(kind, PhantomData)
    }
}

impl<'de, R: Rest> de::Deserialize<'de> for TypeValue<'de, R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(PhantomData<R>);
        impl<'de, R: Rest> Visitor<'de> for V<R> {
            type Value = TypeValue<'de, R>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TypeValue::of(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TypeValue::of(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(TypeValue::of(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(TypeValue::of(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(TypeValue::of(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(TypeValue::of(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(TypeValue::of(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                R::seq(seq).map(|()| TypeValue::of(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                R::map(map).map(|()| TypeValue::of(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}
