extension Sequence {
    /// The first `k` elements in `areInIncreasingOrder`'s order, sorted: one pass
    /// with a small sorted buffer instead of sorting every key (100k keys, 20 shown).
    public func smallest(_ k: Int, by areInIncreasingOrder: (Element, Element) -> Bool) -> [Element] {
        var best: [Element] = []
        best.reserveCapacity(k + 1)
        for element in self {
            if best.count == k {
                guard let last = best.last, areInIncreasingOrder(element, last) else { continue }
                best.removeLast()
            }
            var low = 0, high = best.count
            while low < high {
                let mid = (low + high) / 2
                if areInIncreasingOrder(element, best[mid]) { high = mid } else { low = mid + 1 }
            }
            best.insert(element, at: low)
        }
        return best
    }
}
