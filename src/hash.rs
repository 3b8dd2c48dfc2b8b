//! The hash maps and sets of the whole crate: std's, with foldhash's fixed
//! hasher instead of SipHash. Keys here are term ids, symbols and names of
//! the program being checked, not adversarial input; hashing them was a
//! quarter of building an access model. Fixed (not randomly seeded): runs
//! iterate alike.

/// A `std::collections::HashMap` with the crate's hasher.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// A `std::collections::HashSet` with the crate's hasher.
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::FixedState>;
