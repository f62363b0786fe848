import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1.1 channel and kbtd's HTTP/2 connection serving one app: what every listener
/// stacks under its optional PROXY header and TLS (`ListenerChannel`).
struct HTTPChannels: Sendable {
    let http1: HTTP1Channel
    let http2: HTTP2Connection
}

extension KBTDApp {
    /// The handlers each request passes after Hummingbird's codec, on an HTTP/1.1 connection and on
    /// an h2 stream alike: the slowloris deadlines see every request and every answer; `100 Continue`
    /// goes out as soon as the front allows. An HTTP/1.1 connection then gets `HTTP1FastAnswerHandler`
    /// (parser errors and cached heights, without the router).
    func requestHandlers(limits: ServerSettings.Limits, http1: Bool) -> [any RemovableChannelHandler] {
        [RequestDeadlineHandler(RequestDeadlines(limits)), ExpectContinueHandler(front)] + (http1 ? [HTTP1FastAnswerHandler(front)] : [])
    }

    /// The channels that answer with this app, adding the `Date` header (`Front.date`) Hummingbird's
    /// `Application` would add. Each request's context carries the client `clients` resolves (the peer, or the
    /// client a trusted proxy names).
    func channels(limits: ServerSettings.Limits, logger: Logger, clients: ClientAddressResolver) -> HTTPChannels {
        let front = self.front
        let responder: HTTPChannelHandler.Responder = { [self] request, writer, channel in
            let client = clients.clientAddress(channel: channel, headers: request.headers)
            var requestLogger = logger
            if let client, client != channel.remoteAddress {
                requestLogger[metadataKey: "client"] = "\(client.ipAddress ?? "\(client)")"
            }
            let context = KBTDRequestContext(source: KBTDRequestSource(logger: requestLogger, remoteAddress: client))
            var response = await respond(to: request, context: context)
            response.headers[.date] = front.date()
            try await writer.write(response: response.head, body: response.body)
        }
        // RequestDeadlineHandler keeps the idle deadline with the head and body ones (absolute, one timer):
        // Hummingbird's idle timer restarts on every read and would be a second timer.
        var connection = HTTP1Channel.Configuration(idleTimeout: nil)
        connection.additionalChannelHandlers = { [self] in requestHandlers(limits: limits, http1: true) }
        return HTTPChannels(
            http1: HTTP1Channel(responder: responder, configuration: connection),
            http2: HTTP2Connection(streamHandlers: { [self] in requestHandlers(limits: limits, http1: false) }, front: front,
                                   clients: clients, deadlines: RequestDeadlines(limits)))
    }
}
