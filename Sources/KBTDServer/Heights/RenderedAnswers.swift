import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Prometheus
import Synchronization

/// One height answer as every path sends it: the reply, framed once (the response framer of the
/// HTTP front). The router's handlers send `fields` and `body` as a `Response`, HTTP/1.1
/// connections' `HTTP1FastAnswerHandler` sends `http1Head` and `body` as NIO's parts, and an h2
/// connection's frame-level path (`HTTP2FrameFront`) sends `h2Head` and `body` as frames; each adds
/// only the `Date` of the second it sends. A class: each send takes a reference, not a copy of every field.
final class RenderedAnswer: Sendable {
    let generation: UInt64
    let maxAge: Int
    /// The route that answered (`/v1/height` or `/v1/heights`): the label of the request counter.
    let route: String
    /// The reply without its body (kept once, in `body`): status, headers and the levels that answered.
    let reply: HeightRoutes.Reply
    /// The reply's header fields in the order they are sent, with the body's `Content-Length` (a 304 has none).
    let fields: HTTPFields
    /// The body once, shared by every send of this answer (nil for a 304).
    let body: ByteBuffer?
    /// The status and `fields` as NIO's HTTP/1.1 encoder takes them, without `Date`.
    let http1Head: HTTPResponseHead
    /// `:status` and `fields` as an h2 HEADERS frame carries them, without `Date`: lower-case names and
    /// the indexing NIOHTTPTypesHTTP2 gives the same fields on a stream, so both h2 paths send one header list.
    let h2Head: HPACKHeaders
    /// Its levels in `kbtd_height_answers_total` and its `kbtd_http_requests_total` series, looked up once
    /// here rather than on every send.
    let levels: ServerMetrics.AnswerLevels
    let requests: Counter

    /// Frames `reply` and resolves its counters in `metrics`.
    init(generation: UInt64, maxAge: Int, route: String, reply: HeightRoutes.Reply, metrics: ServerMetrics) {
        levels = metrics.levels(basis: reply.basis, bases: reply.bases)
        requests = metrics.requests(route: route, status: reply.status.code)
        self.generation = generation
        self.maxAge = maxAge
        self.route = route
        var fields = reply.headers
        if let body = reply.body { fields[.contentLength] = String(body.count) }
        self.fields = fields
        body = reply.body.map { ByteBuffer(bytes: $0) }
        var bodiless = reply
        bodiless.body = nil
        self.reply = bodiless
        http1Head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: reply.status.code, reasonPhrase: reply.status.reasonPhrase),
                                     headers: HTTPHeaders(fields))
        h2Head = HPACKHeaders(status: reply.status, fields: fields)
    }

    /// `http1Head` as sent, with `Date`.
    func http1Head(date: String) -> HTTPResponseHead {
        var head = http1Head
        head.headers.add(name: "Date", value: date)
        return head
    }

    /// What keeping this answer under `key` costs, bytes: the key, the body, the framed fields, their
    /// HTTP/1.1 and h2 heads and the table's own bookkeeping (a generous 128 bytes).
    func cost(key: String) -> Int {
        let fieldBytes = fields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
        return key.utf8.count + 3 * fieldBytes + (body?.readableBytes ?? 0) + route.utf8.count + 128
    }
}

extension HPACKHeaders {
    /// A response head as an h2 HEADERS frame carries it: `:status`, then `fields` with lower-case
    /// names and the indexing NIOHTTPTypesHTTP2 gives them on a stream, so kbtd's own h2 answers
    /// (`RenderedAnswer.h2Head`, `JSONAnswer.h2Head`) send what a stream channel would.
    init(status: HTTPResponse.Status, fields: HTTPFields) {
        self.init([(":status", String(status.code))])
        for field in fields {
            add(name: field.name.canonicalName, value: field.value, indexing: field.indexingStrategy.hpack)
        }
    }
}

extension HTTPField.DynamicTableIndexingStrategy {
    /// The HPACK indexing NIOHTTPTypesHTTP2 encodes a field of this strategy with.
    var hpack: HPACKIndexing {
        switch self {
        case .avoid: .nonIndexable
        case .disallow: .neverIndexed
        default: .indexable
        }
    }
}

/// The one rendered-answer cache: whole height answers by question (route, query and
/// `If-None-Match`), valid for one generation of the index and one `cache_max_age`. The
/// router's height routes, the HTTP/1.1 fast path and h2 streams all take their answers here
/// (`HeightRoutes.rendered`), so a question asked on any path is computed and framed once.
///
/// Bounded in bytes, not only in entries: a question's answer can be large (a model's
/// `/v1/heights` with thousands of estimates is hundreds of KB), and questions are the
/// client's to vary (every `os` string, every `If-None-Match`). Past `limitBytes` the table
/// starts over; an answer larger than a quarter of it is sent but never kept. Entries of an
/// older generation are dropped as soon as an answer of a newer one is stored.
final class RenderedAnswers: Sendable {
    typealias Entry = RenderedAnswer

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
