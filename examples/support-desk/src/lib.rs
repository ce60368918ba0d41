//! The one support desk every example serves: a help centre (`data/help-articles.json`, one
//! `section` per section of the voice agent's page) and an order book with the customer each
//! order belongs to (`data/orders.json`). The examples differ in how they reach the model, not
//! in what the shop knows, so an order has the same status in all of them.
//!
//! Nothing here knows about tools: the examples' executors call [`Data::search`] and
//! [`Data::order_of`] and shape the results as their manifests say.

use serde::{Deserialize, Serialize};

const ARTICLES_JSON: &str = include_str!("../data/help-articles.json");
const ORDERS_JSON: &str = include_str!("../data/orders.json");

/// One help article as bundled.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Article {
    /// Stable id, as results quote it.
    pub id: String,
    /// The article's title.
    pub title: String,
    /// What the article says, in a sentence or two.
    pub summary: String,
    /// The `id` of the page section that explains it.
    pub section: String,
    /// Words a customer might use that the title and summary do not.
    #[serde(default, skip_serializing)]
    pub keywords: Vec<String>,
}

/// One order as bundled; `status` and `eta` are what `get_order_status` returns.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Order {
    /// The number on the receipt (`AB-123456`).
    pub order_number: String,
    /// Who placed it: the principal id a signed-in caller has.
    #[serde(skip_serializing)]
    pub customer: String,
    /// `placed`, `packed`, `shipped`, `delivered` or `cancelled`.
    pub status: String,
    /// Expected delivery date (ISO 8601), when there is one.
    pub eta: Option<String>,
}

/// The bundled help centre and order book.
#[derive(Debug)]
pub struct Data {
    /// Help articles, in their bundled order (which breaks ranking ties).
    pub articles: Vec<Article>,
    /// Every order of every customer.
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
    /// 3, in the keywords 2, in the summary 1 (at most 2 per word); words match on a shared
    /// prefix of at least four letters, so "refunded" finds "refund". Ties keep the bundled
    /// order, so the ranking is deterministic; articles that match nothing are left out.
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

    /// The order with this number, whoever placed it.
    pub fn order(&self, order_number: &str) -> Option<&Order> {
        self.orders.iter().find(|o| o.order_number == order_number)
    }

    /// The order with this number as `customer` may see it: with a signed-in customer only
    /// their own orders are found, and someone else's reads exactly like one that does not
    /// exist, so the tool cannot be used to probe which numbers are real. Without one (a relay
    /// on loopback for development) there is no caller to tell apart, and every order is found.
    pub fn order_of(&self, customer: Option<&str>, order_number: &str) -> Option<&Order> {
        self.order(order_number)
            .filter(|o| customer.is_none_or(|c| c == o.customer))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_data_parses_and_is_consistent() {
        let data = Data::bundled().unwrap();
        assert!(data.articles.len() >= 5);
        let mut numbers: Vec<&str> = data
            .orders
            .iter()
            .map(|o| o.order_number.as_str())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), data.orders.len(), "order numbers are unique");
        for order in &data.orders {
            let known = ["placed", "packed", "shipped", "delivered", "cancelled"];
            assert!(known.contains(&order.status.as_str()), "{order:?}");
            // Only orders still on their way have a date.
            let on_the_way = matches!(order.status.as_str(), "placed" | "packed" | "shipped");
            assert_eq!(order.eta.is_some(), on_the_way, "{order:?}");
        }
    }

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
    fn search_ranks_by_matching_words() {
        let data = Data::bundled().unwrap();
        let ids = |q: &str, n| -> Vec<String> {
            data.search(q, n).iter().map(|a| a.id.clone()).collect()
        };
        assert_eq!(ids("how do I get a refund", 1), ["request-refund"]);
        assert_eq!(ids("cancel my order", 1), ["cancel-order"]);
        assert!(ids("zzzz", 3).is_empty());
        assert_eq!(ids("refund", 10).len(), data.search("refund", 10).len());
    }

    #[test]
    fn a_signed_in_customer_finds_only_their_own_orders() {
        let data = Data::bundled().unwrap();
        assert_eq!(data.order_of(None, "CD-000001").unwrap().customer, "bob");
        assert_eq!(
            data.order_of(Some("alice"), "AB-123456").unwrap().status,
            "delivered"
        );
        assert!(data.order_of(Some("alice"), "CD-000001").is_none());
        assert!(data.order_of(Some("alice"), "ZZ-999999").is_none());
        // What a result shows: no customer, no keywords.
        let shown = serde_json::to_value(data.order("AB-654321").unwrap()).unwrap();
        assert_eq!(
            shown,
            serde_json::json!({"order_number": "AB-654321", "status": "shipped", "eta": "2026-12-04"})
        );
    }
}
