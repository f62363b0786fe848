import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import Prometheus
import Synchronization

/// What the thin path for cached answers needs, shared by its two handlers
/// (`CachedAnswerBytesHandler` on a connection's bytes, `CachedAnswerHandler`
/// on its HTTP parts): the router's own `HeightRoutes.reply`, the `Date`
/// header, the counters the router's path bumps, and the answers already
/// rendered as bytes.
struct CachedAnswers: Sendable {
    let routes: HeightRoutes
    let dates: HTTPDate
    let logger: Logger
    private let rendered: RenderedAnswers
    /// `kbtd_fast_answers_total` for HTTP/1.1 connections and for HTTP/2 streams.
    let fastHTTP1: Counter
    let fastHTTP2: Counter

    init(routes: HeightRoutes, dates: HTTPDate, logger: Logger, limitBytes: Int? = nil) {
        self.routes = routes
        self.dates = dates
        self.logger = logger
        rendered = RenderedAnswers(limitBytes: limitBytes ?? routes.settings.current.answerCacheBytes)
        fastHTTP1 = routes.metrics.fastAnswers(protocol: "http/1.1")
        fastHTTP2 = routes.metrics.fastAnswers(protocol: "h2")
    }

    /// Bytes the rendered answers hold now (keys, heads and bodies), at most `answer_cache_bytes`.
    var renderedBytes: Int { rendered.bytes }

    /// The answer to `GET target`, or nil when the router must answer: another
    /// path, a query the reply refuses (the router sends its 400), or the debug
    /// log recording every request (the router's request log does that).
    func reply(target: String, ifNoneMatch: String?) -> (route: String, reply: HeightRoutes.Reply)? {
        guard target.hasPrefix("/v1/height"), logger.logLevel > .debug else { return nil }
        let uri = URI(target)
        guard HeightRoutes.paths.contains(uri.path),
              let reply = try? routes.reply(path: uri.path, query: uri.queryParameters, ifNoneMatch: ifNoneMatch) else { return nil }
        return (uri.path, reply)
    }

    /// The answer's header fields as the router's path sends them (with its
    /// `Content-Length` and `Date`); counts the answer as the router's path does.
    func sending(_ reply: HeightRoutes.Reply, route: String) -> HTTPFields {
        var headers = Self.framed(reply)
        headers[.date] = dates.now()
        count(reply, route: route)
        return headers
    }

    /// The reply's header fields with the `Content-Length` of its body (a 304 has none), before `Date`.
    private static func framed(_ reply: HeightRoutes.Reply) -> HTTPFields {
        var headers = reply.headers
        if let body = reply.body { headers[.contentLength] = String(body.count) }
        return headers
    }

    /// `kbtd_http_requests_total` (as `MetricsMiddleware`) and `kbtd_height_answers_total` (as the route).
    private func count(_ reply: HeightRoutes.Reply, route: String) {
        routes.count(reply)
        routes.metrics.request(route: route, status: reply.status.code)
    }

    /// The whole HTTP/1.1 answer to `GET target`, as the router's path would
    /// write it, or nil when the router must answer. Answers are kept rendered
    /// (all but the `Date` line) by target and `If-None-Match` until the index
    /// or the settings change, so a repeated question costs one lookup.
    func answer(target: String, ifNoneMatch: String?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard logger.logLevel > .debug else { return nil }
        let key = ifNoneMatch.map { target + "\n" + $0 } ?? target
        // Read before computing: an answer computed while the index changes is stored as already stale.
        let generation = routes.heights.generation
        let maxAge = routes.settings.current.cacheMaxAge
        let entry: RenderedAnswers.Entry
        if let hit = rendered.entry(key, generation: generation, maxAge: maxAge) {
            entry = hit
        } else {
            guard let (route, reply) = reply(target: target, ifNoneMatch: ifNoneMatch) else { return nil }
            var head = "HTTP/1.1 \(reply.status.code) \(reply.status.reasonPhrase)\r\n"
            for field in Self.framed(reply) { head += "\(field.name.rawName): \(field.value)\r\n" }
            entry = RenderedAnswers.Entry(generation: generation, maxAge: maxAge, route: route, reply: reply,
                                          head: Array(head.utf8))
            rendered.store(entry, key: key)
        }
        count(entry.reply, route: entry.route)
        fastHTTP1.increment()
        let date = dates.now()
        var buffer = allocator.buffer(capacity: entry.head.count + 40 + (entry.reply.body?.count ?? 0))
        buffer.writeBytes(entry.head)
        buffer.writeString("Date: ")
        buffer.writeString(date)
        buffer.writeString("\r\n\r\n")
        if let body = entry.reply.body { buffer.writeBytes(body) }
        return buffer
    }
}

/// Rendered answers by question, valid for one generation of the index and one `cache_max_age`.
///
/// Bounded in bytes, not only in entries: a question's answer can be large (a model's
/// `/v1/heights` with thousands of estimates is hundreds of KB), and questions are the
/// client's to vary (every `os` string, every `If-None-Match`). Past `limitBytes` the table
/// starts over; an answer larger than a quarter of it is sent but never kept. Entries of an
/// older generation are dropped as soon as an answer of a newer one is stored.
final class RenderedAnswers: Sendable {
    struct Entry: Sendable {
        var generation: UInt64
        var maxAge: Int
        var route: String
        var reply: HeightRoutes.Reply
        /// Status line and header lines up to (without) `Date`.
        var head: [UInt8]

        /// What keeping this entry under `key` costs, bytes: the key, the head, the body and
        /// the table's own bookkeeping (a generous 128 bytes for the entry and its strings' headers).
        func cost(key: String) -> Int {
            key.utf8.count + head.count + (reply.body?.count ?? 0) + route.utf8.count + 128
        }
    }

    private struct Table {
        var entries: [String: Entry] = [:]
        var bytes = 0
        var generation: UInt64 = 0
        var maxAge = -1
    }

    /// Questions kept at most, whatever their size.
    static let capacity = 4096
    let limitBytes: Int
    private let table = Mutex(Table())

    init(limitBytes: Int = 16 << 20) {
        self.limitBytes = limitBytes
    }

    var bytes: Int { table.withLock { $0.bytes } }
    var count: Int { table.withLock { $0.entries.count } }

    func entry(_ key: String, generation: UInt64, maxAge: Int) -> Entry? {
        table.withLock { table in
            guard let entry = table.entries[key], entry.generation == generation, entry.maxAge == maxAge else { return nil }
            return entry
        }
    }

    func store(_ entry: Entry, key: String) {
        let cost = entry.cost(key: key)
        guard cost <= limitBytes / 4 else { return }
        table.withLock { table in
            if entry.generation != table.generation || entry.maxAge != table.maxAge {
                // An answer of an older generation is stale already; a newer one retires every older answer.
                guard entry.generation >= table.generation else { return }
                table = Table(generation: entry.generation, maxAge: entry.maxAge)
            }
            if let old = table.entries[key] { table.bytes -= old.cost(key: key) }
            if table.bytes + cost > limitBytes || (table.entries[key] == nil && table.entries.count >= Self.capacity) {
                table.entries.removeAll(keepingCapacity: false)
                table.bytes = 0
            }
            table.entries[key] = entry
            table.bytes += cost
        }
    }
}

/// Sent down the pipeline after each answer the bytes handler wrote, so
/// `RequestDeadlineHandler` starts the idle deadline as after any answer.
struct CachedAnswerSent {}
