//! docs/rust.md, "From Rust: build.rs and the typed registry".

// src/lib.rs                                 (toolc-runtime is the only dependency)
pub mod support {
    toolc_runtime::include_tools!("support");
}

use support::{GetOrderStatusArgs, GetOrderStatusOutput, GetOrderStatusOutputStatus};
use support::{SearchHelpArticlesArgs, SearchHelpArticlesOutput};
use toolc_runtime::{CallContext, ToolError};

#[derive(Debug)]
pub struct Desk;

// One async fn per *server* tool, with typed arguments; leaving one out does not compile.
impl support::SupportServer for Desk {
    async fn search_help_articles(
        &self,
        _ctx: &CallContext,
        _args: SearchHelpArticlesArgs,
    ) -> Result<SearchHelpArticlesOutput, ToolError> {
        Ok(SearchHelpArticlesOutput { articles: vec![] })
    }

    async fn get_order_status(
        &self,
        _ctx: &CallContext,
        args: GetOrderStatusArgs,
    ) -> Result<GetOrderStatusOutput, ToolError> {
        match args.order_number.as_str() {
            "AB-123456" => Ok(GetOrderStatusOutput {
                status: GetOrderStatusOutputStatus::Shipped,
                eta: Some("2026-12-24".into()),
            }),
            _ => Err(ToolError::new("no such order").with_code("not_found")),
        }
    }
}

pub async fn order_status() -> Result<String, Box<dyn std::error::Error>> {
    let registry = support::registry(Desk)?;
    let output_json = registry
        .call("get_order_status", r#"{"order_number":"AB-123456"}"#)
        .await?;
    Ok(output_json) // {"status":"shipped","eta":"2026-12-24"}
}
