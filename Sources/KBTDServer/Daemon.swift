import Foundation
import Hummingbird
import HummingbirdCore
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The process around a `KBTDApp`: binds (or adopts from systemd) the
/// listeners, runs them with SIGHUP reload and systemd supervision until
/// SIGTERM/SIGINT, then drains the write queue and commits before returning.
public struct Daemon: Sendable {
    /// The settings at start; the running ones live in the app (`KBTDApp.settings`).
    public let settings: ServerSettings
    public let logger: Logger
    let logLevel: LogLevelControl
    let reload: (@Sendable () throws -> ServerSettings)?

    /// - Parameters:
    ///   - reload: re-reads the configuration on SIGHUP (nil: SIGHUP is not handled).
    public init(settings: ServerSettings, logger: Logger, logLevel: LogLevelControl,
                reload: (@Sendable () throws -> ServerSettings)? = nil) {
        self.settings = settings
        self.logger = logger
        self.logLevel = logLevel
        self.reload = reload
    }

    public func run() async throws {
        let initial = settings
        // Reads the TLS pair first: a bad one is exit 78 before the database is touched.
        let transport = try Transport(initial)
        // A postgres:// URL: a shared database, several nodes (PostgresNode, docs/scaling-out.md).
        let postgres = try await StoreLocation(database: initial.database).node(initial, logger: logger)
        let app = try KBTDApp(settings: initial, logger: logger, logLevel: logLevel, postgres: postgres)
        var socketLock: ExclusiveLock?
        if let socket = initial.unixSocket, SocketActivation.inheritedSockets().isEmpty {
            do {
                socketLock = try ExclusiveLock(path: socket + ".lock", what: "Unix socket", mode: 0o600)
            } catch {
                await app.shutdown()
                throw error
            }
        }
        let channels = app.channels(limits: initial.limits, logger: logger, clients: transport.clients)

        let sockets = Self.listenerSockets(initial, logger: logger)
        let ready = ReadinessGate()
        let listening = Mutex(0)
        let logger = self.logger
        let group = MultiThreadedEventLoopGroup.singleton
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = sockets.map { socket in
            .init(service: HTTPListener(socket: socket, channel: transport.channel(for: socket, settings: initial, channels: channels,
                                                                                    metrics: app.metrics),
                                        group: group, logger: logger, connections: app.connections) { address in
                if let path = address?.pathname, chmod(path, mode_t(initial.unixSocketMode)) != 0 {
                    logger.error("cannot set mode \(String(initial.unixSocketMode, radix: 8)) on \(path): errno \(errno)")
                }
                let speaks = Transport.options(for: socket, initial)
                logger.notice("listening on \(Self.describe(address, socket))\(speaks.tls ? " (TLS, HTTP/2)" : "")\(speaks.proxyProtocol ? " (PROXY protocol)" : "")")
                if listening.withLock({ $0 += 1; return $0 }) == sockets.count {
                    logger.notice("kbtd ready")
                    ready.open()
                }
            })
        }
        if let reload {
            let hangups = await UnixSignalsSequence(trapping: .sighup)
            services.append(.init(service: ReloadOnHangup(hangups: hangups, load: reload, apply: { new in
                app.reload(new)
                transport.reload(new, logger: logger)
            }, logger: logger), successTerminationBehavior: .ignore))
        }
        if let notify = SystemdNotify() {
            let writer = app.writer
            // Last in the list: on SIGTERM it is told first, so STOPPING=1 goes out before the listeners drain.
            services.append(.init(service: SystemdSupervision(
                notify: notify, watchdog: SystemdNotify.watchdogInterval(), ready: ready, eventLoops: group,
                writerHeartbeatAge: { writer.heartbeatAge }, status: { app.status }, logger: logger),
                successTerminationBehavior: .ignore))
        }
        let serviceGroup = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await serviceGroup.run()
        } catch {
            await app.shutdown()
            throw error
        }
        logger.notice("listeners closed; committing what is queued")
        await app.shutdown()
        withExtendedLifetime(socketLock) {}
        logger.notice("kbtd stopped")
    }

    /// Inherited sockets win over configured addresses: under systemd the
    /// socket unit owns the addresses.
    static func listenerSockets(_ settings: ServerSettings, logger: Logger) -> [ListenerSocket] {
        let inherited = SocketActivation.inheritedSockets()
        if !inherited.isEmpty {
            logger.notice("socket activation: adopting \(inherited.count) listening socket(s); configured listen addresses are not used")
            return inherited.map { .inherited($0) }
        }
        var sockets: [ListenerSocket] = settings.listen.map { .tcp($0) }
        // A stale socket file from a previous run is removed by the bind (cleanupExistingSocketFile).
        if let path = settings.unixSocket { sockets.append(.unix(path: path)) }
        return sockets
    }

    static func describe(_ address: SocketAddress?, _ socket: ListenerSocket) -> String {
        guard let address else { return socket.description }
        if let path = address.pathname { return path }
        let host = address.ipAddress ?? "?"
        let port = address.port.map(String.init) ?? "?"
        let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if case .inherited(let inherited) = socket { return "\(text) (fd \(inherited.fd), \(inherited.name))" }
        return text
    }
}
