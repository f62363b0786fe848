import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Where a listener gets its socket.
public enum ListenerSocket: Sendable, CustomStringConvertible {
    case tcp(ListenAddress)
    case unix(path: String)
    /// A listening fd handed over by systemd (socket activation).
    case inherited(InheritedSocket)

    public var description: String {
        switch self {
        case .tcp(let address): address.description
        case .unix(let path): path
        case .inherited(let socket): "fd \(socket.fd) (\(socket.name))"
        }
    }
}

/// One listener (HTTP/1.1, or TLS with HTTP/2 and HTTP/1.1: ListenerChannel) as a ServiceLifecycle service.
///
/// Hummingbird 2.28's `BindAddress` cannot adopt an fd systemd passed, so
/// every listener (bound here or inherited) is built the same way: SwiftNIO's
/// `ServerBootstrap` plus HummingbirdCore's HTTP/1.1 handlers (`HTTP1Connection`) serving the one
/// router. On graceful shutdown it stops accepting and lets open connections
/// finish their current request (NIOExtras' quiescing helper), and returns once they are closed.
///
/// The TCP accept path is nginx's with `reuseport`: every event loop has a listening socket of
/// its own on the address (`ListeningSocket`) and keeps the connections it accepts, so a
/// connection is accepted, set up, handshaken and served on one thread without a hop to another
/// loop or to the async side. A Unix socket or one systemd passed has one accepting channel, whose
/// connections go to every loop in turn, as before. Only `ListenerChannel.Work`
/// (what the router answers) reaches this service's task group, one task per HTTP/1.1 connection or
/// routed h2 stream.
public struct HTTPListener: Service {
    let socket: ListenerSocket
    let channel: ListenerChannel
    let group: any EventLoopGroup
    let logger: Logger
    let connections: ConnectionLimiter
    let onRunning: @Sendable (SocketAddress?) async -> Void

    /// One accepting channel and the helper that quiesces it and its connections.
    private struct Acceptor {
        let channel: any Channel
        let quiescing: ServerQuiescingHelper
    }

    public func run() async throws {
        let (work, route) = AsyncStream.makeStream(of: ListenerChannel.Work.self)
        let acceptors: [Acceptor]
        do {
            acceptors = try await bind { item in
                if case .terminated = route.yield(item) {
                    // The listener has stopped serving (only after its connections closed): nothing to serve it.
                    item.channel.close(promise: nil)
                }
            }
        } catch {
            route.finish()
            throw CannotListen(address: socket.description, reason: "\(error)")
        }
        // Stops accepting, quiesces every connection and ends the work once all are closed. Once only.
        let stopping = Mutex(false)
        let stop: @Sendable () -> Void = {
            guard stopping.withLock({ was in defer { was = true }; return !was }) else { return }
            let closed = acceptors.map { acceptor in
                let promise = acceptor.channel.eventLoop.makePromise(of: Void.self)
                acceptor.quiescing.initiateShutdown(promise: promise)
                return promise.futureResult
            }
            EventLoopFuture.whenAllComplete(closed, on: acceptors[0].channel.eventLoop).whenComplete { _ in
                route.finish()
            }
        }
        for acceptor in acceptors {
            acceptor.channel.closeFuture.whenComplete { [logger, socket] _ in
                if !stopping.withLock({ $0 }) {
                    logger.error("listener \(socket) stopped accepting")
                }
                stop()
            }
        }
        await withGracefulShutdownHandler {
            await onRunning(acceptors[0].channel.localAddress)
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { tasks in
                    for await item in work {
                        tasks.addTask { await channel.handle(item, logger: logger) }
                    }
                }
            } onCancel: {
                stop()
            }
        } onGracefulShutdown: {
            stop()
        }
    }

    /// The accepting channels: one per event loop on a TCP address, one on a Unix or an inherited socket.
    private func bind(route: @escaping ListenerChannel.Route) async throws -> [Acceptor] {
        let loops = Array(group.makeIterator())
        let descriptors: [CInt]
        switch socket {
        case .tcp(let address):
            descriptors = try ListeningSocket.bind(host: address.host, port: address.port, backlog: 1024, count: loops.count)
        case .unix, .inherited:
            // One socket: one accepting channel, its connections spread over the loops (a second
            // channel polling the same socket would wake for every connection the first accepts).
            let quiescing = ServerQuiescingHelper(group: group)
            let bootstrap = bootstrap(group: group, childGroup: group, quiescing: quiescing, route: route)
            let server: any Channel
            if case .inherited(let inherited) = socket {
                server = try await bootstrap.withBoundSocket(inherited.fd).get()
            } else if case .unix(let path) = socket {
                // Only once this process holds the socket's lock (Daemon), so a live socket is never removed.
                server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            } else {
                preconditionFailure("a TCP socket is bound per loop")
            }
            return [Acceptor(channel: server, quiescing: quiescing)]
        }
        var acceptors: [Acceptor] = []
        var pending = descriptors[...]
        do {
            for loop in loops {
                guard let fd = pending.popFirst() else { break }
                let quiescing = ServerQuiescingHelper(group: loop)
                let server: any Channel
                do {
                    server = try await bootstrap(group: loop, childGroup: loop, quiescing: quiescing, route: route)
                        .withBoundSocket(fd).get()
                } catch {
                    ListeningSocket.close(fd)
                    throw error
                }
                acceptors.append(Acceptor(channel: server, quiescing: quiescing))
            }
        } catch {
            for fd in pending { ListeningSocket.close(fd) }
            for acceptor in acceptors { try? await acceptor.channel.close() }
            throw error
        }
        return acceptors
    }

    /// A server bootstrap accepting on `group` and serving its connections on `childGroup`, each one set up
    /// (connection limit, PROXY header, TLS, HTTP) by `ListenerChannel` on its event loop.
    private func bootstrap(group: any EventLoopGroup, childGroup: any EventLoopGroup, quiescing: ServerQuiescingHelper,
                           route: @escaping ListenerChannel.Route) -> ServerBootstrap {
        ServerBootstrap(group: group, childGroup: childGroup)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            // One accept per readiness, as nginx (multi_accept off): no accept4 ending in EAGAIN after
            // every connection; the listening socket stays ready while more wait.
            .serverChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .serverChannelInitializer { server in
                server.eventLoop.makeCompletedFuture {
                    try server.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: server))
                }
            }
            .childChannelInitializer { [channel, logger, connections] child in
                guard connections.admit(child, fromTrustedProxy: channel.clients.isTrustedProxy(child.remoteAddress)) else {
                    return child.eventLoop.makeFailedFuture(ConnectionLimitReached())
                }
                return channel.setup(channel: child, logger: logger, route: route)
            }
    }
}

/// A listener that could not bind (address in use, no permission, no such address).
public struct CannotListen: Error, CustomStringConvertible, Sendable {
    public var address: String
    public var reason: String
    public var description: String { "cannot listen on \(address): \(reason)" }
}

/// A connection over `max_connections`: closed before any byte is read.
struct ConnectionLimitReached: Error {}
