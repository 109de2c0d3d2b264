//! The `client` file: one `WitClient` method and one `Batch` method per protocol method.
//!
//! Each `WitClient` method serialises its params type, posts the request through the
//! hand-written transport (`WitClient::call`) and decodes the result type. Each `Batch` method
//! adds the same request to a batch (`Batch::push`) and returns the typed handle its answer is
//! taken with. A method that declares no params (`ping`) takes no argument and sends no
//! `params`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::types::{MethodModel, Model};
use crate::{doc_attrs, method_doc};

/// Generates the `client` file.
pub fn generate(model: &Model) -> TokenStream {
    let (methods, batched): (Vec<TokenStream>, Vec<TokenStream>) =
        model.methods.iter().map(method_items).unzip();
    quote! {
        impl crate::client::WitClient {
            #(#methods)*
        }
        impl crate::client::Batch {
            #(#batched)*
        }
    }
}

/// One protocol method's `WitClient` method and its `Batch` method.
fn method_items(m: &MethodModel) -> (TokenStream, TokenStream) {
    let mut doc = method_doc(&m.method);
    doc.push_str(&format!("\n\nSends `{}`.", m.method.name));
    let doc = doc_attrs(&doc);
    let batch_doc = doc_attrs(&format!(
        "Adds a `{}` call to the batch; its answer is taken with `BatchAnswers::take`.",
        m.method.name
    ));
    let fn_ident = format_ident!("{}", m.fn_name);
    let params = format_ident!("{}", m.params_type);
    let result = format_ident!("{}", m.result_type);
    let name = &m.method.name;
    if m.method.params.is_empty() {
        (
            quote! {
                #doc
                pub async fn #fn_ident(
                    &self,
                ) -> ::std::result::Result<crate::protocol::#result, crate::client::ClientError> {
                    self.call::<crate::protocol::#params, _>(#name, ::std::option::Option::None).await
                }
            },
            quote! {
                #batch_doc
                pub fn #fn_ident(&mut self) -> crate::client::Pending<crate::protocol::#result> {
                    self.push::<crate::protocol::#params, _>(#name, ::std::option::Option::None)
                }
            },
        )
    } else {
        (
            quote! {
                #doc
                pub async fn #fn_ident(
                    &self,
                    params: crate::protocol::#params,
                ) -> ::std::result::Result<crate::protocol::#result, crate::client::ClientError> {
                    self.call(#name, ::std::option::Option::Some(&params)).await
                }
            },
            quote! {
                #batch_doc
                pub fn #fn_ident(
                    &mut self,
                    params: &crate::protocol::#params,
                ) -> crate::client::Pending<crate::protocol::#result> {
                    self.push(#name, ::std::option::Option::Some(params))
                }
            },
        )
    }
}
