import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// kbtd's HTTP/1.1 channel and HTTP/2 connection serving one app: what every listener stacks under
/// its optional PROXY header and TLS (`ListenerChannel`).
struct HTTPChannels: Sendable {
    let http1: HTTP1Connection
    let http2: HTTP2Connection
}

/// Hummingbird's `HTTP1Channel` (its `handleHTTP` serves the router) with `HTTP1FastAnswerHandler` between
/// NIO's parser and the conversion to HTTP types: it keeps every request's deadlines and answers cached heights
/// and parser errors from NIO's parts. After the conversion, what only the router's requests need.
struct HTTP1Connection: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    let responder: Responder
    let front: Front
    let deadlines: RequestDeadlines

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldCount = 1000  // Hummingbird's (`HTTP1Channel.Configuration.DecoderConfiguration`)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false,
                                                     withOutboundHeaderValidation: false, withEncoderConfiguration: .init(),
                                                     withDecoderLimitConfiguration: limits)
            try pipeline.addHandlers([HTTP1FastAnswerHandler(front, deadlines: deadlines), HTTP1ToHTTPServerCodec(secure: false),
                                      ExpectContinueHandler(front), HTTPConnectionStateHandler(idleTimeout: nil, logger: logger)])
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

extension KBTDApp {
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
        // The idle deadline is kept with the head and body ones (absolute, one timer): Hummingbird's idle timer
        // restarts on every read and would be a second timer. An h2 stream the router serves gets the same
        // deadlines and `100 Continue`, after its codec.
        let deadlines = RequestDeadlines(limits)
        return HTTPChannels(
            http1: HTTP1Connection(responder: responder, front: front, deadlines: deadlines),
            http2: HTTP2Connection(streamHandlers: { [RequestDeadlineHandler(deadlines), ExpectContinueHandler(front)] },
                                   front: front, clients: clients, deadlines: deadlines))
    }
}
