//! The `types` file: typify's types for every schema and every method's params and result,
//! array-result aliases, `ErrorCode`, the params decoders and the `METHODS` table.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::{json, Map, Value};
use typify::{TypeDetails, TypeSpace, TypeSpaceSettings};

use crate::spec::{Method, Spec};
use crate::{decode, doc_attrs, errors, naming, schema, CodegenError};

/// Everything the three generated files need to know about one method.
#[derive(Debug, Clone)]
pub struct MethodModel {
    /// The spec's method.
    pub method: Method,
    /// `lock_acquire`.
    pub fn_name: String,
    /// `Some("lock")` for `lock.acquire`, `None` for `ping`.
    pub namespace: Option<String>,
    /// `LockAcquireParams`.
    pub params_type: String,
    /// `LockAcquireResult`.
    pub result_type: String,
    /// The params struct's fields, in spec order.
    pub fields: Vec<FieldModel>,
}

/// One field of a params struct.
#[derive(Debug, Clone)]
pub struct FieldModel {
    /// The Rust field name typify chose (`session_id`).
    pub rust_name: String,
    /// Whether the param is required (the field is then not an `Option`).
    pub required: bool,
}

/// The methods plus typify's output for all types.
pub struct Model {
    /// One entry per method, in spec order.
    pub methods: Vec<MethodModel>,
    /// typify's generated items.
    typify_items: TokenStream,
    /// `pub type XResult = Vec<Item>;` for array results.
    aliases: TokenStream,
}

impl Model {
    /// Runs typify over the spec's schemas and every method's params and result.
    pub fn build(spec: &Spec) -> Result<Self, CodegenError> {
        let components = &spec.components.schemas;
        let mut definitions: Vec<(String, Value)> = Vec::new();
        for (name, body) in components.iter() {
            definitions.push((name.to_string(), schema::prepare(body, components)?));
        }

        let mut aliases = TokenStream::new();
        let mut methods = Vec::new();
        for method in &spec.methods {
            let base = naming::upper_camel(&method.name);
            let params_type = format!("{base}Params");
            let result_type = format!("{base}Result");
            for generated in [&params_type, &result_type] {
                if components.get(generated).is_some() {
                    return Err(CodegenError::Invalid(format!(
                        "schema `{generated}` clashes with the type generated for method `{}`",
                        method.name
                    )));
                }
            }

            definitions.push((
                params_type.clone(),
                schema::prepare(&params_object_schema(method), components)?,
            ));

            let result_schema = &method.result.schema;
            let result_doc = format!(
                "The result of `{}`{}",
                method.name,
                match &method.result.description {
                    Some(d) => format!(": {}", d.trim()),
                    None => ".".to_string(),
                }
            );
            if result_schema.get("type").and_then(Value::as_str) == Some("array") {
                // Arrays become a plain alias rather than typify's newtype, so handlers return
                // a `Vec` and clients iterate it directly.
                let items = result_schema.get("items").cloned().unwrap_or(json!({}));
                let item_type = match schema::component_ref_name(&items) {
                    Some(name) => {
                        if components.get(name).is_none() {
                            return Err(CodegenError::Invalid(format!(
                                "method `{}`: unknown schema ref `{name}`",
                                method.name
                            )));
                        }
                        name.to_string()
                    }
                    None => {
                        let item_name = format!("{result_type}Item");
                        definitions.push((item_name.clone(), schema::prepare(&items, components)?));
                        item_name
                    }
                };
                let alias = format_ident!("{result_type}");
                let item = format_ident!("{item_type}");
                let doc = doc_attrs(&result_doc);
                aliases.extend(quote! {
                    #doc
                    pub type #alias = ::std::vec::Vec<#item>;
                });
            } else {
                let mut prepared = schema::prepare(result_schema, components)?;
                if let Value::Object(map) = &mut prepared {
                    map.entry("description")
                        .or_insert_with(|| Value::String(result_doc.clone()));
                }
                definitions.push((result_type.clone(), prepared));
            }

            methods.push(MethodModel {
                method: method.clone(),
                fn_name: naming::snake(&method.name),
                namespace: naming::namespace(&method.name).map(str::to_string),
                params_type,
                result_type,
                fields: Vec::new(),
            });
        }

        let mut settings = TypeSpaceSettings::default();
        settings.with_struct_builder(false);
        settings.with_derive("PartialEq".to_string());
        let mut type_space = TypeSpace::new(&settings);
        let mut typed = Vec::new();
        for (name, value) in &definitions {
            let parsed: schemars::schema::Schema =
                serde_json::from_value(value.clone()).map_err(|e| CodegenError::Typify {
                    name: name.clone(),
                    message: format!("not a JSON Schema: {e}"),
                })?;
            typed.push((name.clone(), parsed));
        }
        type_space
            .add_ref_types(typed)
            .map_err(|e| CodegenError::Typify {
                name: "(all schemas)".to_string(),
                message: e.to_string(),
            })?;

        for model in &mut methods {
            model.fields = params_fields(&type_space, model)?;
        }

        Ok(Self {
            methods,
            typify_items: type_space.to_stream(),
            aliases,
        })
    }
}

/// The object schema of a method's params, built from its by-name param list.
fn params_object_schema(method: &Method) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in &method.params {
        let mut prop = param.schema.clone();
        if let (Value::Object(map), Some(description)) = (&mut prop, &param.description) {
            map.entry("description")
                .or_insert_with(|| Value::String(description.clone()));
        }
        properties.insert(param.name.clone(), prop);
        if param.required {
            required.push(Value::String(param.name.clone()));
        }
    }
    let mut schema = json!({
        "type": "object",
        "description": format!("The params of `{}`: {}", method.name,
            method.summary.as_deref().unwrap_or("see the method").trim()),
        "properties": properties,
        "required": required,
    });
    if method.params.is_empty() {
        // typify turns an object without properties into a map unless extra properties are
        // forbidden; this makes it an empty struct. Decoding never goes through serde here
        // (`from_params` ignores params), so `deny_unknown_fields` does not reject anything.
        schema["additionalProperties"] = Value::Bool(false);
    }
    schema
}

/// The Rust field names typify chose for a method's params struct, in spec order.
fn params_fields(
    type_space: &TypeSpace,
    model: &MethodModel,
) -> Result<Vec<FieldModel>, CodegenError> {
    if model.method.params.is_empty() {
        return Ok(Vec::new());
    }
    let ty = type_space
        .iter_types()
        .find(|t| t.name() == model.params_type)
        .ok_or_else(|| {
            CodegenError::Invalid(format!(
                "typify did not emit `{}` for method `{}`",
                model.params_type, model.method.name
            ))
        })?;
    let TypeDetails::Struct(details) = ty.details() else {
        return Err(CodegenError::Invalid(format!(
            "typify emitted `{}` as something other than a struct",
            model.params_type
        )));
    };
    let props: Vec<String> = details
        .properties_info()
        .map(|info| info.name.to_string())
        .collect();
    model
        .method
        .params
        .iter()
        .map(|param| {
            // typify snake-cases property names the same way `naming::snake` does for the
            // protocol's camelCase names; anything else is reported rather than guessed.
            let rust_name = naming::snake(&param.name);
            if !props.contains(&rust_name) {
                return Err(CodegenError::Invalid(format!(
                    "typify named the field for param `{}` of `{}` differently from `{rust_name}` \
                     (fields: {props:?})",
                    param.name, model.params_type
                )));
            }
            Ok(FieldModel {
                rust_name,
                required: param.required,
            })
        })
        .collect()
}

/// Generates the `types` file.
pub fn generate(spec: &Spec, model: &Model) -> Result<TokenStream, CodegenError> {
    let typify_items = &model.typify_items;
    let aliases = &model.aliases;
    let error_code = errors::generate(spec)?;
    let mut decoders = TokenStream::new();
    for method in &model.methods {
        decoders.extend(decode::generate(method)?);
    }
    let methods_table = methods_table(model);
    Ok(quote! {
        #typify_items
        #aliases
        #error_code
        #decoders
        #methods_table
    })
}

/// `METHODS`: name, summary and param names of every method, for `wit help` and tests.
fn methods_table(model: &Model) -> TokenStream {
    let entries = model.methods.iter().map(|m| {
        let name = &m.method.name;
        let summary = m.method.summary.as_deref().unwrap_or("").trim();
        let params = m.method.params.iter().map(|p| p.name.as_str());
        let params_type = format_ident!("{}", m.params_type);
        let rules = if m.method.params.is_empty() {
            quote! { &[] }
        } else {
            quote! { #params_type::PARAM_RULES }
        };
        quote! {
            crate::protocol::MethodInfo {
                name: #name,
                summary: #summary,
                params: &[#(#params),*],
                rules: #rules,
            }
        }
    });
    quote! {
        /// Every method of the protocol, in spec order: wire name, summary, param names and
        /// the rules the params decoder checks.
        pub const METHODS: &[crate::protocol::MethodInfo] = &[#(#entries),*];
    }
}
