import KBTDCore

extension SourceID {
    /// A client network's identifier under a fixed test key: the tests that count sources
    /// only need distinct networks to have distinct identifiers.
    package init(network: String) { self.init(network: network, key: SourceKey(k0: 0x6B62_7464, k1: 0x7465_7374)) }
}
