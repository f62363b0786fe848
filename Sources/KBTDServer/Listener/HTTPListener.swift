import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

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
/// `ServerBootstrap` plus HummingbirdCore's `HTTP1Channel` serving the one
/// router. On graceful shutdown it stops accepting and lets open connections
/// finish their current request (NIOExtras' quiescing helper).
public struct HTTPListener: Service {
    let socket: ListenerSocket
    let channel: ListenerChannel
    let group: any EventLoopGroup
    let logger: Logger
    let connections: ConnectionLimiter
    let onRunning: @Sendable (SocketAddress?) async -> Void

    public func run() async throws {
        let quiescing = ServerQuiescingHelper(group: group)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
        let childSetup: @Sendable (any Channel) -> EventLoopFuture<ListenerChannel.Value> = {
            [channel, logger, connections] child in
            guard connections.admit(child, fromTrustedProxy: channel.clients.isTrustedProxy(child.remoteAddress)) else {
                child.close(promise: nil)
                return child.eventLoop.makeFailedFuture(ConnectionLimitReached())
            }
            return channel.setup(channel: child, logger: logger)
        }
        let server: NIOAsyncChannel<ListenerChannel.Value, Never>
        do {
            switch socket {
            case .tcp(let address):
                server = try await bootstrap.bind(host: address.host, port: address.port, serverBackPressureStrategy: nil,
                                                  childChannelInitializer: childSetup)
            case .unix(let path):
                // Only once this process holds the socket's lock (Daemon), so a live socket is never removed.
                server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true,
                                                  serverBackPressureStrategy: nil, childChannelInitializer: childSetup)
            case .inherited(let inherited):
                server = try await bootstrap.bind(inherited.fd, serverBackPressureStrategy: nil, childChannelInitializer: childSetup)
            }
        } catch {
            throw CannotListen(address: socket.description, reason: "\(error)")
        }
        await withGracefulShutdownHandler {
            await onRunning(server.channel.localAddress)
            await withDiscardingTaskGroup { tasks in
                do {
                    try await server.executeThenClose { inbound in
                        for try await connection in inbound {
                            tasks.addTask { await channel.handle(value: connection, logger: logger) }
                        }
                    }
                } catch {
                    logger.error("listener \(socket) stopped accepting: \(error)")
                }
            }
        } onGracefulShutdown: {
            quiescing.initiateShutdown(promise: nil)
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
