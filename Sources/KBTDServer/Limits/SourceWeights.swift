import KBTDCore
import Synchronization

/// Applies the poisoning defence (`SourcePolicy`) to each batch before it is
/// queued: untrusted client networks get capped votes and are named as the
/// batch's source; trusted peers pass unchanged.
final class SourceWeights: Sendable {
    private let policy: Mutex<SourcePolicy>

    init(maxVotesPerSource: Int) {
        policy = Mutex(SourcePolicy(maxVotesPerSource: Int64(maxVotesPerSource)))
    }

    func update(maxVotesPerSource: Int) {
        policy.withLock { $0.maxVotesPerSource = Int64(maxVotesPerSource) }
    }

    func weigh(_ delta: inout AggregateDelta, context: KBTDRequestContext, trusted: TrustedPeers, now: Double) {
        let isTrusted = switch trusted {
        case .local: context.isLocalPeer
        case .unix: context.isUnixPeer
        case .none: false
        }
        guard !isTrusted else { return }
        let source = SourceID(network: ClientRateLimiter.clientKey(context.remoteAddress))
        policy.withLock { $0.apply(to: &delta, source: source, now: now) }
    }
}
