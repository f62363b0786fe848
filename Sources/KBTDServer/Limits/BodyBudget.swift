import Synchronization

/// The one budget for request bodies in flight, shared by every path that reads one (the router,
/// the HTTP/1.1 batch path, h2 batch streams and h2 router streams, TLS or not): the bytes a body
/// holds while it arrives (compressed, as sent) and, once whole, its inflated JSON until the
/// intake has counted it. Each client network (IPv4 address, IPv6 /64) may hold at most a quarter
/// of `body_budget_bytes`, each network group (IPv4 /16, IPv6 /48) half, and all bodies together
/// the whole; a body that cannot get room is refused at once (503, `Retry-After`), before it holds
/// more. Without it, a body that never ends held what it had inflated so far (up to
/// `max_decompressed_bytes` each) for as long as its connection stayed open, with no bound over
/// connections or streams.
///
///     let lease = budget.lease(network: context.clientNetwork, group: context.clientGroup)
///     if let scope = lease.resize(to: held.capacity, limit: limits.bodyBudgetBytes) { refuse(scope) }
final class BodyBudget: Sendable {
    /// Which share ran out, for the refusal's text.
    enum Scope: String, Sendable {
        case client, group, total
    }

    private struct State {
        var total = 0
        var networks: [String: Int] = [:]
        var groups: [String: Int] = [:]
    }

    private let state = Mutex(State())

    /// Bytes all bodies hold now (`kbtd_body_bytes_held`).
    var held: Int { state.withLock { $0.total } }

    /// A lease for one body from `network` in `group` (`ClientNetwork.of` and `.group`), holding nothing yet.
    func lease(network: String, group: String) -> BodyLease {
        BodyLease(budget: self, network: network, group: group)
    }

    /// Moves a lease from `old` to `new` bytes; nil when it fits (or shrinks), else the share that
    /// ran out (and nothing changes).
    fileprivate func move(network: String, group: String, from old: Int, to new: Int, limit: Int) -> Scope? {
        state.withLock { state in
            let change = new - old
            if change > 0 {
                if (state.networks[network] ?? 0) + change > limit / 4 { return .client }
                if (state.groups[group] ?? 0) + change > limit / 2 { return .group }
                if state.total + change > limit { return .total }
            }
            state.total += change
            Self.add(change, to: &state.networks, network)
            Self.add(change, to: &state.groups, group)
            return nil
        }
    }

    private static func add(_ change: Int, to shares: inout [String: Int], _ key: String) {
        let now = (shares[key] ?? 0) + change
        if now <= 0 { shares[key] = nil } else { shares[key] = now }
    }
}

/// What one request body holds of the `BodyBudget`; given back when the lease is released or
/// deinitialised, so a body dropped on any path (a refusal, a reset stream, a closed connection)
/// returns its share.
final class BodyLease: Sendable {
    private let budget: BodyBudget
    private let network: String
    private let group: String
    private let bytes = Mutex(0)

    fileprivate init(budget: BodyBudget, network: String, group: String) {
        self.budget = budget
        self.network = network
        self.group = group
    }

    /// The bytes held under this lease.
    var held: Int { bytes.withLock { $0 } }

    /// Holds `count` bytes instead of what it held; nil when granted, else the share that ran out
    /// (the lease keeps what it held).
    func resize(to count: Int, limit: Int) -> BodyBudget.Scope? {
        bytes.withLock { held in
            if let refused = budget.move(network: network, group: group, from: held, to: count, limit: limit) { return refused }
            held = count
            return nil
        }
    }

    /// Gives back everything held.
    func release() {
        bytes.withLock { held in
            _ = budget.move(network: network, group: group, from: held, to: 0, limit: .max)
            held = 0
        }
    }

    deinit {
        release()
    }
}
