//! Membership tests on the names a schema lists (`required`, `properties`).

use foldhash::HashSet;

/// A set of names: scanned while it holds the usual handful, hashed when a schema lists
/// thousands, so that testing every property of an object against it stays linear. The names
/// keep their order for suggestions and messages.
#[derive(Debug)]
pub struct NameSet<'a> {
    names: Vec<&'a str>,
    hashed: Option<HashSet<&'a str>>,
}

/// Up to this many names are scanned.
const SCANNED: usize = 16;

impl<'a> NameSet<'a> {
    pub fn contains(&self, name: &str) -> bool {
        match &self.hashed {
            Some(hashed) => hashed.contains(name),
            None => self.names.contains(&name),
        }
    }

    /// The names in their original order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.names.iter().copied()
    }
}

impl<'a> FromIterator<&'a str> for NameSet<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> NameSet<'a> {
        let names: Vec<&str> = names.into_iter().collect();
        let hashed = (names.len() > SCANNED).then(|| names.iter().copied().collect());
        NameSet { names, hashed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_and_many_answer_alike() {
        for count in [0, 3, 16, 17, 5_000] {
            let names: Vec<String> = (0..count).map(|i| format!("p{i}")).collect();
            let set: NameSet = names.iter().map(String::as_str).collect();
            assert!(names.iter().all(|n| set.contains(n)), "{count}");
            assert!(!set.contains("q"), "{count}");
            assert!(
                set.iter().eq(names.iter().map(String::as_str)),
                "order kept"
            );
        }
    }
}
