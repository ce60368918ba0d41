//! The executors of the support manifest's server tools, over the examples' shared support desk
//! (the `support-desk` crate). Kept free of other crate paths except `crate::support`, so the
//! location-rule compile-fail tests can compile this exact file against modified manifests.

use std::sync::LazyLock;

use support_desk::Data;
use toolc_runtime::{CallContext, ToolError};

use crate::support::{
    GetOrderStatusArgs, GetOrderStatusOutput, SearchHelpArticlesArgs, SearchHelpArticlesOutput,
    SearchHelpArticlesOutputArticlesItem, SupportServer,
};

/// The bundled support desk, parsed on first use.
static DATA: LazyLock<Result<Data, String>> = LazyLock::new(Data::bundled);

fn data() -> Result<&'static Data, ToolError> {
    DATA.as_ref()
        .map_err(|e| ToolError::new(format!("the bundled support desk is broken: {e}")))
}

/// The executors of the support manifest's server tools.
#[derive(Debug, Default, Clone)]
pub struct SupportDesk {
    _private: (),
}

impl SupportDesk {
    pub fn new() -> SupportDesk {
        SupportDesk::default()
    }
}

impl SupportServer for SupportDesk {
    async fn search_help_articles(
        &self,
        _ctx: &CallContext,
        args: SearchHelpArticlesArgs,
    ) -> Result<SearchHelpArticlesOutput, ToolError> {
        let limit = usize::try_from(args.limit).unwrap_or(0);
        let articles = data()?
            .search(&args.query, limit)
            .into_iter()
            .map(|a| SearchHelpArticlesOutputArticlesItem {
                id: a.id.clone(),
                title: a.title.clone(),
                summary: a.summary.clone(),
                section: a.section.clone(),
            })
            .collect();
        Ok(SearchHelpArticlesOutput { articles })
    }

    /// Only the caller's own orders are found: someone else's order reads exactly like one that
    /// does not exist, so the tool cannot be used to probe which numbers are real.
    async fn get_order_status(
        &self,
        ctx: &CallContext,
        args: GetOrderStatusArgs,
    ) -> Result<GetOrderStatusOutput, ToolError> {
        let Some(customer) = ctx.principal() else {
            return Err(ToolError::new(
                "order lookups need a signed-in customer; ask the customer to sign in first",
            )
            .with_code("not_signed_in"));
        };
        let found = data()?.order_of(Some(customer.id()), &args.order_number);
        // The generated enum reads the status as the manifest spells it.
        let status = found.map(|o| serde_json::from_value(serde_json::json!(o.status)));
        match (found, status) {
            (Some(order), Some(Ok(status))) => Ok(GetOrderStatusOutput {
                status,
                eta: order.eta.clone(),
            }),
            (Some(order), _) => Err(ToolError::new(format!(
                "order {} has a status the manifest does not know: {}",
                order.order_number, order.status
            ))),
            (None, _) => Err(ToolError::new(format!(
                "there is no order {}; ask the customer to check the number on the receipt",
                args.order_number
            ))
            .with_code("order_not_found")),
        }
    }
}
