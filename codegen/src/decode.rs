//! Params decoders: `impl LockAcquireParams { pub const PARAM_RULES; pub fn from_params }`.
//!
//! The rules are data (`crate::protocol::params::{ParamRule, Check, Kind, Pattern}` in the wit
//! crate) taken from the spec's param schemas before typify's preparation strips them; the
//! hand-written runtime `ParamDecoder` checks every param against its rule and its size limit,
//! collects every problem, and only then deserialises the fields.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::types::MethodModel;
use crate::CodegenError;

/// Path of the runtime module in the wit crate.
fn rt() -> TokenStream {
    quote! { crate::protocol::params }
}

/// Generates the decoder `impl` of one method's params type.
pub fn generate(model: &MethodModel) -> Result<TokenStream, CodegenError> {
    let rt = rt();
    let ty = format_ident!("{}", model.params_type);
    let method = &model.method.name;

    if model.method.params.is_empty() {
        let doc = format!(
            " Decodes the params of `{method}`. The method declares no params, so whatever \
             `params` holds is ignored."
        );
        return Ok(quote! {
            impl #ty {
                #[doc = #doc]
                pub fn from_params(
                    _params: ::std::option::Option<&::serde_json::Value>,
                ) -> ::std::result::Result<Self, #rt::ParamErrors> {
                    ::std::result::Result::Ok(Self {})
                }
            }
        });
    }

    let mut rules = Vec::new();
    for param in &model.method.params {
        let check = check_tokens(&param.schema, &format!("{method} param {}", param.name))?;
        let name = &param.name;
        let required = param.required;
        rules.push(quote! {
            #rt::ParamRule { name: #name, required: #required, check: #check }
        });
    }

    let mut lets = Vec::new();
    let mut required_fields = Vec::new();
    let mut all_fields = Vec::new();
    for (index, field) in model.fields.iter().enumerate() {
        let ident = format_ident!("{}", field.rust_name);
        let call = if field.required {
            required_fields.push(ident.clone());
            quote! { decoder.required(&Self::PARAM_RULES[#index]) }
        } else {
            quote! { decoder.optional_field(&Self::PARAM_RULES[#index]) }
        };
        lets.push(quote! { let #ident = #call; });
        all_fields.push(ident);
    }

    let rules_doc = format!(" The params of `{method}` as the decoder checks them, in spec order.");
    let decode_doc = format!(
        " Decodes and checks the params of `{method}`, reporting every problem found \
         (missing, wrong type, too short, too long, bad format, unknown enum value) keyed by \
         param name. Unknown params are ignored."
    );
    let body = if required_fields.is_empty() {
        quote! {
            let value = Self { #(#all_fields),* };
            decoder.finish(value)
        }
    } else {
        quote! {
            match (#(#required_fields,)*) {
                (#(::std::option::Option::Some(#required_fields),)*) => {
                    decoder.finish(Self { #(#all_fields),* })
                }
                _ => ::std::result::Result::Err(decoder.into_errors()),
            }
        }
    };
    Ok(quote! {
        impl #ty {
            #[doc = #rules_doc]
            pub const PARAM_RULES: &'static [#rt::ParamRule] = &[#(#rules),*];

            #[doc = #decode_doc]
            pub fn from_params(
                params: ::std::option::Option<&::serde_json::Value>,
            ) -> ::std::result::Result<Self, #rt::ParamErrors> {
                let mut decoder = #rt::ParamDecoder::new(params)?;
                #(#lets)*
                #body
            }
        }
    })
}

/// The `Check` expression for one schema.
pub fn check_tokens(schema: &Value, context: &str) -> Result<TokenStream, CodegenError> {
    let rt = rt();
    let invalid = |what: String| CodegenError::Invalid(format!("{context}: {what}"));
    let Some(map) = schema.as_object() else {
        return Err(invalid(format!("schema must be an object, found {schema}")));
    };

    let (type_name, nullable) = match map.get("type") {
        None => (None, false),
        Some(Value::String(t)) => (Some(t.as_str()), false),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            let non_null: Vec<&str> = names.iter().copied().filter(|t| *t != "null").collect();
            match non_null.as_slice() {
                [one] => (Some(*one), names.len() > non_null.len()),
                _ => return Err(invalid(format!("unsupported type list {types:?}"))),
            }
        }
        Some(other) => return Err(invalid(format!("unsupported type {other}"))),
    };
    if map.contains_key("$ref") || map.contains_key("oneOf") || map.contains_key("anyOf") {
        return Err(invalid(
            "params with $ref/oneOf/anyOf schemas are not supported by the decoder".to_string(),
        ));
    }

    let kind = match type_name {
        None => quote! { #rt::Kind::Any },
        Some("string") => quote! { #rt::Kind::String },
        Some("integer") => quote! { #rt::Kind::Integer },
        Some("number") => quote! { #rt::Kind::Number },
        Some("boolean") => quote! { #rt::Kind::Boolean },
        Some("array") => {
            let items = match map.get("items") {
                Some(items) => check_tokens(items, &format!("{context} items"))?,
                None => quote! { #rt::Check::ANY },
            };
            quote! { #rt::Kind::Array(&#items) }
        }
        Some("object") => {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut fields = Vec::new();
            for (name, prop) in map
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let check = check_tokens(prop, &format!("{context}.{name}"))?;
                let is_required = required.contains(&name.as_str());
                fields.push(quote! {
                    #rt::ParamRule { name: #name, required: #is_required, check: #check }
                });
            }
            quote! { #rt::Kind::Object(&[#(#fields),*]) }
        }
        Some(other) => return Err(invalid(format!("unsupported type `{other}`"))),
    };

    let usize_keyword = |key: &str| -> Result<TokenStream, CodegenError> {
        match map.get(key) {
            None => Ok(quote! { ::std::option::Option::None }),
            Some(v) => {
                let n = v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| invalid(format!("`{key}` must be a non-negative integer")))?;
                Ok(quote! { ::std::option::Option::Some(#n) })
            }
        }
    };
    let min_length = usize_keyword("minLength")?;
    let max_length = usize_keyword("maxLength")?;
    let min_items = usize_keyword("minItems")?;
    let max_items = usize_keyword("maxItems")?;

    let i64_keyword = |key: &str| -> Result<TokenStream, CodegenError> {
        match map.get(key) {
            None => Ok(quote! { ::std::option::Option::None }),
            Some(v) => {
                let n = v
                    .as_i64()
                    .ok_or_else(|| invalid(format!("`{key}` must be an integer")))?;
                Ok(quote! { ::std::option::Option::Some(#n) })
            }
        }
    };
    let minimum = i64_keyword("minimum")?;
    let maximum = i64_keyword("maximum")?;

    let pattern = match map.get("pattern") {
        None => quote! { ::std::option::Option::None },
        Some(Value::String(p)) => {
            let pattern = pattern_tokens(p).ok_or_else(|| {
                invalid(format!(
                    "pattern `{p}` is not supported: the decoder understands `.*LITERAL.*` \
                     (\"contains LITERAL\"); extend codegen/src/decode.rs and \
                     src/protocol/params.rs for more"
                ))
            })?;
            quote! { ::std::option::Option::Some(#pattern) }
        }
        Some(other) => return Err(invalid(format!("pattern must be a string, found {other}"))),
    };

    let enum_values = match map.get("enum") {
        None => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| invalid(format!("only string enums are supported, found {v}")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(invalid(format!("enum must be an array, found {other}"))),
    };

    Ok(quote! {
        #rt::Check {
            kind: #kind,
            nullable: #nullable,
            min_length: #min_length,
            max_length: #max_length,
            pattern: #pattern,
            enum_values: &[#(#enum_values),*],
            min_items: #min_items,
            max_items: #max_items,
            minimum: #minimum,
            maximum: #maximum,
        }
    })
}

/// Regex metacharacters; a pattern literal must avoid them.
const REGEX_META: &[char] = &[
    '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$',
];

/// The runtime `Pattern` for the regexes the decoder understands.
///
/// An unanchored `.*LITERAL.*` matches exactly the strings containing LITERAL (`.*` may match
/// the empty string, so line terminators do not matter).
fn pattern_tokens(pattern: &str) -> Option<TokenStream> {
    let rt = rt();
    let literal = pattern.strip_prefix(".*")?.strip_suffix(".*")?;
    if literal.is_empty() || literal.contains(REGEX_META) {
        return None;
    }
    Some(quote! { #rt::Pattern::Contains(#literal) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn render(schema: Value) -> String {
        let tokens = check_tokens(&schema, "test").unwrap();
        let expr: syn::Expr = syn::parse2(tokens).unwrap();
        quote!(#expr)
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn reads_string_constraints() {
        let out = render(json!({"type": "string", "minLength": 1, "pattern": ".*:.*"}));
        assert!(out.contains("Kind :: String"), "{out}");
        assert!(
            out.contains("min_length : :: std :: option :: Option :: Some (1usize)"),
            "{out}"
        );
        assert!(out.contains("Pattern :: Contains (\":\")"), "{out}");
    }

    #[test]
    fn reads_enums_and_arrays() {
        let out = render(json!({"type": "string", "enum": ["active", "resolved"]}));
        assert!(
            out.contains("enum_values : & [\"active\" , \"resolved\"]"),
            "{out}"
        );
        let out = render(json!({"type": "array", "minItems": 1,
                                "items": {"type": "string", "minLength": 1}}));
        assert!(out.contains("Kind :: Array"), "{out}");
        assert!(
            out.contains("min_items : :: std :: option :: Option :: Some (1usize)"),
            "{out}"
        );
    }

    #[test]
    fn reads_nested_objects() {
        let out = render(
            json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}}}),
        );
        assert!(out.contains("name : \"path\" , required : true"), "{out}");
        assert!(
            out.contains("name : \"content\" , required : false"),
            "{out}"
        );
    }

    #[test]
    fn rejects_unsupported_patterns_with_a_clear_message() {
        let err = check_tokens(
            &json!({"type": "string", "pattern": "^[a-z]+$"}),
            "m param p",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("m param p: pattern `^[a-z]+$` is not supported"),
            "{err}"
        );
    }

    #[test]
    fn rejects_unsupported_types() {
        assert!(check_tokens(&json!({"type": ["string", "integer"]}), "x").is_err());
        assert!(check_tokens(&json!({"$ref": "#/components/schemas/A"}), "x").is_err());
    }
}
