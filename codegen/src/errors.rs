//! `ErrorCode`: one variant per entry of `components.errors`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::spec::Spec;
use crate::{doc_attrs, naming, CodegenError};

/// Generates `enum ErrorCode` with `code()`, `message()`, `from_message()` and `ALL`.
pub fn generate(spec: &Spec) -> Result<TokenStream, CodegenError> {
    let mut variants = Vec::new();
    let mut codes = Vec::new();
    let mut messages = Vec::new();
    let mut seen_messages = std::collections::BTreeSet::new();
    for (name, error) in spec.components.errors.iter() {
        let ident = format_ident!("{}", naming::upper_camel(name));
        if !seen_messages.insert(error.message.clone()) {
            return Err(CodegenError::Invalid(format!(
                "error message `{}` is used by two errors",
                error.message
            )));
        }
        let mut doc = format!("`{}` ({}).", error.message, error.code);
        if let Some(description) = error.data.as_ref().and_then(|d| d.description.as_ref()) {
            doc.push_str("\n\n`data`: ");
            doc.push_str(description.trim());
        }
        let doc = doc_attrs(&doc);
        variants.push(quote! { #doc #ident });
        let code = error.code;
        codes.push(quote! { Self::#ident => #code });
        let message = &error.message;
        messages.push((ident, message.clone()));
    }
    let idents: Vec<_> = messages.iter().map(|(ident, _)| ident.clone()).collect();
    let message_arms = messages
        .iter()
        .map(|(ident, message)| quote! { Self::#ident => #message });
    let from_message_arms = messages
        .iter()
        .map(|(ident, message)| quote! { #message => Some(Self::#ident) });
    Ok(quote! {
        /// The protocol's named errors (`components.errors` of openrpc.json).
        ///
        /// Domain errors share the code -32000 and differ by `message`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            #(#variants,)*
        }

        impl ErrorCode {
            /// Every error, in spec order.
            pub const ALL: &'static [ErrorCode] = &[#(Self::#idents),*];

            /// The JSON-RPC error code.
            pub fn code(self) -> i32 {
                match self {
                    #(#codes,)*
                }
            }

            /// The JSON-RPC error message: the error's name as the spec spells it.
            pub fn message(self) -> &'static str {
                match self {
                    #(#message_arms,)*
                }
            }

            /// The error whose message is `message`, if any.
            pub fn from_message(message: &str) -> Option<Self> {
                match message {
                    #(#from_message_arms,)*
                    _ => None,
                }
            }
        }
    })
}
