//! The server tools of `manifests/support.tools.yaml` over the demo's bundled data: the help
//! articles that the page itself shows (`data/help-articles.json`, one `section` per page
//! section) and a small order book (`data/orders.json`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toolc_runtime::{typed_executor, Registry, ToolDefinition, ToolError};

const ARTICLES_JSON: &str = include_str!("../data/help-articles.json");
const ORDERS_JSON: &str = include_str!("../data/orders.json");

/// One help article as bundled.
#[derive(Clone, Debug, Deserialize)]
pub struct Article {
    pub id: String,
    pub title: String,
    pub summary: String,
    /// The `id` of the page section that explains it.
    pub section: String,
    /// Words a customer might use that the title and summary do not.
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// One order as bundled; `status` and `eta` are what `get_order_status` returns.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Order {
    pub order_number: String,
    pub status: String,
    pub eta: Option<String>,
}

/// The bundled help centre and order book.
#[derive(Debug)]
pub struct Data {
    pub articles: Vec<Article>,
    pub orders: Vec<Order>,
}

impl Data {
    /// Parses the bundled files (they are compiled in, so this fails only if they were edited
    /// into invalid JSON; the tests parse them too).
    pub fn bundled() -> Result<Data, String> {
        let articles = serde_json::from_str(ARTICLES_JSON)
            .map_err(|e| format!("data/help-articles.json: {e}"))?;
        let orders =
            serde_json::from_str(ORDERS_JSON).map_err(|e| format!("data/orders.json: {e}"))?;
        Ok(Data { articles, orders })
    }

    /// Articles ranked by how well they match the query: a query word found in the title counts
    /// 3, in the keywords 2, in the summary 1; words match on a shared prefix of at least four
    /// letters, so "refunded" finds "refund". Ties keep the bundled order, so the ranking is
    /// deterministic; articles that match nothing are left out.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Article> {
        let terms = words(query);
        let mut scored: Vec<(usize, usize)> = self
            .articles
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let title = words(&a.title);
                let keywords = words(&a.keywords.join(" "));
                let summary = words(&a.summary);
                let score: usize = terms
                    .iter()
                    .map(|t| {
                        3 * hits(t, &title) + 2 * hits(t, &keywords) + hits(t, &summary).min(2)
                    })
                    .sum();
                (score, i)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| &self.articles[i])
            .collect()
    }

    pub fn order(&self, order_number: &str) -> Option<&Order> {
        self.orders.iter().find(|o| o.order_number == order_number)
    }
}

/// Words that say nothing about what the customer wants.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "how", "can", "you", "your", "what", "with", "that", "this", "from",
    "want", "would", "like", "need", "please", "where", "does", "have", "get", "about",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 2 && !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// How many of `words` match `term`.
fn hits(term: &str, words: &[String]) -> usize {
    words.iter().filter(|w| same_stem(term, w)).count()
}

/// Equal, one a prefix of the other of at least four letters ("track", "tracking"), or sharing
/// five letters ("cancelled", "cancellation"): a stemmer's effect without a stemmer.
fn same_stem(a: &str, b: &str) -> bool {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    a == b || (common == shorter && shorter >= 4) || common >= 5
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<u64>,
}

#[derive(Serialize)]
struct ArticleOut<'a> {
    id: &'a str,
    title: &'a str,
    summary: &'a str,
    section: &'a str,
}

#[derive(Deserialize)]
struct OrderArgs {
    order_number: String,
}

#[derive(Deserialize)]
struct RefundArgs {
    order_number: String,
}

/// The manifests' definitions with this demo's three executors. Building the registry checks
/// the location rule, so manifests whose server tools differ from these are refused at startup.
/// `submit_refund_request` needs approval: the relay runs it only after the page said yes.
pub fn registry(definitions: Vec<ToolDefinition>, data: Arc<Data>) -> Result<Registry, String> {
    let search_data = data.clone();
    let order_data = data.clone();
    let refund_data = data;
    Registry::builder()
        .definitions(definitions)
        .executor(
            "search_help_articles",
            typed_executor(move |args: SearchArgs| {
                let data = search_data.clone();
                async move {
                    // The schema's default and bounds; validated already, clamped again so the
                    // executor is safe on its own.
                    let limit = args.limit.unwrap_or(3).clamp(1, 10) as usize;
                    let articles: Vec<serde_json::Value> = data
                        .search(&args.query, limit)
                        .into_iter()
                        .map(|a| {
                            serde_json::json!(ArticleOut {
                                id: &a.id,
                                title: &a.title,
                                summary: &a.summary,
                                section: &a.section,
                            })
                        })
                        .collect();
                    Ok::<_, ToolError>(serde_json::json!({ "articles": articles }))
                }
            }),
        )
        .executor(
            "get_order_status",
            typed_executor(move |args: OrderArgs| {
                let data = order_data.clone();
                async move {
                    match data.order(&args.order_number) {
                        Some(o) => Ok(serde_json::json!({ "status": o.status, "eta": o.eta })),
                        None => Err(ToolError::new(format!(
                            "there is no order {}; ask the customer to read the number on the receipt again",
                            args.order_number
                        ))
                        .with_code("not_found")),
                    }
                }
            }),
        )
        .executor(
            "submit_refund_request",
            typed_executor(move |args: RefundArgs| {
                let data = refund_data.clone();
                async move {
                    match data.order(&args.order_number) {
                        Some(o) if o.status == "delivered" => Ok(serde_json::json!({
                            // The same request for the same order: idempotent, as declared.
                            "request_id": format!("RR-{}", &o.order_number[3..]),
                            "order_number": o.order_number,
                            "status": "submitted",
                        })),
                        Some(o) => Err(ToolError::new(format!(
                            "order {} is {}; refunds are for delivered orders",
                            o.order_number, o.status
                        ))
                        .with_code("not_delivered")),
                        None => Err(ToolError::new(format!(
                            "there is no order {}",
                            args.order_number
                        ))
                        .with_code("not_found")),
                    }
                }
            }),
        )
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(found: &[&Article]) -> Vec<String> {
        found.iter().map(|a| a.id.clone()).collect()
    }

    #[test]
    fn search_ranks_title_and_keyword_matches_first() {
        let data = Data::bundled().unwrap();
        let found = data.search("I'd like a refund for my order", 3);
        assert_eq!(ids(&found)[0], "request-refund");
        assert_eq!(
            ids(&data.search("when will my refund arrive", 1)),
            ["refund-timing"]
        );
        assert_eq!(
            ids(&data.search("forgot my password", 5)),
            ["reset-password"]
        );
        assert_eq!(
            ids(&data.search("shipping abroad customs", 1)),
            ["shipping-abroad"]
        );
    }

    #[test]
    fn search_matches_word_forms_and_respects_the_limit() {
        let data = Data::bundled().unwrap();
        assert_eq!(ids(&data.search("refunded", 1)), ["request-refund"]);
        assert_eq!(ids(&data.search("tracking", 1)), ["track-order"]);
        assert_eq!(data.search("refund return label", 2).len(), 2);
        assert!(data.search("zzzz qqqq", 10).is_empty());
        assert!(
            data.search("the and for", 10).is_empty(),
            "stop words alone"
        );
        assert!(data.search("", 10).is_empty());
    }

    #[test]
    fn stems_need_four_shared_letters() {
        assert!(same_stem("refund", "refunds"));
        assert!(same_stem("track", "tracking"));
        assert!(same_stem("cancelled", "cancellation"));
        assert!(!same_stem("the", "then"));
        assert!(!same_stem("card", "care"));
        assert!(!same_stem("return", "retail"));
    }

    #[test]
    fn orders_are_found_by_number() {
        let data = Data::bundled().unwrap();
        assert_eq!(data.order("AB-123456").unwrap().status, "delivered");
        assert!(data.order("ZZ-000000").is_none());
    }

    #[test]
    fn bundled_orders_fit_the_manifest() {
        let data = Data::bundled().unwrap();
        let pattern_ok = |n: &str| {
            let b = n.as_bytes();
            b.len() == 9
                && b[..2].iter().all(u8::is_ascii_uppercase)
                && b[2] == b'-'
                && b[3..].iter().all(u8::is_ascii_digit)
        };
        for o in &data.orders {
            assert!(pattern_ok(&o.order_number), "{}", o.order_number);
            assert!(
                ["placed", "packed", "shipped", "delivered", "cancelled"]
                    .contains(&o.status.as_str()),
                "{}",
                o.status
            );
        }
    }
}
