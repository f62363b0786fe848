import OrderedCollections

/// A dictionary for the index's largest tables (a key's slot, an indexed key's support): its keys
/// and values in two dense arrays, found through a hash table of bit-packed positions
/// (swift-collections' `OrderedDictionary`), where `Dictionary` keeps a key and a value in
/// every bucket, empty ones included. Both hold at most three quarters of their buckets, so after
/// a doubling most buckets are empty: at 100,000 keys `Dictionary` has 262,144 buckets of 20 to 40
/// bytes, this one 262,144 positions of 18 bits beside arrays of the keys it holds
/// (`Benchmarks/keys`, BENCHMARKS.md).
///
/// The order of its elements is no promise (as `Dictionary`'s): a removal moves the last element
/// into the removed one's place, so removing costs O(1), not a shift of every later element.
struct CompactMap<Key: Hashable, Value> {
    private var storage: OrderedDictionary<Key, Value> = [:]

    init() {}

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var keys: OrderedSet<Key> { storage.keys }
    var values: OrderedDictionary<Key, Value>.Values { storage.values }

    subscript(key: Key) -> Value? {
        get { storage[key] }
        set {
            if let newValue {
                storage[key] = newValue
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Removes `key`'s element; the last element takes its place.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let position = storage.index(forKey: key) else { return nil }
        let last = storage.count - 1
        if position != last { storage.swapAt(position, last) }
        return storage.removeLast().value
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        storage.reserveCapacity(minimumCapacity)
    }
}

extension CompactMap: Sequence {
    func makeIterator() -> OrderedDictionary<Key, Value>.Iterator { storage.makeIterator() }
    var underestimatedCount: Int { storage.count }
}

extension CompactMap: Sendable where Key: Sendable, Value: Sendable {}
