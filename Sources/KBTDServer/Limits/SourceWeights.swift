import KBTDCore
import KBTDStore
import Synchronization

/// Applies the poisoning defence (`SourcePolicy`) to each batch before it is
/// queued: untrusted client networks get capped votes and are named as the
/// batch's source (their keyed hash); trusted peers pass unchanged.
final class SourceWeights: Sendable {
    private let policy: Mutex<SourcePolicy>
    /// The secret client networks are hashed under (`SourceKeyFile`).
    private let key: SourceKey

    init(maxVotesPerSource: Int, maxEntriesPerSource: Int, key: SourceKey) {
        self.key = key
        var policy = SourcePolicy(maxVotesPerSource: Int64(maxVotesPerSource))
        policy.maxEntriesPerSource = maxEntriesPerSource
        self.policy = Mutex(policy)
    }

    func update(maxVotesPerSource: Int, maxEntriesPerSource: Int) {
        policy.withLock {
            $0.maxVotesPerSource = Int64(maxVotesPerSource)
            $0.maxEntriesPerSource = maxEntriesPerSource
        }
    }

    /// The batch's source: `.trusted` for trusted peers, else its client network's keyed hash.
    func source(of context: KBTDRequestContext, trusted: TrustedPeers) -> SourceID {
        let isTrusted = switch trusted {
        case .local: context.isLocalPeer
        case .unix: context.isUnixPeer
        case .none: false
        }
        return isTrusted ? .trusted : SourceID(network: context.clientNetwork, key: key)
    }

    func weigh(_ delta: inout AggregateDelta, source: SourceID, now: Double) {
        guard source != .trusted else { return }
        policy.withLock { $0.apply(to: &delta, source: source, now: now) }
    }

    /// Votes refused today because a source's or the ledger's budget was spent, and entries tracked.
    var ledger: (refusedVotes: Int64, entries: Int) { policy.withLock { ($0.refusedVotes, $0.trackedEntries) } }
}
