import Foundation
import HTTPTypes
import Hummingbird
import KBTDCore
import KBTDReport
import KBTDStore

/// `GET /dashboard`: the charts page (`DashboardPage`), drawn from the
/// database (read-only, like `/v1/stats`), the live height index's estimates
/// and the answers-by-basis counters. Behind `AdminAccessMiddleware`, as `/v1/stats`.
struct DashboardRoute: Sendable {
    let operations: OperationsRoutes
    let heights: LiveHeights
    let metrics: ServerMetrics

    func page(_ request: Request, context: KBTDRequestContext) async throws(JSONRefusal) -> Response {
        let parameters = request.uri.queryParameters
        let filter: DashboardFilter
        do {
            filter = try DashboardFilter.parse { parameters[Substring($0)].map(String.init) }
        } catch {
            throw JSONRefusal(error, "invalid query")
        }
        let path = operations.databasePath, heights = self.heights, answers = metrics.answersByBasis
        let openReader = operations.readerFactory
        do {
            // SQLite and rendering block: run on the store's reader threads, not the cooperative pool.
            let html = try await withTaskExecutorPreference(StoreThreads.readers) {
                let now = Int64(Date().timeIntervalSince1970)
                let minSamples = heights.minSamples
                let (data, hourly) = try await Self.load(try await openReader(), filter: filter, minSamples: minSamples, now: now)
                return DashboardPage.render(DashboardInput(
                    data: data, hourly: hourly, answersByBasis: answers, filter: filter, minSamples: minSamples,
                    generatedAt: now, live: true, estimate: heights.estimate,
                    changes: { heights.changes(model: $0) }, screens: { heights.screens(model: $0) }))
            }
            return Response(status: .ok, headers: Self.headers, body: .init(byteBuffer: ByteBuffer(string: html)))
        } catch {
            context.logger.error("dashboard: cannot read \(loggableDatabase(path)): \(error)")
            throw JSONRefusal(status: .serviceUnavailable, error: "unavailable", detail: "the database cannot be read now",
                              retryAfter: operations.settings.current.limits.retryAfterSeconds)
        }
    }

    static let headers: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: DashboardPage.contentSecurityPolicy,
        .cacheControl: "no-store",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    /// What the page draws for `filter` (aggregated and cut to its limits in the database, so
    /// bounded whatever the number of keys) and the last 7 days of hourly ingest, read-only.
    static func load(_ store: any TelemetryReader, filter: DashboardFilter, minSamples: Int64,
                     now: Int64) async throws -> (DashboardData, [HourlyIngest]) {
        (try await store.dashboardData(filter, minSamples: minSamples),
         try await store.hourlyIngest(since: now / 3600 * 3600 - 167 * 3600))
    }
}
