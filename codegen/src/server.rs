//! The `server` file: one trait per method namespace and its `register_*_methods` function.
//!
//! `lock.*` methods go to `LockMethods`, `intent.*` to `IntentMethods`, and so on; methods
//! without a namespace (`ping`, `register`, `check-contracts`) go to `WitMethods`. A method
//! added to the spec becomes a trait method without a default body, so the daemon stops
//! compiling ("not all trait items implemented, missing: `lock_extend`") until it is handled.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::types::{MethodModel, Model};
use crate::{doc_attrs, method_doc, naming};

/// Generates the `server` file.
pub fn generate(model: &Model) -> TokenStream {
    // Group by namespace, keeping the namespaces in order of first appearance.
    let mut order: Vec<Option<String>> = Vec::new();
    let mut groups: BTreeMap<Option<String>, Vec<&MethodModel>> = BTreeMap::new();
    for method in &model.methods {
        if !groups.contains_key(&method.namespace) {
            order.push(method.namespace.clone());
        }
        groups
            .entry(method.namespace.clone())
            .or_default()
            .push(method);
    }
    // `WitMethods` first: it holds `ping`.
    order.sort_by_key(|ns| ns.is_some());

    let mut out = TokenStream::new();
    for namespace in order {
        let methods = groups
            .get(&namespace)
            .map(Vec::as_slice)
            .unwrap_or_default();
        out.extend(namespace_items(namespace.as_deref(), methods));
    }
    out
}

fn namespace_items(namespace: Option<&str>, methods: &[&MethodModel]) -> TokenStream {
    let trait_ident = format_ident!("{}", naming::trait_name(namespace));
    let register_ident = format_ident!("{}", naming::register_fn_name(namespace));
    let names: Vec<String> = methods
        .iter()
        .map(|m| format!("`{}`", m.method.name))
        .collect();
    let scope = match namespace {
        Some(ns) => format!("`{ns}.*`"),
        None => "top-level".to_string(),
    };
    let trait_doc = doc_attrs(&format!(
        "The {scope} methods of the protocol: {}.\n\n\
         Implement each method with `async fn`; the returned future must be `Send`.",
        names.join(", ")
    ));
    let register_doc = doc_attrs(&format!(
        "Registers the {scope} methods ({}) on `module` under their wire names.\n\n\
         Each handler decodes its params with the generated decoder (problems answer \
         -32600 INVALID_REQUEST with `{{formErrors, fieldErrors}}`), calls the trait method \
         and maps a `ProtocolError` to the JSON-RPC error object.",
        names.join(", ")
    ));

    let trait_methods = methods.iter().map(|m| {
        let doc = doc_attrs(&method_doc(&m.method));
        let fn_ident = format_ident!("{}", m.fn_name);
        let params = format_ident!("{}", m.params_type);
        let result = format_ident!("{}", m.result_type);
        quote! {
            #doc
            fn #fn_ident(
                &self,
                params: crate::protocol::#params,
            ) -> impl ::std::future::Future<
                Output = ::std::result::Result<crate::protocol::#result, crate::protocol::ProtocolError>,
            > + ::std::marker::Send;
        }
    });

    let registrations = methods.iter().map(|m| {
        let name = &m.method.name;
        let fn_ident = format_ident!("{}", m.fn_name);
        let params = format_ident!("{}", m.params_type);
        quote! {
            module.register_async_method(#name, |params, context, _extensions| async move {
                match crate::protocol::server::decode_params(
                    &params,
                    crate::protocol::#params::from_params,
                ) {
                    ::std::result::Result::Ok(params) => context.#fn_ident(params).await,
                    ::std::result::Result::Err(error) => ::std::result::Result::Err(error),
                }
            })?;
        }
    });

    quote! {
        #trait_doc
        pub trait #trait_ident {
            #(#trait_methods)*
        }

        #register_doc
        pub fn #register_ident<T>(
            module: &mut ::jsonrpsee::RpcModule<T>,
        ) -> ::std::result::Result<(), ::jsonrpsee::core::RegisterMethodError>
        where
            T: #trait_ident + ::std::marker::Send + ::std::marker::Sync + 'static,
        {
            #(#registrations)*
            ::std::result::Result::Ok(())
        }
    }
}
