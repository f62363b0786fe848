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

    /// The network group of an untrusted batch (`ClientNetwork.group`), hashed as sources are.
    func group(of context: KBTDRequestContext) -> SourceID { SourceID(network: context.clientGroup, key: key) }

    /// Weighs an untrusted batch's votes (`SourcePolicy.apply`); returns what the day's ledger
    /// gained, which the store persists with the batch.
    func weigh(_ delta: inout AggregateDelta, source: SourceID, group: SourceID, screen: ScreenSize?, now: Double) -> [LedgerIncrement] {
        guard source != .trusted else { return [] }
        return policy.withLock { $0.apply(to: &delta, source: source, group: group, screen: screen, now: now) }
    }

    /// Another node's spending of the day's ledger (PostgreSQL catch-up).
    func absorb(_ ledger: SourceLedger) {
        policy.withLock { $0.absorb(ledger) }
    }

    /// Start-up: today's ledger as the store kept it (an older day's is ignored).
    func restore(_ ledger: SourceLedger) {
        policy.withLock { $0.restore(day: ledger.day, ledger.votes) }
    }

    /// Votes refused today because a source's or the ledger's budget was spent, votes for heights
    /// no keyboard has, and entries tracked.
    var ledger: (refusedVotes: Int64, implausibleVotes: Int64, entries: Int) {
        policy.withLock { ($0.refusedVotes, $0.implausibleVotes, $0.trackedEntries) }
    }
}
