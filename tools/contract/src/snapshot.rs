//! The lossless-JSON boundary: values are JSON with finite numbers and no negative zero.
//!
//! `serde_json::to_value` silently turns NaN and ±Infinity into `null` and keeps `-0.0`, so typed
//! values are first walked by a checking serializer that rejects those floats before conversion.

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::Value;
use std::fmt;

/// Why a value is not lossless JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("not lossless JSON ({0})")]
    NotLossless(String),
    #[error("snapshot failed: {0}")]
    Failed(String),
}

/// Serializes `value` into a JSON value, rejecting non-finite floats, `-0.0` and non-string keys.
pub fn to_lossless_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, SnapshotError> {
    value.serialize(FloatCheck).map_err(|e| match e {
        CheckError::Lossy(what) => SnapshotError::NotLossless(what),
        CheckError::Custom(msg) => SnapshotError::Failed(msg),
    })?;
    // The checking pass already rejected every lossy float, so the value needs no second walk.
    serde_json::to_value(value).map_err(|e| SnapshotError::Failed(e.to_string()))
}

/// Checks an existing JSON value (iteratively, no recursion limit) for `-0.0`.
/// `serde_json::Value` cannot hold NaN or infinities, but it can hold negative zero.
pub fn lossless_value(value: &Value) -> Result<(), SnapshotError> {
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        match node {
            Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    if !f.is_finite() {
                        return Err(SnapshotError::NotLossless("non-finite number".into()));
                    }
                    if f == 0.0 && f.is_sign_negative() && !n.is_i64() && !n.is_u64() {
                        return Err(SnapshotError::NotLossless("negative zero".into()));
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    Ok(())
}

#[derive(Debug)]
enum CheckError {
    Lossy(String),
    Custom(String),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Lossy(what) | CheckError::Custom(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for CheckError {}

impl ser::Error for CheckError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CheckError::Custom(msg.to_string())
    }
}

fn check_float(v: f64) -> Result<(), CheckError> {
    if !v.is_finite() {
        return Err(CheckError::Lossy(format!("non-finite number {v}")));
    }
    if v == 0.0 && v.is_sign_negative() {
        return Err(CheckError::Lossy("negative zero".into()));
    }
    Ok(())
}

/// A serializer that produces nothing and only rejects lossy floats.
struct FloatCheck;

impl ser::SerializeSeq for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTuple for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeMap for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CheckError> {
        key.serialize(KeyCheck)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStruct for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::Serializer for FloatCheck {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = FloatCheck;
    type SerializeTuple = FloatCheck;
    type SerializeTupleStruct = FloatCheck;
    type SerializeTupleVariant = FloatCheck;
    type SerializeMap = FloatCheck;
    type SerializeStruct = FloatCheck;
    type SerializeStructVariant = FloatCheck;

    fn serialize_bool(self, _: bool) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), CheckError> {
        check_float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), CheckError> {
        check_float(v)
    }
    fn serialize_char(self, _: char) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn serialize_unit(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(FloatCheck)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_tuple(self, _: usize) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<FloatCheck, CheckError> {
        Ok(FloatCheck)
    }
}

/// Map keys must be strings (or string-like), as in JSON.
struct KeyCheck;

impl ser::Serializer for KeyCheck {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = Impossible<(), CheckError>;
    type SerializeTuple = Impossible<(), CheckError>;
    type SerializeTupleStruct = Impossible<(), CheckError>;
    type SerializeTupleVariant = Impossible<(), CheckError>;
    type SerializeMap = Impossible<(), CheckError>;
    type SerializeStruct = Impossible<(), CheckError>;
    type SerializeStructVariant = Impossible<(), CheckError>;

    fn serialize_bool(self, _: bool) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_f64(self, _: f64) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_char(self, _: char) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_none(self) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), CheckError> {
        v.serialize(KeyCheck)
    }
    fn serialize_unit(self) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(KeyCheck)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CheckError> {
        Err(CheckError::Lossy("non-string map key".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn rejects_nan_infinity_and_negative_zero() {
        assert!(to_lossless_value(&f64::NAN).is_err());
        assert!(to_lossless_value(&vec![1.0, f64::INFINITY]).is_err());
        assert!(to_lossless_value(&json!({"a": -0.0})).is_err());
        assert!(to_lossless_value(&-0.0f32).is_err());
        assert!(to_lossless_value(&0.0).is_ok());
        assert!(to_lossless_value(&BTreeMap::from([(1.5f64.to_bits(), 1)])).is_ok());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite, not -0", |f| f.is_finite()
                    && !(f == &0.0 && f.is_sign_negative()))
                .prop_map(|f| json!(f)),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn arbitrary_json_round_trips_unchanged(value in arb_json()) {
            let snap = to_lossless_value(&value).unwrap();
            prop_assert_eq!(&snap, &value);
            let text = serde_json::to_string(&snap).unwrap();
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, value);
        }

        #[test]
        fn any_value_with_a_lossy_float_is_rejected(
            value in arb_json(),
            bad in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0)],
            depth in 0usize..4,
        ) {
            // Bury a lossy float inside a typed structure (serde_json::Value cannot hold NaN).
            #[derive(Serialize)]
            struct Holder { value: Value, nested: Vec<Vec<Option<f64>>> }
            let mut nested = vec![vec![Some(1.0)]; depth + 1];
            nested[depth].push(Some(bad));
            let holder = Holder { value, nested };
            prop_assert!(to_lossless_value(&holder).is_err());
        }
    }
}
