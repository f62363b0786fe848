import NIOCore
import Synchronization

/// Caps concurrent connections: `max_connections` TCP connections across all
/// listeners, `max_connections_per_client` from one client address (IPv4
/// address, IPv6 /64), and `max_connections` more on the Unix socket, which
/// no TCP client can fill, so the operator's tools and health checks always
/// get in. Past a cap a new connection is closed at once, before any byte is read.
final class ConnectionLimiter: Sendable {
    private struct State {
        var maximum: Int
        var perClient: Int
        var tcp = 0
        var unix = 0
        var byClient: [String: Int] = [:]
    }

    private let state: Mutex<State>

    init(maximum: Int, perClient: Int) {
        state = Mutex(State(maximum: maximum, perClient: perClient))
    }

    func setLimits(maximum: Int, perClient: Int) {
        state.withLock {
            $0.maximum = maximum
            $0.perClient = perClient
        }
    }

    /// True when the connection may stay; it is then counted until it closes.
    func admit(_ channel: any Channel) -> Bool {
        let address = channel.remoteAddress
        if case .unixDomainSocket? = address {
            let admitted = state.withLock { state -> Bool in
                guard state.unix < state.maximum else { return false }
                state.unix += 1
                return true
            }
            if admitted { channel.closeFuture.whenComplete { [self] _ in state.withLock { $0.unix -= 1 } } }
            return admitted
        }
        let client = ClientNetwork.of(address)
        let admitted = state.withLock { state -> Bool in
            let mine = state.byClient[client, default: 0]
            guard state.tcp < state.maximum, mine < state.perClient else { return false }
            state.tcp += 1
            state.byClient[client] = mine + 1
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { [self] _ in
                state.withLock { state in
                    state.tcp -= 1
                    let left = state.byClient[client, default: 1] - 1
                    state.byClient[client] = left > 0 ? left : nil
                }
            }
        }
        return admitted
    }
}
